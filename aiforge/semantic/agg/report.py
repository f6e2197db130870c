"""What an ``agg`` call did: its levels of chunks and their batches (``AggReport``, ``result.attrs["aiforge"]``), and
on Dask what the partitions spent below the fold (``PartitionTotals``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiforge.core.report import OperationReport

if TYPE_CHECKING:
    from aiforge.batch.results import BatchFailure, BatchResult


@dataclass
class AggLevel:
    """One level of the tree: how many chunks it had and the batches that answered them (none when every chunk's
    answer was kept from an earlier run of the same call)."""

    level: int
    chunks: int
    batches: list[BatchResult] = field(default_factory=list)

    @property
    def requests(self) -> int:
        """Requests this level made (cache hits, duplicates and kept answers are not requests)."""
        return sum(sum(not getattr(r, "cached", False) for r in batch.results) for batch in self.batches)


@dataclass
class PartitionTotals:
    """What the partitions of a Dask ``agg`` spent reducing their own rows, before the fold across them."""

    partitions: int = 0
    requests: int = 0
    tokens: int = 0
    cost: float = 0.0
    largest_request: int = 0
    """Estimated tokens of the largest request any partition built."""


@dataclass(repr=False)
class AggReport(OperationReport):
    """What an ``agg`` call did: its levels and batches, their costs and tokens summed; ``result.attrs["aiforge"]``,
    an ``OperationReport`` (``core.report``)."""

    title = "Agg"
    context_window: int = field(repr=False)
    """The ``CONTEXT_WINDOW`` requests were packed under."""
    request_limit: int = field(repr=False)
    """The most tokens a request was estimated at: the window less ``agg.chunks.SAFETY_MARGIN``."""
    levels: list[AggLevel] = field(default_factory=list, repr=False)
    """The levels of the tree, leaves first (written as their count and chunks: ``levels=3, chunks=39 -> 5 -> 1``)."""
    largest_request: int = 0
    """Estimated tokens (``core.tokens``) of the largest request built, answer reserved: at most ``request_limit``."""
    truncated: int = 0
    """Rows or partial answers cut to fit a request (``TruncatedRowWarning``)."""
    partitions: PartitionTotals | None = field(default=None, repr=False)
    """On Dask: what the partitions spent below ``levels`` (the fold across them); added into the totals."""

    @property
    def batches(self) -> list[BatchResult]:
        return [batch for level in self.levels for batch in level.batches]

    @property
    def total_cost(self) -> float:
        """USD of every level's requests (a Dask job's partitions' included)."""
        below = 0.0 if self.partitions is None else self.partitions.cost
        return below + sum(batch.total_cost for batch in self.batches)

    @property
    def total_tokens(self) -> int:
        """Input and output tokens of every level's requests (a Dask job's partitions' included)."""
        below = 0 if self.partitions is None else self.partitions.tokens
        return below + sum(batch.total_tokens for batch in self.batches)

    @property
    def requests(self) -> int:
        """Requests made (a Dask job's partitions' included)."""
        below = 0 if self.partitions is None else self.partitions.requests
        return below + sum(level.requests for level in self.levels)

    @property
    def failed(self) -> list[BatchFailure]:
        """Chunks whose request failed, over every level: empty for a finished call (a failed chunk raises
        ``AggregationError``, and the same call asks it again)."""
        return [failure for batch in self.batches for failure in batch.failed]

    @property
    def chunks(self) -> int:
        """Chunk prompts over all levels (each a request, unless answered by the cache or an earlier run)."""
        return sum(level.chunks for level in self.levels)

    def own_fields(self) -> dict[str, str]:
        """The levels and each level's chunks (``chunks=39 -> 5 -> 1``) first."""
        shape = " -> ".join(str(level.chunks) for level in self.levels)
        return {"levels": str(len(self.levels)), "chunks": shape, **OperationReport.own_fields(self)}

    def shown(self, name: str, value: Any) -> str:
        """``largest_request`` out of the window (``320/400``)."""
        if name == "largest_request":
            return f"{value}/{self.context_window}"
        return OperationReport.shown(self, name, value)
