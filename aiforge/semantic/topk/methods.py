"""``topk``'s two methods, listwise windows and a pairwise tournament, and the requests each makes.

Each asks its comparisons a round at a time through an ``Asker``; see ``aiforge.semantic.topk`` for how they rank.
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Callable, Sequence
from typing import Any

from aiforge.semantic.topk.prompts import COMPARISON, pair_prompt, ranking_type, window_prompt
from aiforge.semantic.topk.rounds import Asker

DEFAULT_WINDOW = 10
"""Rows per listwise request when k is small (a window holds at least 2k rows)."""
_SHUFFLE_SEED = 25
"""Seeds the order rows are listed in a window: fixed, so a run is repeatable."""


def listwise_calls(n: int, k: int, window: int = DEFAULT_WINDOW) -> int:
    """Requests a listwise ``topk`` of ``n`` rows makes (every comparison answered first time): ``Σ ⌈c_r / w⌉``.

    >>> listwise_calls(300, 5)
    60
    """
    w, remaining, calls = window_size(window, k), n, 0
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


def window_size(window: int, k: int) -> int:
    """Rows per listwise request: more than k, so each window's top k leaves rows behind (at least half)."""
    return max(window, 2 * k)


def listwise(texts: Sequence[str], criterion: str, k: int, w: int, asker: Asker) -> list[int]:
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


def _ask_windows(asker: Asker, prompts: list[str], windows: list[list[int]], keeps: list[int]) -> list[Any]:
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


def pairwise(texts: Sequence[str], criterion: str, k: int, asker: Asker) -> list[int]:
    """Tournament sort: a knockout a level at a time, then the winner's path replayed for each next row."""
    tournament = _Tournament(len(texts), lambda pairs: _compare(asker, texts, criterion, pairs))
    wanted = min(k, len(texts))
    return [tournament.pop_best(replay=i < wanted - 1) for i in range(wanted)]


def _compare(asker: Asker, texts: Sequence[str], criterion: str, pairs: list[tuple[int, int]]) -> list[int]:
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
