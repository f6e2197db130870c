"""A ``topk`` run's rounds of comparisons: each round one ``run_batch`` (its failed comparisons asked again once),
and ``TopKRun``, the report of every round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiforge.batch.results import BatchFailure, BatchResult
from aiforge.batch.resume import checkpoint_part
from aiforge.core.errors import BudgetExceededError, ComparisonFailedError
from aiforge.core.report import OperationReport

if TYPE_CHECKING:
    from aiforge.chat.agent import ChatAgent


@dataclass(slots=True, repr=False)
class TopKRun(OperationReport):
    """What ``topk`` did: the rows it chose (positions, best first) and every batch of comparisons it ran; an
    ``OperationReport`` (``core.report``)."""

    title = "Top-k"

    method: str
    k: int
    rows: int
    window: int | None
    """The rows per listwise request (None for pairwise)."""
    positions: list[int] = field(default_factory=list, repr=False)
    """The chosen rows' positions in the input, best first."""
    rounds: int = 0
    """Rounds of comparisons, each waiting on the one before: a listwise pass over the candidates, a pairwise level
    of the knockout or one step of a replay."""
    batches: list[BatchResult] = field(default_factory=list, repr=False)
    """The ``run_batch`` of each round in the order they ran: one a round, two for a listwise round with windows of
    two sizes (each size its own answer type), and one per re-ask of failed comparisons."""

    @property
    def comparisons(self) -> int:
        """Comparisons asked (listwise: windows ranked), including those the cache or dedup answered."""
        return sum(len(b) for b in self.batches)

    @property
    def requests(self) -> int:
        """Comparisons that went to the model (not the cache, not a duplicate, not skipped by ``max_cost``)."""
        return sum(len(b.results) - b.cached + len(b.failed) - len(b.skipped) for b in self.batches)

    @property
    def failed(self) -> list[BatchFailure]:
        """Comparisons that failed once, each asked again (a comparison failing twice raises
        ``ComparisonFailedError``): the ranking does not miss them."""
        return [failure for batch in self.batches for failure in batch.failed]

    @property
    def total_cost(self) -> float:
        """USD spent over every round."""
        return sum(b.total_cost for b in self.batches)

    @property
    def total_tokens(self) -> int:
        """Input and output tokens over every round."""
        return sum(b.total_tokens for b in self.batches)


class Asker:
    """Runs one round of comparisons as one ``run_batch``: failed ones asked again once, then an error."""

    def __init__(self, agent: ChatAgent, concurrency: int, options: dict[str, Any], run: TopKRun, index: Any) -> None:
        self.agent, self.concurrency, self.run, self.index = agent, concurrency, run, index
        self.max_cost: float | None = options.pop("max_cost", None)
        self.checkpoint: str | None = options.pop("checkpoint", None)
        self.options = options

    def ask(self, prompts: list[str], output: Any, shown: list[list[int]]) -> list[Any]:
        """Each prompt's validated answer, in order; ``shown[i]`` are the positions of the rows prompt i lists."""
        answers: list[Any] = [None] * len(prompts)
        pending, failures = list(range(len(prompts))), []
        for _ in range(2):  # the round, then its failed comparisons once more
            batch = self._batch([prompts[i] for i in pending], output)
            for position, result in zip(batch.indices, batch.results, strict=True):
                answers[pending[position]] = result.output
            if batch.skipped:
                raise BudgetExceededError(
                    f"topk: max_cost=${self.max_cost} reached after {self.run.requests} requests "
                    f"(${self.run.total_cost:.6f}); the top {self.run.k} is not known. Raise max_cost, "
                    "or pass cache=True so a rerun pays only for what is left."
                )
            failures = [(pending[f.position], f.error) for f in batch.failed]
            pending = [prompt for prompt, _ in failures]
            if not pending:
                return answers
        prompt, error = failures[0]
        rows = ", ".join(map(repr, self._labels(shown[prompt])))
        raise ComparisonFailedError(
            f"topk: the comparison of rows {rows} failed twice ({len(failures)} in this round): "
            f"{type(error).__name__}: {error}",
            self.run,
        ) from error

    def _batch(self, prompts: list[str], output: Any) -> BatchResult:
        options = dict(self.options)
        if self.max_cost is not None:
            options["max_cost"] = max(0.0, self.max_cost - self.run.total_cost)
        if self.checkpoint is not None:  # each round's batch a part of the one file
            options["checkpoint"] = checkpoint_part(self.checkpoint, f"round{len(self.run.batches) + 1}", "topk")
        batch: BatchResult = self.agent.run_batch(
            prompts, self.concurrency, max(len(prompts), 1), output=output, **options
        )
        self.run.batches.append(batch)
        return batch

    def _labels(self, positions: list[int]) -> list[Any]:
        return positions if self.index is None else [self.index[p] for p in positions]
