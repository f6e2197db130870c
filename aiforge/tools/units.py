"""The ``unit_converter`` tool: length, mass, volume, temperature, speed, time and data size.

Units are looked up by symbol or name in any case; temperature converts through kelvin.
Like every built-in tool it returns text and never raises: a failure comes back as "Error: ...".
"""

from __future__ import annotations

import math
import re

from langchain_core.tools import StructuredTool


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
            raise ValueError(f"cannot convert {from_symbol} ({from_category}) to {to_symbol} ({to_category})")
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


unit_converter = StructuredTool.from_function(_convert_units, name="unit_converter", parse_docstring=True)
