"""The one worker pool of a batch: leads run by a fixed pool of workers, a checkpoint written as items land, a budget.

Resuming (``resume``) decides which items are finished before the pool starts; the pool runs the others.

Budget. With ``max_cost``, an item starts only if the cost spent so far, plus an estimate for every item in
flight and for itself, stays within the budget; the estimate is the mean cost of the items finished so far, or
before any has finished the dry-run estimate (``estimate.py``). Once an item does not fit, no further item
starts and the rest are skipped (``BudgetExceededError``). The overshoot is at most what the items in flight
cost beyond their estimate.

Duplicates (``dedup``). Only the lead of each prompt is run; when it lands its twins take its result
(``served_again``) or its error, are checkpointed and counted by the progress bar with it, and cost nothing: the
budget sees one request. A lead the budget skips skips its twins.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from aiforge.batch.estimate import ItemPricer
from aiforge.core.errors import BudgetExceededError
from aiforge.core.waits import queued
from aiforge.store import Checkpoint

YIELD_AFTER_S = 0.01
"""A worker gives the event loop a turn between two rows at least this often, whether or not its rows suspend."""


@dataclass(slots=True)
class BatchRun:
    """One run of a batch: what is already done, and the loop that runs the rest."""

    inputs: list[str]
    run_item: Callable[[str], Any]
    """``text -> awaitable result`` of one item."""
    done: dict[int, Any]
    errors: dict[int, BaseException]
    checkpoint: Checkpoint | None = None
    to_payload: Callable[[Any], dict[str, Any]] | None = None
    max_cost: float | None = None
    pricer: ItemPricer | None = None
    progress: Any = None
    pack: int = 1
    """Items per request (``run_batch(pack=k)``)."""
    run_pack: Callable[[list[int]], AsyncGenerator[tuple[int, Any], None]] | None = None
    """``indices -> (index, result or exception)`` of each item of a packed request (``packing.Packer.run``)."""
    spent: float = 0.0
    in_flight: dict[int, float] = field(default_factory=dict)
    """The cost estimate of each item in flight."""
    paid: list[float] = field(default_factory=list)
    """The cost of each item finished by a request (cache hits excluded), for the in-flight estimate."""
    over_budget: bool = False
    twins: dict[int, list[int]] = field(default_factory=dict)
    """Lead index -> the later indices with the same prompt, which take its result (``dedup``)."""
    served_again: Callable[[Any], Any] | None = None
    """A lead's result as its twin's (``BatchItem.served_again``)."""

    async def run(self, concurrency: int) -> float:
        """Run every item not done or failed already; return the wall time in seconds."""
        waiting = {i for rows in self.twins.values() for i in rows}
        leads = [i for i in range(len(self.inputs)) if i not in self.done and i not in self.errors and i not in waiting]
        pending = iter(leads)
        started = time.perf_counter()

        async def worker() -> None:
            # A fixed pool of workers pulling the next indices bounds concurrency exactly and
            # keeps 1 000 items from becoming 1 000 waiting tasks; a worker holds one pack at a time.
            yielded = time.perf_counter()
            while group := self._next_group(pending):
                queued(time.perf_counter() - started)  # waited for a free worker: queue_ms, not latency
                if self.run_pack is None or len(group) == 1:
                    await self._run_alone(group[0])
                else:
                    async with aclosing(self.run_pack(group)) as landing:
                        async for index, outcome in landing:
                            self._settle(index, outcome)
                if time.perf_counter() - yielded > YIELD_AFTER_S:
                    # A row that never suspends (a provider doing blocking work on the loop) would let the
                    # whole batch run before an interrupt's cancellation could land: it lands here.
                    await asyncio.sleep(0)
                    yielded = time.perf_counter()

        await asyncio.gather(*(worker() for _ in range(min(concurrency, -(-len(leads) // self.pack)))))
        return time.perf_counter() - started

    def _next_group(self, pending: Iterator[int]) -> list[int]:
        """The next ``pack`` indices that fit the budget (the ones that do not are recorded as skipped)."""
        group: list[int] = []
        for index in pending:
            if self._fits(index):
                group.append(index)
                if len(group) == self.pack:
                    break
        return group

    async def _run_alone(self, index: int) -> None:
        try:
            result = await self.run_item(self.inputs[index])
        except Exception as exc:  # noqa: BLE001 - one item's failure must not lose the others
            self._settle(index, exc)
        else:
            self._settle(index, result)

    def _settle(self, index: int, outcome: Any) -> None:
        """Record item ``index``'s result, or its failure when ``outcome`` is an exception."""
        if isinstance(outcome, BaseException):
            self.errors[index] = outcome
            self._landed(index, None, outcome)
        else:
            self.done[index] = outcome
            self._landed(index, outcome, None)

    def _fits(self, index: int) -> bool:
        """Whether item ``index`` may start under the budget; records it as skipped when not."""
        if self.max_cost is None:
            return True
        estimate = self._estimate(index)
        if not self.over_budget and self.spent + sum(self.in_flight.values()) + estimate <= self.max_cost:
            self.in_flight[index] = estimate
            return True
        self.over_budget = True
        skipped = BudgetExceededError(
            f"skipped: max_cost=${self.max_cost:g} would be passed (${self.spent:.4f} spent, "
            f"{len(self.in_flight)} in flight); run again with a larger max_cost to run it"
        )
        for row in (index, *self.twins.get(index, ())):
            self.errors[row] = skipped
        return False

    def _estimate(self, index: int) -> float:
        if self.paid:
            return sum(self.paid) / len(self.paid)
        cost = None if self.pricer is None else self.pricer.cost(self.inputs[index])
        return cost or 0.0

    def _landed(self, index: int, result: Any, error: BaseException | None) -> None:
        self.in_flight.pop(index, None)
        if result is not None:
            self.spent += result.cost
            if not getattr(result, "cached", False):
                self.paid.append(result.cost)
        twins = self.twins.get(index, [])
        for twin in twins:  # no await from the lead's landing to its twins': a cancellation cannot split them
            if error is None:
                assert self.served_again is not None  # twins are found only for a result type that has it
                self.done[twin] = self.served_again(result)
            else:
                self.errors[twin] = error
        if self.checkpoint is not None and self.to_payload is not None:
            for row in (index, *twins):
                if error is None:
                    self.checkpoint.record(row, payload=self.to_payload(self.done[row]))
                else:
                    self.checkpoint.record(row, error=f"{type(error).__name__}: {error}")
        if self.progress is not None:
            self.progress.update(1 + len(twins))
