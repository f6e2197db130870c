"""The join's prompt: ``"Does the ticket {left.text} concern the product {right.name}?"``, parsed once and checked.

A field names a side and one of its columns (``{left.col}``, ``{right.col}``); everything else is literal text
(``{{`` and ``}}`` escape braces). From it the join builds the pair question (both sides filled), the
classification question (the left side filled, the right side as a numbered list of items) and each side's text
for the embeddings (the values of the columns the prompt names). Every mistake is a ``UsageError`` before any
request, naming the unknown columns with a suggestion (``core.templates.no_such_column``).
"""

from __future__ import annotations

import math
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aiforge.core.templates import no_such_column
from aiforge.core.types import UsageError

Side = Literal["left", "right"]
SIDES: tuple[Side, Side] = ("left", "right")


@dataclass(frozen=True, slots=True)
class PairTemplate:
    """A join prompt: literal pieces and ``(side, column)`` fields, in order."""

    template: str
    parts: tuple[tuple[str, tuple[Side, Any] | None], ...]

    @classmethod
    def parse(cls, template: str, left_columns: Iterable[Any], right_columns: Iterable[Any]) -> PairTemplate:
        """The template with each field resolved to a column of its side; ``UsageError`` naming what is wrong."""
        if not isinstance(template, str):
            raise UsageError(
                f"join: prompt= takes a template such as 'Does {{left.text}} concern {{right.name}}?', "
                f"got {type(template).__name__}."
            )
        try:
            parsed = list(string.Formatter().parse(template))
        except ValueError as exc:
            raise UsageError(f"join prompt {template!r}: {exc} (escape literal braces as {{{{ and }}}}).") from None
        columns = {"left": _by_name(left_columns), "right": _by_name(right_columns)}
        parts: list[tuple[str, tuple[Side, Any] | None]] = []
        unknown: list[str] = []
        for literal, name, spec, conversion in parsed:
            field = None if name is None else _field(template, name, spec, conversion)
            if field is not None and field[1] not in columns[field[0]]:
                unknown.append(no_such_column(f"{{{name}}}", field[1], columns[field[0]], f"in the {field[0]} frame"))
            parts.append((literal, field))
        if unknown:
            raise UsageError(" ".join(unknown))
        resolved = tuple((lit, None if f is None else (f[0], columns[f[0]][f[1]])) for lit, f in parts)
        pair = cls(template, resolved)
        missing_sides = [side for side in SIDES if not pair.fields(side)]
        if missing_sides:
            raise UsageError(
                f"join prompt {template!r} names no column of the {' or '.join(missing_sides)} frame: a join asks "
                "about a pair, e.g. 'Does the ticket {left.text} concern the product {right.name}?'."
            )
        return pair

    def fields(self, side: Side) -> tuple[Any, ...]:
        """The columns of ``side`` the prompt names, each once, in order of appearance."""
        return tuple(dict.fromkeys(f[1] for _, f in self.parts if f is not None and f[0] == side))

    def pair_question(self, left: Mapping[Any, Any], right: Mapping[Any, Any]) -> str:
        """The prompt filled from one left row's and one right row's values (by column)."""
        rows = {"left": left, "right": right}
        return "".join(lit + ("" if f is None else str(rows[f[0]][f[1]])) for lit, f in self.parts)

    def classify_question(self, left: Mapping[Any, Any], items: Sequence[Mapping[Any, Any]], multiple: bool) -> str:
        """The prompt for one left row over every right item: the question, then the numbered items."""
        if multiple:
            ask = "Reply with the numbers of all the items for which the answer is yes (an empty list if none is)."
        else:
            ask = 'Reply with the number of the item for which the answer is yes, or "none" if none is.'
        return self._listed(left, items, ask)

    def choice_question(self, left: Mapping[Any, Any], items: Sequence[Mapping[Any, Any]], multiple: bool) -> str:
        """The prompt for one left row over its candidate right rows, answered by a list of numbers (maybe empty)."""
        if multiple:
            ask = "Reply with the numbers of all the items for which the answer is yes (an empty list if none is)."
        else:
            ask = (
                "Reply with a list holding the number of the one item for which the answer is yes "
                "(an empty list if none is)."
            )
        return self._listed(left, items, ask)

    def _listed(self, left: Mapping[Any, Any], items: Sequence[Mapping[Any, Any]], ask: str) -> str:
        question = "".join(
            lit + ("" if f is None else str(left[f[1]]) if f[0] == "left" else f"<the item's {f[1]}>")
            for lit, f in self.parts
        )
        right = self.fields("right")
        listed = "\n".join(f"{n}. {side_text(item, right, labelled=True)}" for n, item in enumerate(items, start=1))
        return f"{question}\n\nAnswer that for each item below. {ask}\n\nItems:\n{listed}"


def side_text(row: Mapping[Any, Any], columns: tuple[Any, ...], *, labelled: bool = False) -> str:
    """One side of a pair as text: its one value, or ``col: value`` pieces when there are several (or ``labelled``)."""
    if len(columns) == 1 and not labelled:
        return str(row[columns[0]])
    return "; ".join(f"{column}: {row[column]}" for column in columns)


def is_missing(value: Any) -> bool:
    """None, NaN, pandas' NA and NaT: a row with one of these in a field the prompt names is not asked."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    return type(value).__name__ in ("NAType", "NaTType")


def _by_name(columns: Iterable[Any]) -> dict[str, Any]:
    """A frame's columns by the name a template writes for them (``str`` of a non-string column)."""
    return {column if isinstance(column, str) else str(column): column for column in columns}


def _field(template: str, name: str, spec: str | None, conversion: str | None) -> tuple[Side, str]:
    side, dot, column = name.partition(".")
    if side not in SIDES or not dot or not column:
        hint = f" (did you mean {{left.{name}}} or {{right.{name}}}?)" if name and "." not in name else ""
        raise UsageError(
            f"Field {{{name}}} in join prompt {template!r} names no side: write {{left.<column>}} or "
            f"{{right.<column>}}{hint}."
        )
    if spec or conversion:
        raise UsageError(
            f"Field {{{name}}} in join prompt {template!r} has a format spec or conversion (':...' or '!...'), "
            "which templates do not allow: name a column as it is."
        )
    return side, column
