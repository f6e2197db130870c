"""Semantic group: ``df.aiforge.topk`` requests against n, and its agreement with a full sort under a noisy judge.

- requests: n = 100, 300 and 1 000 tickets whose urgency is a hidden number, k = 5 and 10, both methods, on the
  scripted provider answering as a perfect judge (the rows' true order). Counted: the model calls the provider
  received (``ScriptedProvider.calls``), against n·log2 k and the n(n-1)/2 pairs an all-pairs sort asks (LOTUS's
  naive sort; n² in the issue). A row passes when the true top k came back in order in fewer than n·log2 k calls.
- agreement: the same judge made noisy, wrong on 10 % of close pairs (urgencies within 5 % of the range; which pairs
  is a fixed coin per pair and seed, and a window is ranked by that same pairwise relation), 5 seeds a size.
  Measured: overlap@k (the share of the true top k returned) and Kendall's tau between the returned order and the
  true order of those rows, for both methods and for the all-pairs vote (each row's wins over every other, the
  n(n-1)/2 comparisons simulated, not asked) as the peer a full sort would give with the same judge.

- the embedded model: 12 numbers, k = 3, both methods (``embedded_rows``; not with ``quick``).

Nothing here is timed. Run it with
``.venv/bin/python -c "from bench.semantic_topk import topk_rows; print(topk_rows(True))"``.
"""

from __future__ import annotations

import functools
import math
import random
import re
import zlib
from collections.abc import Callable
from typing import Any

from bench.common import Row

GROUP = "semantic"
PROMPT = "the most urgent ticket: {ticket}"
SIZES = (100, 300, 1000)
KS = (5, 10)
NOISE = 0.10
"""The share of close pairs the noisy judge answers the wrong way round."""
CLOSE = 0.05
"""Close pairs: urgencies within this share of the range (0..100 000)."""
SEEDS = 5
_RANGE = 100_000
_WINDOW_ROW = re.compile(r"\[(\d+)\]\n(.*?)(?=\n\n\[\d+\]\n|\n\nAnswer with)", re.S)
_PAIR = re.compile(r"A:\n(.*?)\n\nB:\n(.*?)\n\nAnswer A or B\.", re.S)
_KEEP = re.compile(r"the (\d+) best rows")


def tickets(n: int, seed: int) -> Any:
    """n tickets whose hidden urgency (distinct, 0..100 000) is the number each ends with."""
    import pandas as pd

    urgency = random.Random(seed).sample(range(_RANGE), n)
    return pd.DataFrame({"ticket": [f"customer reports problem {u}" for u in urgency], "urgency": urgency})


def _urgency(text: str) -> int:
    return int(text.split()[-1])


def better(noise: float, seed: int) -> Callable[[int, int], bool]:
    """Whether urgency a beats b for the judge: the truth, flipped on a fixed ``noise`` share of close pairs."""

    def judge(a: int, b: int) -> bool:
        low, high = min(a, b), max(a, b)
        coin = zlib.crc32(f"{seed}:{low},{high}".encode()) / 2**32
        flipped = high - low <= CLOSE * _RANGE and coin < noise
        return (a > b) != flipped

    return judge


def scripted_judge(beats: Callable[[int, int], bool]) -> Callable[[list[Any]], str]:
    """The scripted reply to a topk request, every row compared by ``beats`` (a window sorted with it)."""
    import json

    order = functools.cmp_to_key(lambda a, b: -1 if beats(a, b) else 1)

    def answer(messages: list[Any]) -> str:
        text = messages[-1]["content"]
        pair = _PAIR.search(text)
        if pair is not None:
            return json.dumps({"value": "A" if beats(_urgency(pair[1]), _urgency(pair[2])) else "B"})
        rows = {_urgency(row): int(i) for i, row in _WINDOW_ROW.findall(text)}
        keep = _KEEP.search(text)
        best = sorted(rows, key=order)[: int(keep[1]) if keep else 1]
        return json.dumps({"best": [rows[u] for u in best]})

    return answer


def run_topk(frame: Any, k: int, method: str, beats: Callable[[int, int], bool]) -> tuple[list[int], int, int]:
    """The urgencies topk returned, best first, the model calls it made and its rounds."""
    from aiforge import ChatAgent
    from aiforge.providers.scripted import ScriptedProvider

    fake = ScriptedProvider(default=scripted_judge(beats))
    result = frame[["ticket"]].aiforge.topk(PROMPT, k, method=method, agent=ChatAgent(provider=fake, memory="none"))
    return frame.loc[result.index, "urgency"].tolist(), len(fake.calls), result.attrs["aiforge"].rounds


def all_pairs_vote(urgencies: list[int], k: int, beats: Callable[[int, int], bool]) -> list[int]:
    """The peer: every pair compared once (n(n-1)/2), rows ordered by their wins, ties by position."""
    wins = [0] * len(urgencies)
    for i, a in enumerate(urgencies):
        for j in range(i + 1, len(urgencies)):
            wins[i if beats(a, urgencies[j]) else j] += 1
    ranked = sorted(range(len(urgencies)), key=lambda i: (-wins[i], i))
    return [urgencies[i] for i in ranked[:k]]


def kendall_tau(order: list[int]) -> float:
    """Kendall's tau between ``order`` (best first) and the same urgencies sorted descending."""
    pairs = len(order) * (len(order) - 1) / 2
    if not pairs:
        return 1.0
    concordant = sum(order[i] > order[j] for i in range(len(order)) for j in range(i + 1, len(order)))
    return (2 * concordant - pairs) / pairs


def overlap(order: list[int], urgencies: list[int], k: int) -> float:
    """overlap@k: the share of the true top k in ``order``."""
    return len(set(order) & set(sorted(urgencies, reverse=True)[:k])) / k


def requests_rows(quick: bool) -> list[Row]:
    """Requests against n for both methods with a perfect judge: the true top k, far under n·log2 k."""
    rows = []
    for n in SIZES[:2] if quick else SIZES:
        frame = tickets(n, seed=n)
        truth = sorted(frame["urgency"], reverse=True)
        for k in KS:
            bound, pairs = n * math.log2(k), n * (n - 1) // 2
            for method in ("listwise", "pairwise"):
                got, calls, rounds = run_topk(frame, k, method, better(0.0, 0))
                exact = got == truth[:k]
                rows.append(
                    Row(
                        GROUP,
                        f"topk requests, n={n}, k={k}, {method}",
                        f"{calls} requests, {rounds} rounds",
                        f"n·log2 k = {bound:.0f}; all pairs {pairs}",
                        bound / calls,
                        "< n·log2 k, the true top k in order",
                        calls < bound and exact,
                        note=f"{calls / pairs:.2%} of all pairs; top k {'exact' if exact else 'WRONG'} "
                        "(scripted perfect judge)",
                    )
                )
    return rows


def agreement_rows(quick: bool) -> list[Row]:
    """overlap@k and Kendall tau of both methods and of the all-pairs vote, judge wrong on 10 % of close pairs."""
    rows = []
    k = 10
    for n in (300,) if quick else (300, 1000):
        scores: dict[str, list[tuple[float, float, int]]] = {"listwise": [], "pairwise": [], "all pairs": []}
        for seed in range(SEEDS):
            frame = tickets(n, seed=1000 + seed)
            urgencies = frame["urgency"].tolist()
            beats = better(NOISE, seed)
            for method in ("listwise", "pairwise"):
                got, calls, _ = run_topk(frame, k, method, beats)
                scores[method].append((overlap(got, urgencies, k), kendall_tau(got), calls))
            voted = all_pairs_vote(urgencies, k, beats)
            scores["all pairs"].append((overlap(voted, urgencies, k), kendall_tau(voted), n * (n - 1) // 2))
        mean = {m: [sum(s[i] for s in runs) / len(runs) for i in range(3)] for m, runs in scores.items()}
        peer = mean["all pairs"]
        for method in ("listwise", "pairwise"):
            ours = mean[method]
            rows.append(
                Row(
                    GROUP,
                    f"topk agreement, n={n}, k={k}, {method}, judge wrong on {NOISE:.0%} of close pairs",
                    f"overlap@{k} {ours[0]:.2f}, tau {ours[1]:.2f}, {ours[2]:.0f} requests",
                    f"all-pairs vote: overlap@{k} {peer[0]:.2f}, tau {peer[1]:.2f}, {peer[2]:.0f} requests",
                    None,
                    "",
                    None,
                    note=f"mean of {SEEDS} seeds; tau between the returned order and the true order of those rows; "
                    f"close: urgencies within {CLOSE:.0%} of the range",
                )
            )
    return rows


EMBEDDED_ROWS = 12
EMBEDDED_K = 3


def embedded_rows(quick: bool) -> list[Row]:
    """The real embedded model (SmolLM2-135M, temperature 0) picking the 3 largest of 12 numbers, both methods: every
    answer parses (constrained decoding; pairwise is scored A/B), the choice is about chance. Skipped by ``--quick``."""
    if quick:
        return []
    import pandas as pd

    from aiforge import ChatAgent

    numbers = random.Random(3).sample(range(1, 100), EMBEDDED_ROWS)
    values = pd.Series(numbers, name="number")
    rows = []
    for method in ("listwise", "pairwise"):
        agent = ChatAgent(provider="local", memory="none", TEMPERATURE=0.0, PROGRESS_BAR=False)
        result = values.aiforge.topk("the largest number: {value}", EMBEDDED_K, method=method, agent=agent)
        got, run = result["number"].tolist(), result.attrs["aiforge"]
        rows.append(
            Row(
                GROUP,
                f"topk on the embedded model, {EMBEDDED_ROWS} numbers, k={EMBEDDED_K}, {method}",
                f"overlap@{EMBEDDED_K} {overlap(got, numbers, EMBEDDED_K):.2f}, tau {kendall_tau(got):.2f}, "
                f"{run.requests} requests",
                f"chance: overlap@{EMBEDDED_K} {EMBEDDED_K / EMBEDDED_ROWS:.2f}, tau 0",
                None,
                "",
                None,
                note="SmolLM2-135M cannot compare numbers: the measure is that every answer parsed and the calls "
                "stayed bounded, not the quality of the choice",
            )
        )
    return rows


def topk_rows(quick: bool) -> list[Row]:
    """The semantic group's topk measures (see the module note)."""
    return requests_rows(quick) + agreement_rows(quick) + embedded_rows(quick)
