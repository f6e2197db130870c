"""What ``topk`` asks the model: a window of rows to rank (listwise) or two rows to compare (pairwise).

The user's prompt is a row template (``"the most urgent ticket: {ticket}"``). A request shows it once, as written
with its fields as ``{names}``, as the criterion; each row is then listed by the values of those fields. Answers are
structured, so they parse: a pairwise answer is the ``Literal["A", "B"]`` ``COMPARISON``, a listwise answer a
``ranking_type(size, keep)``: exactly ``keep`` distinct ids of the window, best first. A reply that breaks those
rules is an ``OutputValidationError`` whose message goes back to the model (the agent's ``output_retries``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from aiforge.core.templates import VALUE_FIELD, RowTemplate

COMPARISON = Literal["A", "B"]
"""A pairwise answer: which of the two rows shown better satisfies the criterion."""
MISSING = "(missing)"
"""How a missing value (None, NaN, ``pd.NA``) reads in a request: the row still takes part."""


def row_text(values: Mapping[Any, Any], template: RowTemplate) -> str:
    """One row as a request lists it: its value alone for ``{value}``, else ``name: value`` per template field."""
    shown = [(name, _shown(values[name])) for name in template.fields]
    if [name for name, _ in shown] == [VALUE_FIELD]:
        return shown[0][1]
    return "\n".join(f"{name}: {value}" for name, value in shown)


def _shown(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value) or type(value).__name__ in ("NAType", "NaTType"):
        return MISSING
    return str(value)


def window_prompt(criterion: str, rows: Sequence[str], keep: int) -> str:
    """The request ranking ``rows`` (ids 1..len) by ``criterion``: the ids of the best ``keep``, best first."""
    listed = "\n\n".join(f"[{i}]\n{text}" for i, text in enumerate(rows, start=1))
    what = "the best row" if keep == 1 else f"the {keep} best rows, best first"
    return (
        f"Rank rows by how well each satisfies this request:\n{criterion}\n\n"
        f"Rows:\n\n{listed}\n\n"
        f"Answer with the ids of {what} (each id at most once, from 1 to {len(rows)})."
    )


def pair_prompt(criterion: str, first: str, second: str) -> str:
    """The request asking which of two rows, shown as A and B, better satisfies ``criterion``."""
    return (
        f"Which of two rows better satisfies this request?\n{criterion}\n\n"
        f"A:\n{first}\n\nB:\n{second}\n\n"
        "Answer A or B."
    )


@functools.lru_cache(maxsize=64)
def ranking_type(size: int, keep: int) -> type[BaseModel]:
    """The answer to ``window_prompt`` over ``size`` rows: ``best``, exactly ``keep`` distinct ids in 1..size."""
    ids = Literal[tuple(range(1, size + 1))]  # type: ignore[valid-type]  # the window's ids, as a JSON enum

    class Ranking(BaseModel):
        """The ids of the best rows of the window, best first."""

        best: list[ids] = Field(min_length=keep, max_length=keep)  # type: ignore[valid-type]

        @field_validator("best")
        @classmethod
        def _each_id_once(cls, best: list[int]) -> list[int]:
            repeated = sorted({i for i in best if best.count(i) > 1})
            if repeated:
                raise ValueError(f"each id at most once; repeated: {', '.join(map(str, repeated))}")
            return best

    return Ranking
