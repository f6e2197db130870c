"""The ``calculator`` tool: arithmetic on a whitelisted Python expression syntax, never ``eval``.

The expression is parsed with ``ast`` and checked against a whitelist before a single operation runs;
sizes of results, powers, factorials and nesting are bounded so hostile input answers quickly.
Like every built-in tool it returns text and never raises: a failure comes back as "Error: ...".
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from langchain_core.tools import StructuredTool

MAX_EXPRESSION_CHARS = 1_000
MAX_EXPRESSION_NODES = 500
MAX_NESTING_DEPTH = 100
# Below CPython's default int-to-str limit (4,300 digits), so every integer result can be printed.
MAX_RESULT_DIGITS = 4_000
MAX_FACTORIAL_ARGUMENT = 1_000
MAX_ROUND_DIGITS = 100

_LOG10_2 = math.log10(2)


class _CalculatorError(Exception):
    """An expression the calculator refuses or cannot evaluate; the message is shown to the model."""


def _checked_result(value: float | complex) -> float:
    if isinstance(value, complex):
        raise _CalculatorError("the result is not a real number")
    if isinstance(value, int) and value.bit_length() * _LOG10_2 > MAX_RESULT_DIGITS:
        raise _CalculatorError(f"result too large (more than {MAX_RESULT_DIGITS:,} digits)")
    return value


def _power(base: float, exponent: float) -> float:
    # Estimate the digits of an integer power before computing it: 9**9**9 would otherwise run for minutes.
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        digits = exponent * math.log10(abs(base))
        if digits > MAX_RESULT_DIGITS:
            raise _CalculatorError(f"result too large (about {digits:,.0f} digits; the limit is {MAX_RESULT_DIGITS:,})")
    return _checked_result(base**exponent)


def _factorial(n: float) -> int:
    if isinstance(n, float) and n.is_integer():
        n = int(n)
    if not isinstance(n, int) or n < 0:
        raise _CalculatorError("factorial() needs a non-negative whole number")
    if n > MAX_FACTORIAL_ARGUMENT:
        raise _CalculatorError(f"factorial() argument too large (the limit is {MAX_FACTORIAL_ARGUMENT:,})")
    return math.factorial(n)


def _round(x: float, ndigits: int | None = None) -> float:
    # int.__round__ computes 10**-ndigits, so an unbounded ndigits is as costly as an unbounded power.
    if isinstance(ndigits, int) and abs(ndigits) > MAX_ROUND_DIGITS:
        raise _CalculatorError(f"round() digits must be between -{MAX_ROUND_DIGITS} and {MAX_ROUND_DIGITS}")
    return round(x, ndigits)


# name -> (function, minimum arguments, maximum arguments or None for any number)
_FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int | None]] = {
    "sqrt": (math.sqrt, 1, 1),
    "sin": (math.sin, 1, 1),
    "cos": (math.cos, 1, 1),
    "tan": (math.tan, 1, 1),
    "asin": (math.asin, 1, 1),
    "acos": (math.acos, 1, 1),
    "atan": (math.atan, 1, 1),
    "log": (math.log, 1, 2),
    "log10": (math.log10, 1, 1),
    "log2": (math.log2, 1, 1),
    "exp": (math.exp, 1, 1),
    "abs": (abs, 1, 1),
    "round": (_round, 1, 2),
    "floor": (math.floor, 1, 1),
    "ceil": (math.ceil, 1, 1),
    "factorial": (_factorial, 1, 1),
    "min": (lambda *args: min(args), 1, None),
    "max": (lambda *args: max(args), 1, None),
    "pow": (_power, 2, 2),
    "hypot": (math.hypot, 1, None),
    "degrees": (math.degrees, 1, 1),
    "radians": (math.radians, 1, 1),
}
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf}

_BINARY_OPERATORS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: _power,
}
_UNARY_OPERATORS: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_REFUSED_SYNTAX: dict[type[ast.AST], str] = {
    ast.Attribute: "attributes are not allowed",
    ast.Subscript: "subscripts are not allowed",
    ast.Lambda: "lambdas are not allowed",
    ast.ListComp: "comprehensions are not allowed",
    ast.SetComp: "comprehensions are not allowed",
    ast.DictComp: "comprehensions are not allowed",
    ast.GeneratorExp: "comprehensions are not allowed",
    ast.BitXor: "^ is not a power operator here; use ** for powers",
}
_ALLOWED_NODES = (
    ast.Expression, ast.BinOp, ast.UnaryOp, ast.Call, ast.Name, ast.Load, ast.Constant,
    *_BINARY_OPERATORS, *_UNARY_OPERATORS,
)  # fmt: skip


def _validate(tree: ast.Expression) -> None:
    """Refuse anything outside the whitelist before a single operation runs.

    Three passes so the message names the most telling problem: `().__class__()` is refused for its attribute,
    `__import__('os')` for its name.
    """
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_EXPRESSION_NODES:
        raise _CalculatorError(f"expression too complex (more than {MAX_EXPRESSION_NODES} parts)")
    for node in nodes:
        if type(node) in _REFUSED_SYNTAX:
            raise _CalculatorError(_REFUSED_SYNTAX[type(node)])
    for node in nodes:
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                raise _CalculatorError("only the listed functions can be called")
            if node.func.id not in _FUNCTIONS:
                raise _CalculatorError(f"names are not allowed: {node.func.id}")
            if node.keywords:
                raise _CalculatorError("keyword arguments are not allowed")
        elif isinstance(node, ast.Name) and node.id not in _CONSTANTS and node.id not in _FUNCTIONS:
            raise _CalculatorError(f"names are not allowed: {node.id}")
    for node in nodes:
        if not isinstance(node, _ALLOWED_NODES):
            raise _CalculatorError(f"unsupported syntax: {type(node).__name__}")
        if isinstance(node, ast.Constant) and type(node.value) not in (int, float):
            if isinstance(node.value, str | bytes):
                raise _CalculatorError("strings are not allowed")
            raise _CalculatorError(f"unsupported value: {node.value!r}")


def _evaluate(node: ast.AST, depth: int = 0) -> Any:
    if depth > MAX_NESTING_DEPTH:
        raise _CalculatorError(f"expression nested too deeply (more than {MAX_NESTING_DEPTH} levels)")
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, depth + 1)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in _CONSTANTS:
            raise _CalculatorError(f"{node.id} is a function; call it, e.g. {node.id}(2)")
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp):
        return _UNARY_OPERATORS[type(node.op)](_evaluate(node.operand, depth + 1))
    if isinstance(node, ast.BinOp):
        left = _evaluate(node.left, depth + 1)
        right = _evaluate(node.right, depth + 1)
        return _checked_result(_BINARY_OPERATORS[type(node.op)](left, right))
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)  # guaranteed by _validate
        name = node.func.id
        function, min_args, max_args = _FUNCTIONS[name]
        if len(node.args) < min_args or (max_args is not None and len(node.args) > max_args):
            if max_args is None:
                expected = f"at least {min_args}"
            else:
                expected = f"{min_args}" if min_args == max_args else f"{min_args} or {max_args}"
            raise _CalculatorError(f"{name}() takes {expected} argument(s), got {len(node.args)}")
        return _checked_result(function(*(_evaluate(arg, depth + 1) for arg in node.args)))
    raise _CalculatorError(f"unsupported syntax: {type(node).__name__}")


def _format_number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    # 12 significant digits hide binary noise: 249.99 * 0.85 is 212.49149999999997 in floating point.
    return f"{value + 0.0:.12g}"  # + 0.0 turns -0.0 into 0.0


def _calculate(expression: str) -> str:
    """Evaluate an arithmetic expression and return the result as text.

    Supports numbers, + - * / // % ** (power), parentheses, the constants pi, e, tau and inf, and the functions
    sqrt, sin, cos, tan, asin, acos, atan (radians), log(x) (natural) or log(x, base), log10, log2, exp, abs,
    round(x) or round(x, digits), floor, ceil, factorial, min, max, pow, hypot, degrees and radians.
    Use it for any calculation instead of doing arithmetic yourself, e.g. "249.99 * 0.85" or "sqrt(2) * 10".

    Args:
        expression: The expression to evaluate, e.g. "(3 + 4) * 2" or "log(100, 10)".
    """
    if len(expression) > MAX_EXPRESSION_CHARS:
        return f"Error: expression too long ({len(expression):,} characters; the limit is {MAX_EXPRESSION_CHARS:,})"
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        return f"Error: invalid expression ({exc.msg})"
    except (ValueError, RecursionError, MemoryError):
        return "Error: invalid expression"
    try:
        _validate(tree)
        return _format_number(_evaluate(tree))
    except _CalculatorError as exc:
        return f"Error: {exc}"
    except ZeroDivisionError:
        return "Error: division by zero"
    except OverflowError as exc:
        return f"Error: result too large ({exc})"
    except (ArithmeticError, ValueError, TypeError) as exc:
        return f"Error: {exc}"


calculator = StructuredTool.from_function(_calculate, name="calculator", parse_docstring=True)
