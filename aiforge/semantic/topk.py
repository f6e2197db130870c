"""``topk``: the k rows that best satisfy a prompt, by model comparisons in a tournament, never n² calls.

Two methods, both deterministic for a deterministic model. The agent built when ``agent=None`` sends TEMPERATURE=0
unless the settings give one; an agent you pass is used as it is (give it TEMPERATURE=0 for a repeatable run).

- ``"listwise"`` (the default; RankGPT's finding that a model ranks a window of passages at once well): the
  candidates are split into windows of about ``w = max(window, 2k)`` rows; one request per window returns the ids of
  its best ``min(k, size)`` rows, best first; the kept rows are the next round's candidates, until one window holds
  them all and its ranking is the answer. A window holds more than k rows, so every round at least halves the
  candidates: ``calls = Σ_r ⌈c_r / w⌉`` with ``c_0 = n`` and ``c_{r+1} = k·⌈c_r / w⌉`` (``listwise_calls``), about
  ``n / (w - k)``: 60 for n = 300, k = 5.
- ``"pairwise"`` (tournament sort; LOTUS offers quickselect and a heap over pairwise comparisons, whose quickselect
  is n² in its worst case): a knockout tournament finds the best row in ``n - 1`` comparisons, played a level at a
  time (each level one concurrent batch); each next row replays only the winner's path, at most ``⌈log2 n⌉``
  comparisons in a row. ``calls ≤ n - 1 + (k - 1)·⌈log2 n⌉`` (``pairwise_calls``); a pair is never asked twice.

Position bias: a window lists its rows in a fixed pseudo-random order (seeded, so the same data gives the same
windows), so the rows that come first in the frame are not always shown first; in a pairwise comparison which row
is shown as A is a fixed coin flip per pair (a CRC of the two positions), so neither order is favoured. Each
comparison is asked once, in one order.

Failures: a reply that does not parse (a ranking with a repeated or unknown id, an answer other than A or B) goes
back to the model with what was wrong (the agent's ``output_retries``), and transport errors are retried by the
provider (``MAX_RETRIES``). A comparison still failing after that is asked once more in a batch of its own; a second
failure raises ``ComparisonFailedError`` naming the rows it compared: a row is never dropped, nor guessed at.
A comparison ``max_cost`` did not start raises ``BudgetExceededError``. ``cache=True`` makes the rerun free for every
comparison already answered.
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiforge.batch.options import BATCH_ARGUMENTS, batch_options
from aiforge.batch.results import BatchFailure, BatchResult
from aiforge.chat.operation_agent import operation_agent
from aiforge.core.errors import BudgetExceededError, ComparisonFailedError
from aiforge.core.report import SharedOnDeepcopy
from aiforge.core.templates import VALUE_FIELD, batch_prompts
from aiforge.core.types import UsageError
from aiforge.semantic.topk_prompts import COMPARISON, pair_prompt, ranking_type, row_text, window_prompt

if TYPE_CHECKING:
    import pandas as pd

    from aiforge.chat.agent import ChatAgent

METHODS = ("listwise", "pairwise")
RANK_COLUMN = "rank"
"""The column of each chosen row's rank, 1 for the best."""
DEFAULT_WINDOW = 10
"""Rows per listwise request when k is small (a window holds at least 2k rows)."""
TOPK_OPTIONS = ("cache", "checkpoint", "restart", "max_cost", "dedup")
"""``run_batch`` options ``topk`` passes to every round; the rest of them (``output``, ``pack``...) do not apply."""
_SHUFFLE_SEED = 25
"""Seeds the order rows are listed in a window: fixed, so a run is repeatable."""


@dataclass(slots=True)
class TopKRun(SharedOnDeepcopy):
    """What ``topk`` did: the rows it chose (positions, best first) and every batch of comparisons it ran."""

    method: str
    k: int
    rows: int
    window: int | None
    """The rows per listwise request (None for pairwise)."""
    positions: list[int] = field(default_factory=list)
    """The chosen rows' positions in the input, best first."""
    rounds: int = 0
    """Rounds of comparisons, each waiting on the one before: a listwise pass over the candidates, a pairwise level
    of the knockout or one step of a replay."""
    batches: list[BatchResult] = field(default_factory=list)
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

    def __repr__(self) -> str:
        return (
            f"TopKRun(method={self.method!r}, k={self.k}, rows={self.rows}, rounds={self.rounds}, "
            f"requests={self.requests}, total_cost={self.total_cost:.6f}, total_tokens={self.total_tokens})"
        )


def listwise_calls(n: int, k: int, window: int = DEFAULT_WINDOW) -> int:
    """Requests a listwise ``topk`` of ``n`` rows makes (every comparison answered first time): ``Σ ⌈c_r / w⌉``.

    >>> listwise_calls(300, 5)
    60
    """
    w, remaining, calls = _window(window, k), n, 0
    while remaining > 0:
        windows = math.ceil(remaining / w)
        calls += windows
        if windows == 1:
            return calls
        remaining = k * windows
    return calls


def pairwise_calls(n: int, k: int) -> int:
    """The most requests a pairwise ``topk`` of ``n`` rows makes: ``n - 1 + (min(k, n) - 1)·⌈log2 n⌉``.

    >>> pairwise_calls(300, 5)
    335
    """
    if n < 2:
        return 0
    return n - 1 + (min(k, n) - 1) * math.ceil(math.log2(n))


def rank_rows(
    data: Any,
    prompt: str,
    k: int,
    *,
    method: str = "listwise",
    agent: ChatAgent | None = None,
    window: int = DEFAULT_WINDOW,
    concurrency: int = 10,
    **settings: Any,
) -> TopKRun:
    """The ``k`` rows of ``data`` (a DataFrame or Series) that best satisfy ``prompt``, best first, as a ``TopKRun``.

    ``prompt`` is a row template naming the fields compared; k above the number of rows ranks them all. Keywords in
    ``TOPK_OPTIONS`` go to every round's ``run_batch``; the rest configure the agent built when ``agent=None``::

        run = rank_rows(tickets, "the most urgent ticket: {ticket}", 3, provider=fake)
        tickets.iloc[run.positions]
    """
    _check_arguments(prompt, k, method, window)
    _check_rank_column(data)
    options = _options(settings)
    rows = batch_prompts(data, prompt)  # a UsageError for a field naming no column, before any request
    assert rows.template is not None and rows.values is not None  # a str prompt always gives both
    texts = [row_text(values, rows.template) for values in rows.values]
    run = TopKRun(method, k, len(texts), _window(window, k) if method == "listwise" else None)
    asker = _Asker(_agent(agent, settings), concurrency, options, run, rows.index)
    criterion = rows.template.shown()
    if method == "listwise":
        assert run.window is not None
        run.positions = _listwise(texts, criterion, k, run.window, asker)
    else:
        run.positions = _pairwise(texts, criterion, k, asker)
    return run


def _check_arguments(prompt: Any, k: Any, method: Any, window: Any) -> None:
    if not isinstance(prompt, str) or not prompt.strip():
        raise UsageError(
            f"topk: prompt= is a row template such as 'the most urgent ticket: {{ticket}}', got {prompt!r}"
        )
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise UsageError(f"topk: k is the number of rows to return, an integer >= 1, got {k!r}")
    if method not in METHODS:
        raise UsageError(f"topk: method= is one of {', '.join(map(repr, METHODS))}, not {method!r}")
    if isinstance(window, bool) or not isinstance(window, int) or window < 2:
        raise UsageError(f"topk: window= is the rows per listwise request, an integer >= 2, got {window!r}")


def _window(window: int, k: int) -> int:
    """Rows per listwise request: more than k, so each window's top k leaves rows behind (at least half)."""
    return max(window, 2 * k)


def _options(settings: dict[str, Any]) -> dict[str, Any]:
    """``run_batch``'s options taken out of ``settings``; one that does not apply to topk is a UsageError."""
    other = [name for name in BATCH_ARGUMENTS if name in settings and name not in TOPK_OPTIONS]
    if other:
        raise UsageError(
            f"topk: {other[0]}= does not apply (topk sets its own output and prompts); "
            f"of run_batch's options it takes {', '.join(f'{name}=' for name in TOPK_OPTIONS)}"
        )
    return batch_options(settings, TOPK_OPTIONS)


def _agent(agent: ChatAgent | None, settings: dict[str, Any]) -> ChatAgent:
    """The agent given, or one built from ``settings`` at TEMPERATURE=0 where the provider sends a temperature."""
    built = operation_agent(agent, settings)
    if agent is not None or "TEMPERATURE" in settings:
        return built
    # Greedy decoding makes a run repeatable; a provider that never sends a temperature would warn if one were set.
    if built.provider.temperature_unsent is not None or built.settings.TEMPERATURE == 0:
        return built
    return operation_agent(None, {**settings, "TEMPERATURE": 0})


class _Asker:
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
        if self.checkpoint is not None:
            path = Path(self.checkpoint)  # one file per round: a checkpoint holds one batch
            options["checkpoint"] = path.with_name(f"{path.stem}.round{len(self.run.batches) + 1}{path.suffix}")
        batch: BatchResult = self.agent.run_batch(
            prompts, self.concurrency, max(len(prompts), 1), output=output, **options
        )
        self.run.batches.append(batch)
        return batch

    def _labels(self, positions: list[int]) -> list[Any]:
        return positions if self.index is None else [self.index[p] for p in positions]


def _listwise(texts: Sequence[str], criterion: str, k: int, w: int, asker: _Asker) -> list[int]:
    """Windows of the candidates ranked concurrently, each keeping its top k, until one window ranks them all."""
    candidates = list(range(len(texts)))
    if not candidates:  # no rows: no window to rank (``_windows`` of none is none, and the loop would never end)
        return []
    while True:
        windows = _windows(candidates, w)
        asker.run.rounds += 1
        keeps = [min(k, len(rows)) for rows in windows]
        prompts = [
            window_prompt(criterion, [texts[p] for p in rows], keep) for rows, keep in zip(windows, keeps, strict=True)
        ]
        outputs = _ask_windows(asker, prompts, windows, keeps)
        kept = [rows[i - 1] for rows, output in zip(windows, outputs, strict=True) for i in output.best]
        if len(windows) == 1:
            return kept
        candidates = kept


def _ask_windows(asker: _Asker, prompts: list[str], windows: list[list[int]], keeps: list[int]) -> list[Any]:
    """Each window's ranking; windows of one shape share one batch (its output type is the window's ids)."""
    outputs: list[Any] = [None] * len(prompts)
    shapes = sorted({(len(rows), keep) for rows, keep in zip(windows, keeps, strict=True)})
    for size, keep in shapes:
        chosen = [i for i, rows in enumerate(windows) if (len(rows), keep) == (size, keeps[i])]
        answers = asker.ask([prompts[i] for i in chosen], ranking_type(size, keep), [windows[i] for i in chosen])
        for i, answer in zip(chosen, answers, strict=True):
            outputs[i] = answer
    return outputs


def _windows(candidates: list[int], w: int) -> list[list[int]]:
    """The candidates in a seeded shuffled order, cut into ⌈c / w⌉ windows of nearly equal size."""
    order = sorted(candidates)
    random.Random(f"{_SHUFFLE_SEED}:{len(order)}").shuffle(order)
    count = math.ceil(len(order) / w)
    return [order[i::count] for i in range(count)]


def _pairwise(texts: Sequence[str], criterion: str, k: int, asker: _Asker) -> list[int]:
    """Tournament sort: a knockout a level at a time, then the winner's path replayed for each next row."""
    tournament = _Tournament(len(texts), lambda pairs: _compare(asker, texts, criterion, pairs))
    wanted = min(k, len(texts))
    return [tournament.pop_best(replay=i < wanted - 1) for i in range(wanted)]


def _compare(asker: _Asker, texts: Sequence[str], criterion: str, pairs: list[tuple[int, int]]) -> list[int]:
    """The winner of each pair; which row is shown as A is a fixed coin flip per pair (a CRC of the positions)."""
    asker.run.rounds += 1
    shown = [(a, b) if zlib.crc32(f"{a},{b}".encode()) % 2 else (b, a) for a, b in pairs]
    prompts = [pair_prompt(criterion, texts[first], texts[second]) for first, second in shown]
    answers = asker.ask(prompts, COMPARISON, [list(pair) for pair in shown])
    return [first if answer == "A" else second for (first, second), answer in zip(shown, answers, strict=True)]


class _Tournament:
    """A knockout bracket over positions 0..n-1 whose matches are decided by ``play`` (a batch of pairs)."""

    def __init__(self, n: int, play: Callable[[list[tuple[int, int]]], list[int]]) -> None:
        self.leaves = 1 << max(0, math.ceil(math.log2(max(n, 1))))
        self.play = play
        self.decided: dict[tuple[int, int], int] = {}
        """Each pair asked, by (lower, higher) position: a replay never asks a pair again."""
        self.nodes: list[int | None] = [None] * (2 * self.leaves)
        self.nodes[self.leaves : self.leaves + n] = list(range(n))
        level = list(range(max(1, self.leaves // 2), self.leaves))
        while level:  # one batch per level, bottom up
            self._decide(level)
            level = sorted({node // 2 for node in level if node > 1})

    def pop_best(self, replay: bool = True) -> int:
        """The best remaining position; its leaf is emptied and (``replay``) its path to the root played again."""
        best = self.nodes[1]
        assert best is not None
        node = self.leaves + best
        self.nodes[node] = None
        while replay and node > 1:
            node //= 2
            self._decide([node])
        return best

    def _decide(self, nodes: list[int]) -> None:
        matches = {}
        for node in nodes:
            left, right = self.nodes[2 * node], self.nodes[2 * node + 1]
            if left is None or right is None:
                self.nodes[node] = right if left is None else left
            else:
                matches[node] = (min(left, right), max(left, right))
        unknown = sorted({pair for pair in matches.values() if pair not in self.decided})
        if unknown:
            self.decided.update(zip(unknown, self.play(unknown), strict=True))
        for node, pair in matches.items():
            self.nodes[node] = self.decided[pair]


def ranked_frame(data: pd.DataFrame | pd.Series, positions: list[int]) -> pd.DataFrame:
    """The rows of ``data`` at ``positions`` in that order, on their index, with ``rank`` 1..len appended.

    A Series becomes a frame of its values (its name, or ``value``) and ``rank``; a frame that has a ``rank`` column
    already is a UsageError rather than losing it (``rank_rows`` checks it before any request).
    """
    import pandas

    if isinstance(data, pandas.Series):
        data = data.to_frame(data.name if data.name is not None else VALUE_FIELD)
    frame: pd.DataFrame = data
    _check_rank_column(frame)
    ranked = frame.iloc[positions].copy()
    ranked[RANK_COLUMN] = range(1, len(positions) + 1)
    return ranked


def _check_rank_column(data: Any) -> None:
    """Returns if the rows have no ``rank`` column for ``topk``'s to overwrite; a UsageError before any request."""
    columns = getattr(data, "columns", None)
    if columns is not None and RANK_COLUMN in columns:
        raise UsageError(
            f"topk adds a {RANK_COLUMN!r} column and the frame has one: rename it first, "
            f"e.g. df.rename(columns={{{RANK_COLUMN!r}: 'old_rank'}})"
        )
