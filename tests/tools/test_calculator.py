"""The calculator tool, invoked through the StructuredTool interface as the agent invokes it."""

from __future__ import annotations

import time

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


@pytest.mark.parametrize(
    "expression",
    [
        pytest.param("__import__('os')", id="import"),
        pytest.param("().__class__", id="attribute"),
        pytest.param("().__class__.__bases__[0].__subclasses__()", id="subclasses"),
        pytest.param("9**9**9", id="tower-of-nines"),
        pytest.param("10**10**10", id="tower-of-tens"),
        pytest.param("'a'*10", id="string"),
        pytest.param("1+" * 5_000 + "1", id="10kB-expression"),
        pytest.param("[1,2][0]", id="subscript"),
        pytest.param("lambda: 1", id="lambda"),
        pytest.param("[x for x in (1, 2)]", id="comprehension"),
        pytest.param("factorial(100000)", id="huge-factorial"),
        pytest.param("pow(10, 10**10)", id="huge-pow"),
        pytest.param("round(10**300, -10**9)", id="huge-round-digits"),
        pytest.param("-" * 150 + "1", id="deep-nesting"),
        pytest.param("(x := 1)", id="assignment"),
        pytest.param("open('/etc/passwd')", id="open"),
    ],
)
def test_calculator_refuses_hostile_input_quickly(expression: str) -> None:
    started = time.perf_counter()
    result = calculate(expression)
    elapsed = time.perf_counter() - started
    assert result.startswith("Error:")
    assert elapsed < 0.1
