"""The built-in chat tools, invoked through the StructuredTool interface as the agent invokes them."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar
from urllib.parse import unquote

import pytest

from aiforge.modules.chat import builtin_tools
from aiforge.modules.chat.builtin_tools import (
    BUILTIN_TOOLS,
    calculator,
    current_time,
    make_research_tool,
    research,
    unit_converter,
)


def calculate(expression: str) -> str:
    return calculator.invoke({"expression": expression})


def convert(value: float, from_unit: str, to_unit: str) -> str:
    return unit_converter.invoke({"value": value, "from_unit": from_unit, "to_unit": to_unit})


# --- tool surface ------------------------------------------------------------------------------------------------


def test_builtin_tools_are_named_for_the_model() -> None:
    assert [tool.name for tool in BUILTIN_TOOLS] == ["calculator", "unit_converter", "current_time", "research"]


def test_every_builtin_tool_describes_itself_and_its_arguments() -> None:
    for tool in BUILTIN_TOOLS:
        assert len(tool.description) > 40, tool.name
        for name, schema in tool.args.items():
            assert schema.get("description"), f"{tool.name}.{name}"


def test_builtin_tools_returns_a_fresh_list_each_call() -> None:
    tools = builtin_tools.builtin_tools()
    tools.clear()
    assert builtin_tools.builtin_tools() == BUILTIN_TOOLS
    assert builtin_tools.builtin_tools() is not builtin_tools.builtin_tools()


# --- calculator --------------------------------------------------------------------------------------------------


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


# --- unit converter ----------------------------------------------------------------------------------------------


def test_unit_converter_converts_length() -> None:
    assert convert(10, "km", "mi") == "10 km = 6.21371 mi"


def test_unit_converter_accepts_unit_names_in_any_case() -> None:
    assert convert(10, "Kilometers", "MILES") == "10 km = 6.21371 mi"


def test_unit_converter_converts_mass() -> None:
    assert convert(5, "lbs", "kg") == "5 lb = 2.26796 kg"


def test_unit_converter_converts_volume() -> None:
    assert convert(1, "gallon", "liters") == "1 gal = 3.78541 L"


@pytest.mark.parametrize(
    ("value", "from_unit", "to_unit", "expected"),
    [
        (100, "°C", "°F", "100 °C = 212 °F"),
        (0, "celsius", "kelvin", "0 °C = 273.15 K"),
        (-40, "F", "C", "-40 °F = -40 °C"),
        (98.6, "degrees Fahrenheit", "Celsius", "98.6 °F = 37 °C"),
        (300, "K", "°C", "300 K = 26.85 °C"),
    ],
)
def test_unit_converter_converts_temperature(value: float, from_unit: str, to_unit: str, expected: str) -> None:
    assert convert(value, from_unit, to_unit) == expected


def test_unit_converter_refuses_temperatures_below_absolute_zero() -> None:
    assert convert(-500, "°C", "K") == "Error: -500 °C is below absolute zero"


def test_unit_converter_converts_speed() -> None:
    assert convert(100, "km/h", "mph") == "100 km/h = 62.1371 mph"


def test_unit_converter_converts_time() -> None:
    assert convert(90, "minutes", "hours") == "90 min = 1.5 h"


@pytest.mark.parametrize(
    ("value", "from_unit", "to_unit", "expected"),
    [
        (1, "kB", "B", "1 kB = 1000 B"),
        (1, "KiB", "bytes", "1 KiB = 1024 B"),
        (1, "GiB", "MB", "1 GiB = 1073.74 MB"),
        (1, "MB", "KiB", "1 MB = 976.562 KiB"),
        (1, "MB", "Mbit", "1 MB = 8 Mbit"),
    ],
)
def test_unit_converter_converts_si_and_binary_data_sizes(
    value: float, from_unit: str, to_unit: str, expected: str
) -> None:
    assert convert(value, from_unit, to_unit) == expected


def test_unit_converter_refuses_incompatible_categories() -> None:
    assert convert(1, "kg", "m") == "Error: cannot convert kg (mass) to m (length)"


def test_unit_converter_lists_supported_units_for_an_unknown_one() -> None:
    result = convert(1, "furlong", "m")
    assert result.startswith("Error: unknown unit 'furlong'")
    assert "length: m, km" in result


def test_unit_aliases_each_name_one_unit() -> None:
    seen: dict[str, str] = {}
    for units in builtin_tools._UNITS.values():
        for symbol, (_, aliases) in units.items():
            for name in {builtin_tools._normalize_unit(alias) for alias in (symbol, *aliases)}:
                assert name not in seen, f"{name!r} names both {seen[name]} and {symbol}"
                seen[name] = symbol


# --- current time ------------------------------------------------------------------------------------------------


def test_current_time_defaults_to_utc() -> None:
    now = datetime.fromisoformat(current_time.invoke({}))
    assert now.utcoffset() == timedelta(0)


def test_current_time_reports_the_zone_offset() -> None:
    now = datetime.fromisoformat(current_time.invoke({"timezone": "Etc/GMT-5"}))
    assert now.utcoffset() == timedelta(hours=5)


def test_current_time_is_now() -> None:
    now = datetime.fromisoformat(current_time.invoke({"timezone": "Europe/Paris"}))
    assert abs(now - datetime.now(UTC)) < timedelta(seconds=5)


def test_current_time_accepts_zone_names_in_any_case() -> None:
    now = datetime.fromisoformat(current_time.invoke({"timezone": "etc/gmt-5"}))
    assert now.utcoffset() == timedelta(hours=5)


def test_current_time_reports_an_unknown_zone() -> None:
    assert current_time.invoke({"timezone": "Mars/Base"}).startswith("Error: unknown time zone 'Mars/Base'")


# --- research ----------------------------------------------------------------------------------------------------

PYTHON_PAGE = {
    "type": "standard",
    "title": "Python (programming language)",
    "extract": "Python is a high-level, general-purpose programming language.",
    "content_urls": {"desktop": {"page": "https://en.wikipedia.org/wiki/Python_(programming_language)"}},
}
LONG_PAGE = {"title": "Long", "extract": "A sentence of some length. " * 200}


class _FakeWikipedia(BaseHTTPRequestHandler):
    pages: ClassVar[dict[str, dict[str, Any]]] = {
        "/page/summary/Python_(programming_language)": PYTHON_PAGE,
        "/page/summary/Long": LONG_PAGE,
    }
    user_agents: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.user_agents.append(self.headers.get("User-Agent", ""))
        if unquote(self.path) == "/page/summary/Slow":
            time.sleep(1)  # longer than the client waits; it has hung up by now, so send nothing
            return
        page = self.pages.get(unquote(self.path))
        body = json.dumps(page or {"title": "Not found."}).encode()
        self.send_response(200 if page else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def wikipedia_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeWikipedia)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    _FakeWikipedia.user_agents.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_research_returns_title_and_summary(wikipedia_url: str) -> None:
    result = make_research_tool(wikipedia_url).invoke({"topic": "Python (programming language)"})
    assert result.splitlines()[:2] == [PYTHON_PAGE["title"], PYTHON_PAGE["extract"]]


def test_research_cites_the_article(wikipedia_url: str) -> None:
    result = make_research_tool(wikipedia_url).invoke({"topic": "Python (programming language)"})
    assert result.splitlines()[-1] == "Source: https://en.wikipedia.org/wiki/Python_(programming_language)"


def test_research_trims_long_summaries_at_a_sentence(wikipedia_url: str) -> None:
    summary = make_research_tool(wikipedia_url).invoke({"topic": "Long"}).splitlines()[1]
    assert 500 < len(summary) <= 1_000
    assert summary.endswith("length.")


def test_research_reports_a_missing_article(wikipedia_url: str) -> None:
    assert make_research_tool(wikipedia_url).invoke({"topic": "xyz"}) == "No Wikipedia article found for 'xyz'."


def test_research_sends_a_descriptive_user_agent(wikipedia_url: str) -> None:
    make_research_tool(wikipedia_url).invoke({"topic": "xyz"})
    assert _FakeWikipedia.user_agents and "aiforge" in _FakeWikipedia.user_agents[0]


def test_research_reads_the_base_url_from_the_environment_at_call_time(
    wikipedia_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIFORGE_RESEARCH_BASE_URL", wikipedia_url)
    assert research.invoke({"topic": "Python (programming language)"}).startswith(PYTHON_PAGE["title"])


def test_research_says_when_wikipedia_is_unreachable(closed_port_url: str) -> None:
    result = make_research_tool(closed_port_url).invoke({"topic": "Python"})
    assert result.startswith("Error: could not reach Wikipedia")
    assert "offline" in result


def test_research_gives_up_after_the_timeout(wikipedia_url: str) -> None:
    result = make_research_tool(wikipedia_url, timeout=0.2).invoke({"topic": "Slow"})
    assert result.startswith("Error: Wikipedia did not answer within 0.2 s")
