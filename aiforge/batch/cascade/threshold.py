"""The statistics of a cascade (``cascade.py``): which confidence threshold the cheap model's answers can be kept at.

Pure functions over a calibration sample: for each sampled row, the cheap model's confidence and whether its
answer agreed with the reference (the strong model's answer, or the user's label).

The guarantee. ``choose_threshold`` tests thresholds from the highest downwards (fixed-sequence testing); at each
one the null hypothesis "the agreement among rows at or above this threshold is below ``target``" is rejected
when the one-sided Clopper-Pearson lower bound at level ``confidence`` of the agreement observed on the sample
rows at or above it reaches ``target``. The first threshold that fails ends the sequence; the lowest one rejected
is chosen. Testing in an order fixed before the outcomes are seen needs no multiplicity correction (Bauer, 1991;
the order here depends on the cheap model's confidences only, never on agreement), so the chance that the chosen
threshold's agreement is below ``target`` is at most ``1 - confidence``: the guarantee of SUPG (Kang et al.,
VLDB 2020) and BARGAIN (Zeighami et al., 2025) for a precision target. "Agreement" is over all the batch's rows at
or above the threshold, each row counted (a text repeated on many rows weighs as many: the sample is of rows).
The bound treats the sample rows as independent draws from the batch's rows; they are a uniform sample drawn
without replacement, for which the binomial bound is conservative in practice (a simulation of 2,000 runs missed
the target 1.45 % of the time at a nominal 5 %). With ``truth=``, the labelled rows must be a random subset.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

_TINY = 1e-300
_EPSILON = 3e-16


def regularized_beta(x: float, a: float, b: float) -> float:
    """``I_x(a, b)``, the regularized incomplete beta function (the CDF of Beta(a, b) at ``x``); a, b > 0."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = a * math.log(x) + b * math.log1p(-x) - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b))
    # The continued fraction converges fast for x < (a + 1) / (a + b + 2); past it, use I_x(a, b) = 1 - I_1-x(b, a).
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(x, a, b) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(1.0 - x, b, a) / b


def _beta_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of the incomplete beta function, by the modified Lentz method."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    result = d
    for m in range(1, 10_000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            result *= d * c
        if abs(d * c - 1.0) < _EPSILON:
            break
    return result


def beta_quantile(q: float, a: float, b: float) -> float:
    """The ``q`` quantile of Beta(a, b): the ``x`` where ``regularized_beta(x, a, b) == q`` (by bisection)."""
    low, high = 0.0, 1.0
    for _ in range(100):  # 2**-100: far below float precision near any quantile
        middle = (low + high) / 2
        if regularized_beta(middle, a, b) < q:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def agreement_lower_bound(agreed: int, total: int, confidence: float) -> float:
    """The one-sided Clopper-Pearson lower bound on a rate seen as ``agreed`` of ``total``, at level ``confidence``.

    The true rate is at least this with probability ``confidence``; 0.0 when nothing agreed (or nothing was seen).
    """
    if agreed <= 0 or total <= 0:
        return 0.0
    return beta_quantile(1.0 - confidence, agreed, total - agreed + 1)


def fewest_rows(target: float, confidence: float) -> int:
    """The fewest sample rows whose agreement bound can reach ``target`` at all (every one of them agreeing)."""
    return math.ceil(math.log(1.0 - confidence) / math.log(target))


def first_step(target: float, confidence: float) -> int:
    """Sample rows the first threshold tested keeps: enough that two disagreements among the most confident rows
    still let the bound reach ``target`` (61 rows at 0.9 and 0.95), and at least twice ``fewest_rows``.

    The strong model slips now and then on rows any first pass gets right; with the first test at twice
    ``fewest_rows`` (58 rows), two such slips among them ended the sequence at once, and the proxy cascade
    kept nothing on 2 of 10 sample seeds of 600 tickets (``bench/cost_proxy_cascade.py``); at 61, none did."""
    rows = fewest_rows(target, confidence) + 2
    while agreement_lower_bound(rows - 2, rows, confidence) < target:
        rows += 1
    return max(2 * fewest_rows(target, confidence), rows)


@dataclass(frozen=True, slots=True)
class Calibration:
    """The threshold ``choose_threshold`` chose and what the sample showed at it."""

    threshold: float
    """Cheap answers with a confidence at or above this are kept; ``math.inf``: none (no threshold passed)."""
    agreed: int
    """Sample rows at or above ``threshold`` whose cheap answer agreed with the reference."""
    kept: int
    """Sample rows at or above ``threshold``."""
    lower_bound: float
    """The agreement among kept rows is at least this with probability ``confidence`` (0.0 when none are kept)."""
    tested: int
    """How many thresholds were tested (the last one failed unless every one passed)."""

    @property
    def agreement(self) -> float:
        """The agreement observed on the sample rows kept (nan when none are)."""
        return self.agreed / self.kept if self.kept else math.nan


def choose_threshold(
    confidences: Sequence[float], agrees: Sequence[bool], *, target: float, confidence: float
) -> Calibration:
    """The lowest confidence threshold whose agreement is at least ``target`` with probability ``confidence``.

    ``confidences[i]`` is the cheap model's confidence on sample row ``i``, ``agrees[i]`` whether its answer
    agreed with the reference. Thresholds are tested from the highest downwards (see the module's docstring).
    The first keeps ``first_step`` sample rows, so that two disagreements among the most confident rows do not
    end the sequence at once; each later one adds at least half ``fewest_rows``. Ties stay together. When
    none passes, the threshold is ``math.inf`` (every row goes to the strong model).
    """
    if len(confidences) != len(agrees):
        raise ValueError(f"{len(confidences)} confidences but {len(agrees)} agreements")
    rows = sorted(zip(confidences, agrees, strict=True), key=lambda row: -row[0])
    fewest, first = fewest_rows(target, confidence), first_step(target, confidence)
    chosen = Calibration(math.inf, 0, 0, 0.0, 0)
    agreed = kept = tested = 0
    last = 0  # rows counted at the last threshold tested
    for position, (value, agree) in enumerate(rows):
        agreed, kept = agreed + agree, kept + 1
        tie = position + 1 < len(rows) and rows[position + 1][0] == value
        step = first if last == 0 else max(1, fewest // 2)
        if tie or (kept - last < step and kept < len(rows)):
            continue
        tested, last = tested + 1, kept
        bound = agreement_lower_bound(agreed, kept, confidence)
        if bound < target:
            return Calibration(chosen.threshold, chosen.agreed, chosen.kept, chosen.lower_bound, tested)
        chosen = Calibration(value, agreed, kept, bound, tested)
    return chosen
