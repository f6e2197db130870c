"""How every ``df.aiforge`` / ``s.aiforge`` result is put together: pandas data on the input's index, with the
operation's report in its ``.attrs["aiforge"]``.

``batch_columns`` turns a ``BatchResult`` into the new columns (the output's fields, or the text replies);
``attach`` puts the report on the result and says how many rows failed (``FailedRowsWarning``).

The input keeps the report of its last operation too, at ``df.aiforge.last_report`` (``records_reports``): the one
place for the report of an answer that cannot carry ``.attrs`` (``agg(output=int)`` returns an ``int``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
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

LAST_REPORT = "_aiforge_last_report"
"""The attribute of a DataFrame or Series that holds its last operation's report (``last_report``)."""
RECORDED_OPERATIONS = (
    *("map", "classify", "filter", "extract", "judge"),
    *("agg", "topk", "embed", "dedup", "cluster", "join", "evaluate"),
)
"""The accessor's operations whose report ``last_report`` keeps (``records_reports``)."""

_Data = TypeVar("_Data", bound="pd.DataFrame | pd.Series[Any]")
_Accessor = TypeVar("_Accessor", bound=type)


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


def remember(data: pd.DataFrame | pd.Series, report: OperationReport) -> None:
    """Keep ``report`` as ``data``'s last operation's (``last_report``), on the object itself: pandas builds a new
    accessor at each ``df.aiforge``, and copies of ``data`` (``copy``, ``head``, pickling) do not take it along."""
    object.__setattr__(data, LAST_REPORT, report)  # pandas' own __setattr__ would take the name for a column


def last_report(data: pd.DataFrame | pd.Series) -> OperationReport | None:
    """The report ``remember`` kept on ``data`` (None: no operation has returned on this object)."""
    report: OperationReport | None = vars(data).get(LAST_REPORT)
    return report


def records_reports(accessor: _Accessor) -> _Accessor:
    """``accessor`` whose ``RECORDED_OPERATIONS`` each ``remember`` their report on the accessor's data once they
    return: the result's ``.attrs["aiforge"]``, or the result itself when it is a report (``evaluate``). An answer
    with neither (``agg(output=int)``) was remembered by the operation."""
    for name in RECORDED_OPERATIONS:
        operation = getattr(accessor, name, None)
        if operation is not None:
            setattr(accessor, name, _recording(operation))
    return accessor


def _recording(operation: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(operation)  # keeps the signature with_options wrote, and the docstring
    def recorded(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = operation(self, *args, **kwargs)
        attrs = getattr(result, "attrs", None)
        report = attrs.get(ATTRS_KEY) if isinstance(attrs, dict) else result
        if isinstance(report, OperationReport):
            remember(self._data, report)
        return result

    return recorded
