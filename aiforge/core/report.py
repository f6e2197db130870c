"""What every operation's report has: ``result.attrs["aiforge"]`` reads the same four fields, whatever the operation.

``df.aiforge.map`` (classify, filter, extract, judge) puts a ``BatchResult`` there, ``agg`` an ``AggReport``,
``embed`` an ``EmbeddingReport``, ``dedup`` a ``DedupReport``, ``cluster`` a ``ClusterReport``, ``topk`` a
``TopKRun``, ``join`` a ``JoinReport``; a Dask job's summary is a ``JobSummary``. Each is an ``OperationReport``:

- ``total_cost``: USD spent (an unpriced model's requests count $0.00);
- ``total_tokens``: input and output tokens of the requests made;
- ``requests``: requests sent to a provider (cache hits and repeated rows made none);
- ``failed``: one record per failure, in the operation's own shape (a ``BatchFailure`` for a row, a
  ``JoinFailure`` for a joined pair, ``(label, "Error: message")`` for a Dask row); empty when nothing failed
  or the operation raises rather than returns with a failure (``embed``, ``cluster``, ``topk``, ``agg``).

plus its own fields. A report is a finished record, never changed once attached, and stays lean: pandas deep-copies
``.attrs`` on most operations (``head``, ``copy``, arithmetic, ``__finalize__``), so every report's ``__deepcopy__``
returns itself (``SharedOnDeepcopy``) and no report holds a row-sized array (``embed``'s vectors are the
Series' values, not its report's): ``s.head(5)`` of an embedding Series costs what a plain Series' does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, Self, runtime_checkable


@runtime_checkable
class OperationReport(Protocol):
    """The fields every ``.attrs["aiforge"]`` report has; see the module docstring."""

    @property
    def total_cost(self) -> float: ...

    @property
    def total_tokens(self) -> int: ...

    @property
    def requests(self) -> int: ...

    @property
    def failed(self) -> Sequence[Any]: ...


class SharedOnDeepcopy:
    """A mixin: ``copy.deepcopy`` returns the report itself, so pandas' deep copy of ``.attrs`` copies nothing."""

    __slots__ = ()

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return self  # a finished record, shared: pandas deep-copies ``attrs`` on every operation
