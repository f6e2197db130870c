"""What packing did in one batch (``run_batch(pack=k)``, ``packing``): its stats, its saving, its one warning."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiforge.batch.savings import PACKING, Savings
from aiforge.core.costs import caller_stacklevel
from aiforge.core.report import OperationReport
from aiforge.core.tokens import estimate_tokens
from aiforge.core.types import Usage

if TYPE_CHECKING:
    from aiforge.batch.estimate import ItemPricer


@dataclass(slots=True, repr=False)
class PackingStats(OperationReport):
    """What packing did in one batch (``BatchResult.packing``): enough to say what it saved against one request per
    row. An ``OperationReport`` (``core.report``) of the packed requests only: the rows asked alone are the batch's."""

    title = "Packing"
    size: int
    """``pack=``: the most rows one request held."""
    requests: int = 0
    """Packed requests sent."""
    rows: int = 0
    """Rows those requests held."""
    answered: int = 0
    """Rows answered from a pack (``packed=True``)."""
    retried: int = 0
    """Rows asked again alone: a missing id, an invalid answer, or a failed pack."""
    input_tokens: int = field(default=0, repr=False)
    output_tokens: int = field(default=0, repr=False)
    cost: float = field(default=0.0, repr=False)
    """USD of the packed requests (the rows asked alone not included): ``total_cost``."""
    answered_alone_input_tokens: int = field(default=0, repr=False)
    """Estimated input tokens the rows answered from a pack would have taken one per request (the batch
    estimate's count: system prompt, schema and the row's prompt)."""

    @property
    def total_cost(self) -> float:
        """``cost``: USD of the packed requests."""
        return self.cost

    @property
    def total_tokens(self) -> int:
        """Input and output tokens of the packed requests."""
        return self.input_tokens + self.output_tokens

    @property
    def failed(self) -> list[Any]:
        """Always empty: a failed pack's rows are asked again alone, and fail (if they do) as the batch's rows."""
        return []

    @property
    def requests_saved(self) -> int:
        """Requests not made: one per packed row, less the packs and the rows asked again alone."""
        return self.rows - self.requests - self.retried

    @property
    def input_tokens_saved(self) -> int:
        """Input tokens not spent, estimated: what the answered rows would have taken alone, less every pack's
        (negative when packs failed and their rows were asked again anyway)."""
        return self.answered_alone_input_tokens - self.input_tokens


def warn_if_packing_failed(stats: PackingStats) -> None:
    """One warning line when no row of any pack was answered there: every row was asked again alone, so the batch
    paid the packs on top of one request per row (a model that cannot answer the packed format)."""
    if stats.rows and not stats.answered:
        warnings.warn(
            f"pack={stats.size}: no packed request answered any of its {stats.rows} rows (each failed, or the model "
            f"did not answer by id), so every row was asked again alone on top of {stats.requests} packed "
            "request(s); if this model cannot answer packed rows, drop pack=",
            UserWarning,
            stacklevel=caller_stacklevel(),
        )


def packing_saving(stats: PackingStats, pricer: ItemPricer) -> Savings:
    """What packing saved against one request per row (``BatchResult.saved``'s ``"packing"`` source): requests not
    made and input tokens not sent, priced at the model's input price, less the output the packed reply adds (each
    answer's id wrapper and the list around them); a packing that cost more saves nothing."""
    tokens = max(stats.input_tokens_saved, 0)
    added = stats.answered * estimate_tokens('{"id":"r10","answer":},') + stats.requests * estimate_tokens(
        '{"answers":[]}'
    )
    price = None if pricer.free else pricer.price
    dollars = 0.0 if price is None else max(price.cost_of(Usage(tokens, 0)) - price.cost_of(Usage(0, added)), 0.0)
    return Savings.of(PACKING, requests=max(stats.requests_saved, 0), input_tokens=tokens, dollars=dollars)
