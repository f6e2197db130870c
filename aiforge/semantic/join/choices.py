"""The ``"candidates"`` strategy: each distinct left row asked ONE multiple-choice question over its nearest right
rows by embedding (numbered, "none" allowed as an empty list, several numbers when ``multiple=True``), not a yes/no
question per pair.

The depth (how many candidates a question lists) is ``candidates=`` when it is a number. With ``"auto"`` it is
chosen for ``target_recall`` from a sample, as ``dedup``'s threshold is: ``SAMPLE_ROWS`` left rows (a fixed seed,
the same rows on every run) are asked over their ``MAX_DEPTH`` nearest candidates, the ranks of the candidates they
match are read, and the depth is the smallest that holds ``target_recall`` of those matches (with no more left rows
than ``SAMPLE_ROWS``, every row is asked at ``MAX_DEPTH`` and no depth is chosen). The sample's answers
are kept (its rows are not asked again), so the sample costs tokens, not requests: n distinct left rows ask n
questions. What the sample sees is the matches within ``MAX_DEPTH``; a match the embeddings rank deeper is missed
by both, and the report's ``estimated_recall`` says so (it is of the candidates, not of the embeddings).

An answer is a list of numbers: a number that names no listed candidate is dropped and counted
(``JoinReport.dropped_numbers``), as is every number after the first when ``multiple=False``.
"""

from __future__ import annotations

import math
import random
from typing import Any

from aiforge.semantic.join.asker import Asker, embedded
from aiforge.semantic.join.candidates import DEFAULT_K, nearest
from aiforge.semantic.join.report import JoinFailure
from aiforge.semantic.join.rows import DistinctRows, expanded
from aiforge.semantic.join.template import PairTemplate

SAMPLE_ROWS = 40
"""Left rows of the sample that chooses the depth. On the 200 x 40 bench set (``bench/semantic_join.py``) about 36
of them have a match: enough to see where 95 % of the matches rank, and each is asked once either way."""
MAX_DEPTH = 20
"""Candidates listed to the sample's rows: 20 short right rows are a few hundred tokens."""
TARGET_RECALL = 0.95
_SEED = 32
"""The sample's seed: the same rows on every run, so a cached or checkpointed join asks the same questions."""


def chosen_pairs(
    asker: Asker,
    template: PairTemplate,
    lefts: DistinctRows,
    rights: DistinctRows,
    depth: int | str,
    multiple: bool,
    target_recall: float,
) -> set[tuple[int, int]]:
    """The pairs of positions the left rows' multiple-choice questions matched (module docstring)."""
    if not lefts.values or not rights.values:
        return set()
    left_vectors, right_vectors = embedded(asker, template, lefts, rights)
    deepest = min(MAX_DEPTH if depth == "auto" else int(depth), len(rights.values))
    near: list[list[int]] = nearest(left_vectors, right_vectors, deepest).tolist()
    report, ranks = asker.report, dict[int, list[int]]()
    if depth == "auto" and len(lefts.values) <= SAMPLE_ROWS:  # a sample would be every row: ask them all deep
        report.k, report.k_max = deepest, deepest
        report.depth_how = f"every left row ({len(lefts.values)} <= SAMPLE_ROWS) asked at depth {deepest}"
    elif depth == "auto":
        sample = sorted(random.Random(_SEED).sample(range(len(lefts.values)), SAMPLE_ROWS))
        ranks = _asked(asker, template, lefts, rights, near, sample, deepest, multiple, sample=True)
        report.k_max = deepest
        report.k, report.estimated_recall, report.recall_interval, report.depth_how = chosen_depth(
            [rank for chosen in ranks.values() for rank in chosen], deepest, target_recall, len(ranks)
        )
    else:
        report.k, report.depth_how = deepest, f"candidates={depth} (given)"
    rest = [row for row in range(len(lefts.values)) if row not in ranks]
    ranks |= _asked(asker, template, lefts, rights, near, rest, report.k or deepest, multiple)
    pairs: set[tuple[int, int]] = set()
    for row, chosen in ranks.items():
        for rank in chosen:
            pairs |= expanded(lefts.members[row], rights.members[near[row][rank - 1]])
    return pairs


def chosen_depth(
    ranks: list[int], deepest: int, target_recall: float, asked: int
) -> tuple[int, float | None, tuple[float, float] | None, str]:
    """The smallest depth holding ``target_recall`` of the matches' ``ranks`` (1 = nearest): depth, the recall it
    keeps of them, its 95 % Wilson interval, and a sentence saying how it was chosen.

    >>> chosen_depth([1, 1, 1, 2, 7], 20, 0.8, 6)[:2]
    (2, 0.8)
    """
    if not ranks:
        depth = min(DEFAULT_K, deepest)
        return depth, None, None, f"no match among {asked} sampled rows at depth {deepest}: depth {depth} by default"
    ordered = sorted(ranks)
    depth = ordered[max(math.ceil(target_recall * len(ordered)), 1) - 1]
    kept = sum(rank <= depth for rank in ordered)
    recall = kept / len(ordered)
    how = (
        f"{len(ordered)} matches of {asked} sampled rows asked at depth {deepest}: {kept} within depth {depth} "
        f"(target_recall={target_recall})"
    )
    return depth, recall, wilson(kept, len(ordered)), how


def wilson(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95 % by default)."""
    share, z2 = successes / trials, z * z
    centre = (share + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * math.sqrt(share * (1 - share) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def _asked(
    asker: Asker,
    template: PairTemplate,
    lefts: DistinctRows,
    rights: DistinctRows,
    near: list[list[int]],
    rows: list[int],
    depth: int,
    multiple: bool,
    *,
    sample: bool = False,
) -> dict[int, list[int]]:
    """Each of ``rows`` asked over its first ``depth`` candidates (identical questions once): the ranks it chose.

    A row whose question failed is left out; outside the sample it is a ``JoinFailure`` (the sample's failed rows
    are asked again with the rest)."""
    asked: dict[str, list[int]] = {}
    for row in rows:
        items = [rights.values[rank] for rank in near[row][:depth]]
        asked.setdefault(template.choice_question(lefts.values[row], items, multiple), []).append(row)
    if not asked:
        return {}
    batch = asker.ask(list(asked), list[int], sample=sample)
    groups, ranks = list(asked.values()), dict[int, list[int]]()
    for position, result in zip(batch.indices, batch.results, strict=True):
        chosen = _valid(result.output, min(depth, len(near[groups[position][0]])), multiple, asker)
        ranks |= {row: chosen for row in groups[position]}
    if not sample:
        for failure in batch.failed:
            asker.report.failed += [
                JoinFailure(lefts.labels[i], None, failure.error)
                for row in groups[failure.position]
                for i in lefts.members[row]
            ]
    return ranks


def _valid(numbers: Any, listed: int, multiple: bool, asker: Asker) -> list[int]:
    """The answer's numbers that name a listed candidate, each once (the first only with ``multiple=False``); the
    others counted on the report."""
    given = list(numbers) if isinstance(numbers, list | tuple) else []
    valid = [n for n in dict.fromkeys(given) if isinstance(n, int) and 1 <= n <= listed]
    kept = valid if multiple else valid[:1]
    asker.report.dropped_numbers += len(dict.fromkeys(given)) - len(kept)
    return kept
