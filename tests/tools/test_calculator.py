"""The calculator tool, invoked through the StructuredTool interface as the agent invokes it."""

from __future__ import annotations

import tracemalloc

import pytest

from aiforge.tools import calculator


def calculate(expression: str) -> str:
    return calculator.invoke({"expression": expression})


def test_calculator_adds() -> None:
    assert calculate("2+2") == "4"


def test_calculator_follows_operator_precedence() -> None:
    assert calculate("2 + 3 * 4 ** 2") == "50"
    assert calculate("(2 + 3) * 4") == "20"
    assert calculate("-2 ** 2") == "-4"


def test_calculator_supports_floor_division_and_modulo() -> None:
    assert calculate("17 // 5") == "3"
    assert calculate("17 % 5") == "2"


def test_calculator_keeps_integers_exact() -> None:
    assert calculate("2 ** 100") == "1267650600228229401496703205376"


def test_calculator_hides_floating_point_noise() -> None:
    assert calculate("249.99 * 0.85") == "212.4915"
    assert calculate("0.1 + 0.2") == "0.3"


def test_calculator_shows_whole_float_results_without_decimals() -> None:
    assert calculate("10 / 4") == "2.5"
    assert calculate("10 / 2") == "5"


def test_calculator_keeps_tiny_results() -> None:
    assert calculate("1 / 10 ** 12") == "1e-12"


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("sqrt(16)", "4"),
        ("log(100, 10)", "2"),
        ("log10(1000)", "3"),
        ("log2(8)", "3"),
        ("exp(0)", "1"),
        ("sin(pi / 2)", "1"),
        ("cos(0)", "1"),
        ("degrees(pi)", "180"),
        ("radians(180) / pi", "1"),
        ("abs(-5)", "5"),
        ("round(3.14159, 2)", "3.14"),
        ("floor(2.7)", "2"),
        ("ceil(2.1)", "3"),
        ("factorial(5)", "120"),
        ("min(4, 2, 8)", "2"),
        ("max(4, 2, 8)", "8"),
        ("pow(2, 10)", "1024"),
        ("hypot(3, 4)", "5"),
        ("tau / 2 - pi", "0"),
        ("e", "2.71828182846"),
    ],
)
def test_calculator_evaluates_math_functions_and_constants(expression: str, expected: str) -> None:
    assert calculate(expression) == expected


@pytest.mark.parametrize("expression", ["1 / 0", "1 // 0", "1 % 0", "1.5 / 0"])
def test_calculator_reports_division_by_zero(expression: str) -> None:
    assert calculate(expression) == "Error: division by zero"


def test_calculator_reports_math_domain_errors() -> None:
    assert calculate("sqrt(-1)") == "Error: math domain error"


def test_calculator_names_a_refused_name() -> None:
    assert calculate("__import__('os')") == "Error: names are not allowed: __import__"


def test_calculator_points_from_caret_to_the_power_operator() -> None:
    assert "use ** for powers" in calculate("2 ^ 10")


def test_calculator_reports_syntax_errors() -> None:
    assert calculate("2 +").startswith("Error: invalid expression")


# Work a refusal may cost: parsing and checking a 1,000-character expression stays under 100 kB; building any of
# the refused numbers would not (factorial(100000) alone allocates over 1 MB, 9**9**9 about 150 MB).
REFUSAL_PEAK_BYTES = 256 * 1024


@pytest.mark.parametrize(
    ("expression", "refusal"),
    [
        pytest.param("__import__('os')", "names are not allowed: __import__", id="import"),
        pytest.param("().__class__", "attributes are not allowed", id="attribute"),
        pytest.param("().__class__.__bases__[0].__subclasses__()", "attributes are not allowed", id="subclasses"),
        pytest.param("9**9**9", "result too large (about 369,693,100 digits", id="tower-of-nines"),
        pytest.param("10**10**10", "result too large (about 10,000,000,000 digits", id="tower-of-tens"),
        pytest.param("'a'*10", "strings are not allowed", id="string"),
        pytest.param("1+" * 5_000 + "1", "expression too long (10,001 characters", id="10kB-expression"),
        pytest.param("[1,2][0]", "subscripts are not allowed", id="subscript"),
        pytest.param("lambda: 1", "lambdas are not allowed", id="lambda"),
        pytest.param("[x for x in (1, 2)]", "comprehensions are not allowed", id="comprehension"),
        pytest.param("factorial(100000)", "factorial() argument too large", id="huge-factorial"),
        pytest.param("pow(10, 10**10)", "result too large (about 10,000,000,000 digits", id="huge-pow"),
        pytest.param("round(10**300, -10**9)", "round() digits must be between", id="huge-round-digits"),
        pytest.param("-" * 150 + "1", "expression nested too deeply", id="deep-nesting"),
        pytest.param("(x := 1)", "names are not allowed: x", id="assignment"),
        pytest.param("open('/etc/passwd')", "names are not allowed: open", id="open"),
    ],
)
def test_calculator_refuses_hostile_input_before_computing_it(expression: str, refusal: str) -> None:
    # "Quickly" without a stopwatch: the guard named for the input answers (not a later check after the work),
    # and the refusal allocates too little to have built the huge number it refuses.
    tracemalloc.start()
    try:
        result = calculate(expression)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.startswith(f"Error: {refusal}"), result
    assert peak < REFUSAL_PEAK_BYTES
