"""The unit converter tool, invoked through the StructuredTool interface as the agent invokes it."""

from __future__ import annotations

import pytest

from aiforge.tools import unit_converter
from aiforge.tools.units import _UNITS, _normalize_unit


def convert(value: float, from_unit: str, to_unit: str) -> str:
    return unit_converter.invoke({"value": value, "from_unit": from_unit, "to_unit": to_unit})


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
    for units in _UNITS.values():
        for symbol, (_, aliases) in units.items():
            for name in {_normalize_unit(alias) for alias in (symbol, *aliases)}:
                assert name not in seen, f"{name!r} names both {seen[name]} and {symbol}"
                seen[name] = symbol
