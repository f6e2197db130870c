"""One side of a join as its questions read it: the rows grouped by the values of the columns the prompt names
(identical rows asked once), the rows with a missing or blank value (asked nothing: a ``JoinFailure`` each), and
the frame positions a match of two distinct rows stands for."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiforge.core.errors import MissingValueError
from aiforge.semantic.join.report import JoinFailure
from aiforge.semantic.join.template import PairTemplate, Side, is_missing

if TYPE_CHECKING:
    import pandas as pd


@dataclass(slots=True)
class DistinctRows:
    """One side's rows grouped by the values of the columns the prompt names (identical rows asked once)."""

    values: list[dict[Any, Any]] = field(default_factory=list)
    """Each distinct row's values by column."""
    members: list[list[int]] = field(default_factory=list)
    """Each distinct row's positions in the frame."""
    missing: list[int] = field(default_factory=list)
    """Positions of rows with a missing value in a named column: asked nothing."""
    labels: Any = None
    """The frame's index: a position's label, for the failures."""

    @classmethod
    def of(cls, frame: pd.DataFrame, columns: tuple[Any, ...]) -> DistinctRows:
        rows = cls(labels=frame.index)
        seen: dict[tuple[str, ...], int] = {}
        records = zip(*(frame[column].tolist() for column in columns), strict=True)
        for position, record in enumerate(records):
            if any(is_blank(value) for value in record):
                rows.missing.append(position)
                continue
            key = tuple(map(str, record))  # a question reads str(value): rows that read alike are one
            if key not in seen:
                seen[key] = len(rows.values)
                rows.values.append(dict(zip(columns, record, strict=True)))
                rows.members.append([])
            rows.members[seen[key]].append(position)
        return rows


def is_blank(value: Any) -> bool:
    """A value a question cannot be about: missing, or a string of only whitespace (nothing to embed either)."""
    return is_missing(value) or (isinstance(value, str) and not value.strip())


def expanded(left_positions: list[int], right_positions: list[int]) -> set[tuple[int, int]]:
    return {(i, j) for i in left_positions for j in right_positions}


def missing_rows(frame: pd.DataFrame, rows: DistinctRows, template: PairTemplate, side: Side) -> list[JoinFailure]:
    """A failure per row not asked: a missing value in a column the prompt names."""
    failures = []
    for position in rows.missing:
        empty = [c for c in template.fields(side) if is_blank(frame[c].iloc[position])]
        error = MissingValueError(f"missing value: {', '.join(f'{side}.{c}' for c in empty)}")
        label = frame.index[position]
        failures.append(JoinFailure(label, None, error) if side == "left" else JoinFailure(None, label, error))
    return failures
