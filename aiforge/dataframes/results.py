"""How every ``df.aiforge`` / ``s.aiforge`` result is put together: pandas data on the input's index, with the
operation's report in its ``.attrs["aiforge"]``.

``batch_columns`` turns a ``BatchResult`` into the new columns (the output's fields, or the text replies);
``attach`` puts the report on the result and says how many rows failed (``FailedRowsWarning``).
"""

from __future__ import annotations

from typing import Any, TypeVar

import pandas as pd

from aiforge.batch.results import BatchResult
from aiforge.core.columns import output_columns
from aiforge.core.report import OperationReport

ATTRS_KEY = "aiforge"
"""Where each result keeps its report (an ``OperationReport``, ``core.report``): ``result.attrs["aiforge"]``."""
RESPONSE_COLUMN = "response"
"""The column of ``map``'s text replies when there is no ``output=``."""
LABEL_COLUMN = "label"
"""The name of ``classify``'s Series."""

_Data = TypeVar("_Data", bound="pd.DataFrame | pd.Series[Any]")


def batch_columns(batch: BatchResult) -> pd.DataFrame:
    """The new columns of ``batch`` on the input's index: the output's fields, or the text replies."""
    values: list[Any] = [None] * len(batch)
    for position, result in zip(batch.indices, batch.results, strict=True):
        values[position] = result.output if batch.output is not None else result.message
    if batch.output is not None:
        return output_columns(values, batch.output, batch.index)
    return pd.DataFrame({RESPONSE_COLUMN: pd.array(values, dtype="string")}, index=batch.index)


def attach(data: _Data, report: OperationReport) -> _Data:
    """``data`` with ``report`` in its ``.attrs["aiforge"]``: where every operation's result is put together.

    Every ``report`` is an ``OperationReport`` (``core.report``: ``total_cost``, ``total_tokens``, ``requests``,
    ``failed``), finished before it is attached and never changed after: pandas' deep copy of ``.attrs`` shares it.

    A result with failed rows says so here, once per call (``FailedRowsWarning``): a failed row is never a silent
    null. A ``BatchResult``'s failures are rows; a ``DedupReport``'s, the confirmation's pairs, which count as not
    duplicates, and with ``threshold="auto"`` the sample's, left out of the estimates. (``topk``, ``agg`` and
    ``embed`` raise rather than return with a failure; ``join`` warns of its own.)
    """
    from aiforge.core.failed_rows import warn_failed_rows
    from aiforge.semantic.near_duplicates import DedupReport

    data.attrs[ATTRS_KEY] = report
    if isinstance(report, BatchResult):
        warn_failed_rows(report.failed, len(report))
    elif isinstance(report, DedupReport) and report.auto is not None and report.auto.sampling is not None:
        warn_failed_rows(
            report.failed,
            len(report.auto.sampling) + (len(report.confirmation) if report.confirmation is not None else 0),
            what="pairs asked",
            where="result.attrs['aiforge'].failed (a sampled one is left out of the estimates, a confirmed one "
            "counts as not a duplicate)",
        )
    elif isinstance(report, DedupReport) and report.confirmation is not None:
        warn_failed_rows(
            report.confirmation.failed,
            len(report.confirmation),
            what="pairs asked",
            where="result.attrs['aiforge'].confirmation.failed (each counts as not a duplicate)",
        )
    return data
