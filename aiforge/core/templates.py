"""Row templates: ``"Classify this review: {review}"`` filled from a row's columns.

Fields are plain column names parsed by ``string.Formatter`` (``{{`` and ``}}`` escape braces). Attribute
or index access, format specs and conversions are refused when the template is built: a template is
data from the user's notebook and nothing in it is evaluated.
"""

from __future__ import annotations

import math
import string
from collections.abc import Iterable, Mapping
from typing import Any


class RowTemplate:
    """A prompt template whose ``{column}`` fields are filled from one row at a time."""

    __slots__ = ("template", "fields", "_parts")

    def __init__(self, template: str) -> None:
        self.template = template
        parts: list[tuple[str, str | None]] = []
        try:
            parsed = list(string.Formatter().parse(template))
        except ValueError as exc:
            raise ValueError(f"Prompt template {template!r}: {exc} (escape literal braces as {{{{ and }}}}).") from None
        for literal, name, spec, conversion in parsed:
            if name is not None:
                _check_field(template, name, spec, conversion)
            parts.append((literal, name))
        self._parts = tuple(parts)
        self.fields: tuple[str, ...] = tuple(dict.fromkeys(name for _, name in parts if name is not None))

    def check(self, columns: Iterable[Any]) -> None:
        """ValueError naming every field that is not among ``columns``, and the columns that exist."""
        available = list(columns)
        missing = [name for name in self.fields if name not in available]
        if missing:
            raise ValueError(
                f"The prompt template names column(s) {', '.join(map(repr, missing))} that do not exist; "
                f"the columns are: {', '.join(map(repr, available)) or '(none)'}."
            )

    def fill(self, row: Mapping[str, Any]) -> str:
        """The template with each field replaced by the row's value (a missing value reads as empty)."""
        pieces = []
        for literal, name in self._parts:
            pieces.append(literal)
            if name is not None:
                try:
                    value = row[name]
                except KeyError:
                    raise ValueError(f"The row has no column {name!r} named by the prompt template.") from None
                pieces.append("" if _is_missing(value) else str(value))
        return "".join(pieces)

    def __repr__(self) -> str:
        return f"RowTemplate({self.template!r})"


def _check_field(template: str, name: str, spec: str | None, conversion: str | None) -> None:
    if not name:
        raise ValueError(f"Empty field {{}} in prompt template {template!r}: name a column, e.g. {{review}}.")
    if "." in name or "[" in name:
        raise ValueError(
            f"Field {{{name}}} in prompt template {template!r} uses attribute or index access, which "
            "templates do not allow: name a column as it is (escape literal braces as {{ and }})."
        )
    if spec or conversion:
        raise ValueError(
            f"Field {{{name}}} in prompt template {template!r} has a format spec or conversion "
            "(':...' or '!...'), which templates do not allow: name a column as it is."
        )


def _is_missing(value: Any) -> bool:
    """None, NaN, pandas' NA and NaT, without importing pandas."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    return type(value).__name__ in ("NAType", "NaTType")
