"""``dedup(threshold="auto")``: the model labels a stratified sample of candidate pairs, and the sample sets the band.

1. Candidates: each distinct text's ``NEIGHBOURS`` nearest texts at a similarity of ``FLOOR`` or more (rows of the
   similarity matrix ``TILE_FLOATS`` at a time, never n x n); each pair once. A duplicate pair below the floor, or
   outside both texts' nearest, is not a candidate: recall is estimated over the candidates.
2. Sample: the candidates are binned by similarity (``BINS`` equal bins from ``FLOOR`` to 1) and up to ``sample``
   pairs are drawn, as evenly over the non-empty bins as they hold (seeded: the same texts draw the same pairs, so
   a cache answers a second run). Each is one ``bool`` row of a ``run_batch`` over the pair prompt (cached,
   checkpointable, budgeted); a failed row is left out of the estimates and counted.
3. Threshold: a labelled pair stands for ``N_b / n_b`` candidates of its bin (``N_b`` candidates, ``n_b`` answered).
   The weighted recall of threshold t is the weight of duplicates at or above t over the weight of all labelled
   duplicates; the threshold is the largest t (a labelled duplicate's similarity) reaching ``target_recall``.
4. Bound: pairs at or above the bound are accepted without asking, those in ``[threshold, bound)`` are confirmed by
   the model as ``confirm=`` does. The bound is just above the most similar labelled non-duplicate (the
   threshold itself when no labelled pair at or above it is a non-duplicate), where the sample saw precision 1,
   when at least ``SURE`` answered duplicates lie above it; else 1.0: every pair from the threshold up is asked.
5. Estimates: precision (of the pairs kept: accepted ones, and confirmed ones taking the model's answer as right)
   and recall at the threshold, each the median with a 95 % interval (2.5th and 97.5th percentiles) of
   ``RESAMPLES`` simulations: a bin's answered pairs count as answered, and its unanswered ones are drawn from Jeffreys
   posteriors: the share of duplicates ``Beta(k + 1/2, n - k + 1/2)`` (k duplicates of n answered), and in the
   bin holding the threshold (or the bound) the share of its duplicates (non-duplicates) above it likewise. A bin
   whose few answers held no duplicate may still hold some: a thin sample gives a wide interval, a census a point,
   and a median recall below ``target_recall`` (the weighted one reached it) says the sample was too thin for the
   target: more ``sample=`` pairs narrow it.

No labelled duplicate at all: the threshold is 1.0 (only identical vectors merge) and no estimate is given.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiforge.semantic.dedup_request import PAIR_FIELDS, DedupRequest
from aiforge.semantic.similarity import unit_rows

if TYPE_CHECKING:
    import numpy as np

    from aiforge.batch.results import BatchResult
    from aiforge.chat.agent import ChatAgent

FLOOR = 0.4
"""Candidate pairs have at least this cosine similarity (unrelated sentences sit below it on embedding models)."""
NEIGHBOURS = 10
"""Nearest texts per text among the candidates."""
BINS = 12
"""Similarity bins of ``[FLOOR, 1]`` the sample is spread over."""
RESAMPLES = 2000
"""Draws of the intervals' simulation."""
SURE = 20
"""Answered duplicates, and no non-duplicate, at or above the bound for pairs there to be accepted unasked."""
TILE_FLOATS = 4 * 1024 * 1024
"""Similarities computed at once (16 MiB of float32)."""
SEED = 0

PairLabeler = Callable[[list[tuple[int, int]]], "tuple[list[bool | None], BatchResult]"]
"""Pairs of text numbers -> the model's answer to each (None: the row failed) and the batch that asked."""


@dataclass
class AutoEstimate:
    """How ``threshold="auto"`` chose its band: the sample, its answers, the estimates (``DedupReport.auto``)."""

    target_recall: float
    candidates: int
    """Candidate pairs (each text's nearest at ``FLOOR`` or more)."""
    sample: int
    """Pairs drawn and asked to the model."""
    labelled: int = 0
    """Sampled pairs the model answered (the rest failed, left out of the estimates)."""
    positives: int = 0
    """Answered pairs the model said are duplicates."""
    threshold: float = 1.0
    bound: float = 1.0
    """Pairs at or above are accepted without asking; ``[threshold, bound)`` are confirmed by the model."""
    weighted_recall: float | None = None
    """The recall the threshold was chosen on: answered duplicates at or above it, weighted, over all of them."""
    recall: float | None = None
    """Of the duplicates among the candidates: the simulation's median (module note)."""
    recall_interval: tuple[float, float] | None = None
    precision: float | None = None
    """Of the candidate pairs kept (the model's confirmations taken as right): the simulation's median."""
    precision_interval: tuple[float, float] | None = None
    reused: int = 0
    """Confirmation pairs the sample had answered already (no second request)."""
    sampling: BatchResult | None = field(default=None, repr=False)
    """The ``run_batch`` over the sampled pairs."""
    answers: dict[tuple[int, int], bool] = field(default_factory=dict, repr=False)
    """The sample's answers by pair of text numbers (earlier, later)."""


def candidate_pairs(unit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs ``(earlier, later)`` of text numbers (int64, n x 2) that are among either's ``NEIGHBOURS`` nearest at
    ``FLOOR`` or more, and their similarities (float32), in order of the pair."""
    import numpy as np

    count = len(unit)
    if count < 2:
        return np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.float32)
    keep = min(NEIGHBOURS, count - 1)
    rows = max(1, TILE_FLOATS // count)
    found: list[np.ndarray] = []
    for start in range(0, count, rows):
        block = unit[start : start + rows] @ unit.T
        block[np.arange(len(block)), np.arange(start, start + len(block))] = -np.inf  # not itself
        nearest = np.argpartition(-block, keep - 1, axis=1)[:, :keep]
        similar = np.take_along_axis(block, nearest, axis=1)
        mine = np.repeat(np.arange(start, start + len(block)), keep)
        close = similar.ravel() >= FLOOR
        found.append(np.stack([mine[close], nearest.ravel()[close]], axis=1))
    pairs = np.sort(np.concatenate(found), axis=1)
    pairs = np.unique(pairs, axis=0)
    similarity = np.einsum("ij,ij->i", unit[pairs[:, 0]], unit[pairs[:, 1]]).astype(np.float32)
    return pairs.astype(np.int64), similarity


def bins_of(similarity: np.ndarray) -> np.ndarray:
    """Each similarity's bin, 0 to ``BINS - 1``."""
    import numpy as np

    width = (1.0 - FLOOR) / BINS
    return np.clip(((similarity - FLOOR) / width).astype(np.int64), 0, BINS - 1)


def stratified_sample(bins: np.ndarray, size: int) -> np.ndarray:
    """Positions of up to ``size`` candidates, spread as evenly over the bins as they hold, sorted (seeded)."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    held = np.bincount(bins, minlength=BINS)
    quota = np.zeros(BINS, dtype=np.int64)
    left = min(size, int(held.sum()))
    while left > 0:  # water-filling: an even share per bin with room, the rest to those still holding pairs
        room = np.flatnonzero(quota < held)
        share = max(1, left // len(room))
        for b in room:
            take = min(share, int(held[b] - quota[b]), left)
            quota[b] += take
            left -= take
            if left == 0:
                break
    chosen = [rng.choice(np.flatnonzero(bins == b), int(quota[b]), replace=False) for b in range(BINS) if quota[b]]
    return np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, dtype=np.int64)


def sample_band(unit: np.ndarray, target_recall: float, sample: int, label: PairLabeler) -> AutoEstimate:
    """The threshold and bound for ``target_recall`` from the model's answers on a stratified sample (module note)."""
    import numpy as np

    pairs, similarity = candidate_pairs(unit)
    bins = bins_of(similarity)
    drawn = stratified_sample(bins, sample)
    estimate = AutoEstimate(target_recall, len(pairs), len(drawn))
    if not len(drawn):
        return estimate
    answers, estimate.sampling = label([(int(a), int(b)) for a, b in pairs[drawn]])
    answered = np.array([answer is not None for answer in answers], dtype=bool)
    said = np.array([answer is True for answer in answers], dtype=bool)
    estimate.answers = {
        (int(a), int(b)): bool(answer)
        for (a, b), answer in zip(pairs[drawn], answers, strict=True)
        if answer is not None
    }
    estimate.labelled, estimate.positives = int(answered.sum()), int(said.sum())
    sims, labels, where = similarity[drawn][answered], said[answered], bins[drawn][answered]
    weight = (np.bincount(bins, minlength=BINS) / np.maximum(np.bincount(where, minlength=BINS), 1))[where]
    if not labels.any():
        return estimate
    order = np.argsort(-sims[labels], kind="stable")
    reached = np.cumsum(weight[labels][order]) >= target_recall * weight[labels].sum() - 1e-9
    estimate.threshold = math.floor(float(sims[labels][order][int(np.argmax(reached))]) * 1e6) / 1e6
    wrong = sims[~labels & (sims >= estimate.threshold)]
    # Above the most similar "no" (or from the threshold up, when no "no" lies there): is that range sure?
    above = sims > float(wrong.max()) if len(wrong) else sims >= estimate.threshold
    top = float(wrong.max()) if len(wrong) else -1.0
    if int((labels & above).sum()) < SURE:  # too few answers to call any range sure: confirm all above
        estimate.bound = 1.0
    else:
        estimate.bound = min(1.0, math.floor(top * 1e6 + 1) / 1e6) if len(wrong) else estimate.threshold
    estimate.weighted_recall = _recall(sims, labels, weight, estimate.threshold)
    recall, precision = _simulated(sims, labels, where, np.bincount(bins, minlength=BINS), estimate)
    estimate.recall, estimate.recall_interval = recall[0], (recall[1], recall[2])
    estimate.precision, estimate.precision_interval = precision[0], (precision[1], precision[2])
    return estimate


def _recall(sims: np.ndarray, labels: np.ndarray, weight: np.ndarray, threshold: float) -> float:
    """The weighted share of the answered duplicates at or above ``threshold``."""
    return float((weight * labels * (sims >= threshold)).sum() / (weight * labels).sum())


def _simulated(
    sims: np.ndarray, labels: np.ndarray, where: np.ndarray, held: np.ndarray, estimate: AutoEstimate
) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """Median and 95 % interval of recall and precision, simulated from each bin's posteriors (module note)."""
    import numpy as np

    threshold, bound = estimate.threshold, estimate.bound
    rng = np.random.default_rng(SEED)
    width = (1.0 - FLOOR) / BINS
    found, wrong, total = np.zeros(RESAMPLES), np.zeros(RESAMPLES), np.zeros(RESAMPLES)
    for b in np.flatnonzero(held):  # the answered pairs count as they are; the bin's others are drawn
        low, high = FLOOR + b * width, FLOOR + (b + 1) * width if b < BINS - 1 else math.inf
        same, close = labels[where == b], sims[where == b]
        unanswered = held[b] - len(same)
        duplicates = unanswered * rng.beta(same.sum() + 0.5, (~same).sum() + 0.5, RESAMPLES)
        kept = _share(rng, close[same] >= threshold, low, high, threshold)
        unkept = _share(rng, close[~same] >= bound, low, high, bound)
        found += (same & (close >= threshold)).sum() + duplicates * kept
        wrong += (~same & (close >= bound)).sum() + (unanswered - duplicates) * unkept
        total += same.sum() + duplicates
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(found + wrong > 0, found / (found + wrong), 1.0)
    return _percentiles(found / total), _percentiles(precision)


def _share(rng: np.random.Generator, above: np.ndarray, low: float, high: float, cut: float) -> np.ndarray | float:
    """The share of a bin's pairs (of one kind) at or above ``cut``: 1 or 0 for a bin wholly on one side, else
    drawn from the Jeffreys posterior of the answered pairs' share."""
    if low >= cut:
        return 1.0
    if high <= cut:
        return 0.0
    return rng.beta(above.sum() + 0.5, (~above).sum() + 0.5, RESAMPLES)


def _percentiles(values: Sequence[float] | np.ndarray) -> tuple[float, float, float]:
    import numpy as np

    middle, low, high = np.nanpercentile(np.asarray(values, dtype=float), [50, 2.5, 97.5])
    return round(float(middle), 4), round(float(low), 4), round(float(high), 4)


def auto_band(
    texts: Sequence[str], vectors: np.ndarray, request: DedupRequest, agent: ChatAgent | None
) -> AutoEstimate:
    """``threshold="auto"``: the model labels a stratified sample of candidate pairs (``semantic.dedup_auto``)."""
    from pathlib import Path

    if agent is None or request.auto is None:
        raise ValueError("threshold='auto' needs an agent to label the sample")
    options = dict(request.options)
    if options.get("checkpoint") is not None:  # a checkpoint holds one batch: the sample's beside the confirmation's
        path = Path(options["checkpoint"])
        options["checkpoint"] = path.with_name(f"{path.stem}.sample{path.suffix}")

    def label(pairs: list[tuple[int, int]]) -> tuple[list[bool | None], BatchResult]:
        text_pairs = [(texts[left], texts[right]) for left, right in pairs]
        return ask_pairs(agent, text_pairs, request.prompt, request.concurrency, options, failed=None)

    return sample_band(unit_rows(vectors), request.auto.target_recall, request.auto.sample, label)


def ask_pairs(
    agent: ChatAgent,
    pairs: list[tuple[str, str]],
    prompt: str,
    concurrency: int,
    options: dict[str, Any],
    failed: Any = False,
) -> tuple[list[Any], BatchResult]:
    """Whether the model says each pair is a duplicate (a failed pair is ``failed``), and the batch that asked."""
    import pandas as pd

    frame = pd.DataFrame(pairs, columns=list(PAIR_FIELDS))
    batch: BatchResult = agent.run_batch(frame, concurrency, max(len(frame), 1), output=bool, prompt=prompt, **options)
    answers = [failed] * len(pairs)
    for position, result in zip(batch.indices, batch.results, strict=True):
        answers[position] = result.output is True
    return answers, batch
