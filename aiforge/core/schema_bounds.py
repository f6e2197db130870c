"""Bounds no value can meet in a JSON schema: ``Field(ge=5, le=1)``, ``min_length`` above ``max_length``.

Pydantic accepts such a type, but no answer can ever validate, and a provider that compiles the schema into a
grammar (llama.cpp) fails every request with a 500. ``impossible_bounds`` finds them when ``output=`` is
converted, so the caller hears about it once, before any request.
"""

from __future__ import annotations

import math
from typing import Any

_SIZES = (
    ("minLength", "maxLength", "string", "characters"),
    ("minItems", "maxItems", "array", "items"),
    ("minProperties", "maxProperties", "object", "keys"),
)


def impossible_bounds(schema: dict[str, Any]) -> list[str]:
    """Each place in ``schema`` whose bounds no value meets, as ``"<where>: <why>"`` (empty when none)."""
    found: list[str] = []
    _visit(schema, "", found)
    for name, sub in (schema.get("$defs") or {}).items():
        _visit(sub, str(name), found)
    return found


def _visit(node: Any, where: str, found: list[str]) -> None:
    if not isinstance(node, dict):
        return
    problem = _numeric(node) or _sizes(node)
    if problem:
        found.append(f"{where or '(the value)'}: {problem}")
    for key, sub in (node.get("properties") or {}).items():
        _visit(sub, f"{where}.{key}".lstrip("."), found)
    for key in ("items", "additionalProperties", "not"):
        _visit(node.get(key), f"{where}[]" if key == "items" else where, found)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for sub in node.get(key) or ():
            _visit(sub, where, found)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _numeric(node: dict[str, Any]) -> str | None:
    """Why ``node``'s minimum/maximum (exclusive or not) leave no number, or None."""
    lower = _tightest(node, ("minimum", "exclusiveMinimum"), max)
    upper = _tightest(node, ("maximum", "exclusiveMaximum"), min)
    if lower is None or upper is None:
        return None
    (low, low_open), (high, high_open) = lower, upper
    if node.get("type") == "integer":
        # gt=1, lt=2 leaves no integer although 1 < 2
        least = math.floor(low) + 1 if low_open else math.ceil(low)
        empty = least > (math.ceil(high) - 1 if high_open else math.floor(high))
        kind = "integer"
    else:
        empty = low > high or (low == high and (low_open or high_open))
        kind = "number"
    if not empty:
        return None
    return f"no {kind} is {'>' if low_open else '>='} {low:g} and {'<' if high_open else '<='} {high:g}"


def _tightest(node: dict[str, Any], keys: tuple[str, str], pick: Any) -> tuple[float, bool] | None:
    """The tighter of the inclusive and exclusive bound, as ``(value, exclusive)``; None when neither is set."""
    bounds = [(value, key.startswith("exclusive")) for key in keys if (value := _number(node.get(key))) is not None]
    if not bounds:
        return None
    best = pick(value for value, _ in bounds)
    return best, any(exclusive for value, exclusive in bounds if value == best)


def _sizes(node: dict[str, Any]) -> str | None:
    for low_key, high_key, kind, unit in _SIZES:
        low, high = _number(node.get(low_key)), _number(node.get(high_key))
        if low is not None and high is not None and low > high:
            return f"no {kind} has at least {low:g} and at most {high:g} {unit}"
    return None
