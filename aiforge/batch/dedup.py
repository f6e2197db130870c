"""In-batch dedup: rows of one batch whose rendered prompt is the same are asked once, the answer fanned out.

Every row of a batch goes to the same agent with the same settings and ``output=``, so two rows with the same
prompt text are the same request. The first row still to run of each prompt (its lead) is asked; the later ones
(its twins) take its answer when it lands, as the result type's ``served_again()`` (a ``ChatResponse``: marked
``cached``, cost 0, the lead's cost as ``cached_cost``), or fail with its error, each under its own index label.
A row to run whose prompt a finished row (kept from a checkpoint or an interrupted run) already has takes that
row's answer without a request. A result type without ``served_again``, or ``run_batch(dedup=False)`` (to sample
one prompt several times at a temperature), asks row by row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Duplicates:
    """The rows of a batch that are not asked: each lead's twins, and the rows a finished row answers."""

    twins: dict[int, list[int]] = field(default_factory=dict)
    """Lead row -> the later rows to run with the same prompt, in input order."""
    answered: dict[int, int] = field(default_factory=dict)
    """Row to run -> the finished row with the same prompt whose answer it takes."""


def find_duplicates(inputs: list[str], done: dict[int, Any], errors: dict[int, BaseException]) -> Duplicates:
    """The duplicates among the rows of ``inputs`` not ``done`` nor failed already (``errors``: missing values)."""
    finished: dict[str, int] = {}
    for index in sorted(done):
        finished.setdefault(inputs[index], index)
    first: dict[str, int] = {}
    twins: dict[int, list[int]] = {}
    answered: dict[int, int] = {}
    for index, text in enumerate(inputs):
        if index in done or index in errors:
            continue
        if text in finished:
            answered[index] = finished[text]
            continue
        lead = first.setdefault(text, index)
        if lead != index:
            twins.setdefault(lead, []).append(index)
    return Duplicates(twins, answered)
