"""Built-in tools for the chat agent: calculator, unit converter, clock and Wikipedia research.

Every tool returns text and never raises: a failure comes back as a message starting with "Error:", because the
agent feeds tool output to the model, which can then correct its call.
"""

from __future__ import annotations

import ast
import math
import operator
import os
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from langchain_core.tools import StructuredTool

# --- calculator --------------------------------------------------------------------------------------------------

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


def _checked_result(value: Any) -> Any:
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
            raise _CalculatorError(
                f"result too large (about {digits:,.0f} digits; the limit is {MAX_RESULT_DIGITS:,})"
            )
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


# --- unit converter ----------------------------------------------------------------------------------------------


def _plural(*words: str) -> tuple[str, ...]:
    return tuple(form for word in words for form in (word, word + "s"))


# category -> canonical symbol -> (size in the category's base unit, aliases). Temperature is affine and handled
# separately; its "size" is unused.
_UNITS: dict[str, dict[str, tuple[float, tuple[str, ...]]]] = {
    "length": {
        "m": (1.0, _plural("meter", "metre")),
        "km": (1e3, _plural("kilometer", "kilometre")),
        "cm": (1e-2, _plural("centimeter", "centimetre")),
        "mm": (1e-3, _plural("millimeter", "millimetre")),
        "µm": (1e-6, ("um", *_plural("micrometer", "micrometre", "micron"))),
        "nm": (1e-9, _plural("nanometer", "nanometre")),
        "mi": (1609.344, _plural("mile")),
        "yd": (0.9144, _plural("yard")),
        "ft": (0.3048, ("foot", "feet")),
        "in": (0.0254, ("inch", "inches")),
        "nmi": (1852.0, _plural("nautical mile")),
    },
    "mass": {
        "kg": (1.0, ("kgs", *_plural("kilogram", "kilo"))),
        "g": (1e-3, _plural("gram")),
        "mg": (1e-6, _plural("milligram")),
        "µg": (1e-9, ("ug", "mcg", *_plural("microgram"))),
        "t": (1e3, ("metric ton", "metric tons", *_plural("tonne"))),
        "lb": (0.45359237, ("lbs", *_plural("pound"))),
        "oz": (0.028349523125, _plural("ounce")),
        "st": (6.35029318, ("stone", "stones")),
    },
    "volume": {
        "L": (1.0, _plural("liter", "litre")),
        "mL": (1e-3, _plural("milliliter", "millilitre")),
        "cL": (1e-2, _plural("centiliter", "centilitre")),
        "dL": (1e-1, _plural("deciliter", "decilitre")),
        "m³": (1e3, ("m3", *_plural("cubic meter", "cubic metre"))),
        "cm³": (1e-3, ("cm3", "cc", *_plural("cubic centimeter", "cubic centimetre"))),
        "gal": (3.785411784, ("us gal", *_plural("gallon", "us gallon"))),
        "imp gal": (4.54609, _plural("imperial gallon", "uk gallon")),
        "qt": (0.946352946, _plural("quart")),
        "pt": (0.473176473, _plural("pint")),
        "cup": (0.2365882365, ("cups",)),
        "fl oz": (0.0295735295625, ("floz", *_plural("fluid ounce"))),
        "tbsp": (0.01478676478125, _plural("tablespoon")),
        "tsp": (0.00492892159375, _plural("teaspoon")),
    },
    "temperature": {
        "°C": (1.0, ("celsius", "centigrade")),
        "°F": (1.0, ("fahrenheit",)),
        "K": (1.0, _plural("kelvin")),
    },
    "speed": {
        "m/s": (1.0, ("mps", "meters per second", "metres per second")),
        "km/h": (1 / 3.6, ("kph", "kmh", "kmph", "kilometers per hour", "kilometres per hour")),
        "mph": (0.44704, ("mi/h", "miles per hour")),
        "kn": (1852 / 3600, ("kt", *_plural("knot"))),
        "ft/s": (0.3048, ("fps", "feet per second")),
    },
    "time": {
        "ns": (1e-9, _plural("nanosecond")),
        "µs": (1e-6, ("us", *_plural("microsecond"))),
        "ms": (1e-3, _plural("millisecond")),
        "s": (1.0, ("sec", "secs", *_plural("second"))),
        "min": (60.0, ("mins", *_plural("minute"))),
        "h": (3600.0, ("hr", "hrs", *_plural("hour"))),
        "d": (86400.0, _plural("day")),
        "wk": (604800.0, ("wks", *_plural("week"))),
        "month": (2629800.0, ("months", "mo")),  # average Gregorian month: 1/12 of 365.25 days
        "yr": (31557600.0, ("yrs", *_plural("year"))),  # Julian year, 365.25 days
    },
    "data size": {
        "B": (1.0, _plural("byte")),
        "kB": (1e3, _plural("kilobyte")),
        "MB": (1e6, _plural("megabyte")),
        "GB": (1e9, _plural("gigabyte")),
        "TB": (1e12, _plural("terabyte")),
        "PB": (1e15, _plural("petabyte")),
        "KiB": (1024.0, _plural("kibibyte")),
        "MiB": (1024.0**2, _plural("mebibyte")),
        "GiB": (1024.0**3, _plural("gibibyte")),
        "TiB": (1024.0**4, _plural("tebibyte")),
        "PiB": (1024.0**5, _plural("pebibyte")),
        "bit": (0.125, _plural("bit")),
        "kbit": (125.0, ("kbits", *_plural("kilobit"))),
        "Mbit": (125e3, ("mbits", *_plural("megabit"))),
        "Gbit": (125e6, ("gbits", *_plural("gigabit"))),
    },
}


def _normalize_unit(unit: str) -> str:
    """Lower case, single spaces, micro sign for Greek mu, no degree sign or word: "Degrees F" -> "f"."""
    text = " ".join(unit.lower().split()).replace("μ", "µ").replace("°", "")
    return re.sub(r"^(degrees?|deg)\s*", "", text)


# normalized symbol or alias -> (category, canonical symbol)
_UNIT_LOOKUP: dict[str, tuple[str, str]] = {
    _normalize_unit(name): (category, symbol)
    for category, units in _UNITS.items()
    for symbol, (_, aliases) in units.items()
    for name in (symbol, *aliases)
}


def _lookup_unit(unit: str) -> tuple[str, str]:
    found = _UNIT_LOOKUP.get(_normalize_unit(unit))
    if found is None:
        supported = "; ".join(f"{category}: {', '.join(units)}" for category, units in _UNITS.items())
        raise ValueError(f"unknown unit '{unit}'. Supported units ({supported})")
    return found


def _to_kelvin(value: float, symbol: str) -> float:
    if symbol == "°C":
        return value + 273.15
    if symbol == "°F":
        return (value - 32) * 5 / 9 + 273.15
    return value


def _from_kelvin(kelvin: float, symbol: str) -> float:
    if symbol == "°C":
        return kelvin - 273.15
    if symbol == "°F":
        return (kelvin - 273.15) * 9 / 5 + 32
    return kelvin


def _format_quantity(value: float) -> str:
    """Six significant digits, without an exponent for everyday magnitudes."""
    if value == 0 or not math.isfinite(value):
        return f"{value + 0.0:g}"
    magnitude = math.floor(math.log10(abs(value)))
    if not -5 <= magnitude < 15:
        return f"{value:.6g}"
    text = f"{value:.{max(0, 5 - magnitude)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _convert_units(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a quantity between units of length, mass, volume, temperature, speed, time or data size.

    Units may be symbols or names in any case, e.g. km, miles, lb, kg, °C, fahrenheit, kelvin, mph, km/h, L,
    gallons (US), cups, hours, days, MB (1000**2 bytes), MiB (1024**2 bytes), Mbit.
    Returns a line such as "10 km = 6.21371 mi".

    Args:
        value: The number to convert, e.g. 10.
        from_unit: The unit of the value, e.g. "km".
        to_unit: The unit to convert to, e.g. "mi".
    """
    try:
        if not math.isfinite(value):
            raise ValueError("the value must be a finite number")
        from_category, from_symbol = _lookup_unit(from_unit)
        to_category, to_symbol = _lookup_unit(to_unit)
        if from_category != to_category:
            raise ValueError(
                f"cannot convert {from_symbol} ({from_category}) to {to_symbol} ({to_category})"
            )
        if from_category == "temperature":
            kelvin = _to_kelvin(value, from_symbol)
            if kelvin < 0:
                raise ValueError(f"{_format_quantity(value)} {from_symbol} is below absolute zero")
            result = _from_kelvin(kelvin, to_symbol)
        else:
            units = _UNITS[from_category]
            result = value * units[from_symbol][0] / units[to_symbol][0]
    except ValueError as exc:
        return f"Error: {exc}"
    return f"{_format_quantity(value)} {from_symbol} = {_format_quantity(result)} {to_symbol}"


# --- current time ------------------------------------------------------------------------------------------------


def _find_zone(name: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        pass
    # Models often write "utc" or "europe/paris"; the zone database is case-sensitive on most systems.
    matches = [key for key in available_timezones() if key.lower() == name.lower()]
    return ZoneInfo(matches[0]) if matches else None


def _current_time(timezone: str = "UTC") -> str:
    """Return the current date and time in a time zone as ISO 8601 with the UTC offset.

    Use it whenever the answer depends on today's date or the time of day, e.g. "2025-03-14T09:26:53+01:00".

    Args:
        timezone: An IANA time zone name such as "UTC", "Europe/Paris" or "America/New_York".
    """
    zone = _find_zone(timezone.strip())
    if zone is None:
        return f"Error: unknown time zone '{timezone}' (use an IANA name such as 'Europe/Paris')"
    return datetime.now(zone).isoformat(timespec="seconds")


# --- research ----------------------------------------------------------------------------------------------------

DEFAULT_RESEARCH_BASE_URL = "https://en.wikipedia.org/api/rest_v1"
RESEARCH_BASE_URL_ENV = "AIFORGE_RESEARCH_BASE_URL"
DEFAULT_RESEARCH_TIMEOUT = 10.0
MAX_SUMMARY_CHARS = 1_000
# Wikimedia rejects requests without a descriptive User-Agent that says who is calling and how to reach them.
RESEARCH_USER_AGENT = "aiforge-kit research tool (https://pypi.org/project/aiforge-kit/)"


def _trim_text(text: str, limit: int) -> str:
    """Cut at the last sentence end (or else word break) before the limit."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    sentence_end = head.rfind(". ")
    if sentence_end > limit // 2:
        return head[: sentence_end + 1]
    return head.rsplit(" ", 1)[0] + " …"


def _format_summary(page: dict[str, Any], topic: str) -> str:
    title = page.get("title") or topic
    extract = " ".join(str(page.get("extract") or "").split())
    if not extract:
        return f"Wikipedia has an article '{title}' but no summary for it."
    lines = [title, _trim_text(extract, MAX_SUMMARY_CHARS)]
    if page.get("type") == "disambiguation":
        lines.append("(This is a disambiguation page: ask again with a more specific topic.)")
    url = page.get("content_urls", {}).get("desktop", {}).get("page")
    if url:
        lines.append(f"Source: {url}")
    return "\n".join(lines)


def _look_up_summary(topic: str, base_url: str, timeout: float) -> str:
    import httpx

    topic = topic.strip()
    if not topic:
        return "Error: the topic is empty"
    url = f"{base_url.rstrip('/')}/page/summary/{quote(topic.replace(' ', '_'), safe='')}"
    try:
        response = httpx.get(
            url,
            headers={"User-Agent": f"{RESEARCH_USER_AGENT} httpx/{httpx.__version__}", "Accept": "application/json"},
            timeout=timeout,
            follow_redirects=True,
        )
    except httpx.TimeoutException:
        return f"Error: Wikipedia did not answer within {timeout:g} s; the computer may be offline."
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        reason = str(exc) or type(exc).__name__
        return f"Error: could not reach Wikipedia at {base_url} ({reason}); the computer may be offline."
    if response.status_code == 404:
        return f"No Wikipedia article found for '{topic}'."
    if response.status_code != 200:
        return f"Error: Wikipedia answered HTTP {response.status_code} for '{topic}'."
    try:
        page = response.json()
    except ValueError:
        return "Error: Wikipedia sent an answer that is not JSON."
    if not isinstance(page, dict):
        return "Error: Wikipedia sent an answer in an unexpected shape."
    return _format_summary(page, topic)


def make_research_tool(base_url: str | None = None, timeout: float = DEFAULT_RESEARCH_TIMEOUT) -> StructuredTool:
    """Build the `research` tool for a Wikipedia REST API base URL.

    With `base_url=None` the URL is read at each call from the AIFORGE_RESEARCH_BASE_URL environment variable,
    falling back to English Wikipedia.
    """

    def research(topic: str) -> str:
        """Look up a short factual summary of a topic on English Wikipedia.

        Returns the article title, its summary (about 1,000 characters) and the source link. Use it for facts
        about people, places, organisations, events and concepts; it needs internet access.

        Args:
            topic: The topic or article title, e.g. "Alan Turing" or "Python (programming language)".
        """
        url = base_url or os.environ.get(RESEARCH_BASE_URL_ENV) or DEFAULT_RESEARCH_BASE_URL
        return _look_up_summary(topic, url, timeout)

    return StructuredTool.from_function(research, name="research", parse_docstring=True)


# --- the tools ---------------------------------------------------------------------------------------------------

calculator = StructuredTool.from_function(_calculate, name="calculator", parse_docstring=True)
unit_converter = StructuredTool.from_function(_convert_units, name="unit_converter", parse_docstring=True)
current_time = StructuredTool.from_function(_current_time, name="current_time", parse_docstring=True)
research = make_research_tool()

BUILTIN_TOOLS: list[StructuredTool] = [calculator, unit_converter, current_time, research]


def builtin_tools() -> list[StructuredTool]:
    """Return a new list of the built-in tools, safe to extend or reorder."""
    return list(BUILTIN_TOOLS)


__all__ = [
    "BUILTIN_TOOLS",
    "builtin_tools",
    "calculator",
    "current_time",
    "make_research_tool",
    "research",
    "unit_converter",
]
