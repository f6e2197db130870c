"""A cascade's statistics (issue 24): the incomplete beta, the Clopper-Pearson bound, fixed-sequence testing."""

from __future__ import annotations

import math
import random

import pytest

from aiforge.batch.cascade.threshold import (
    agreement_lower_bound,
    beta_quantile,
    choose_threshold,
    fewest_rows,
    first_step,
    regularized_beta,
)


def binomial_upper_tail(k: int, n: int, p: float) -> float:
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


@pytest.mark.parametrize(
    ("x", "a", "b", "expected"),
    [(0.5, 2, 3, 11 / 16), (0.3, 1, 1, 0.3), (0.2, 1, 4, 1 - 0.8**4), (0.9, 5, 1, 0.9**5), (0.5, 10, 10, 0.5)],
)
def test_regularized_beta_matches_closed_forms(x: float, a: float, b: float, expected: float) -> None:
    assert regularized_beta(x, a, b) == pytest.approx(expected, abs=1e-12)


def test_beta_quantile_inverts_the_regularized_beta() -> None:
    for q, a, b in [(0.05, 90, 11), (0.5, 2, 7), (0.99, 300, 2), (0.001, 3, 500)]:
        assert regularized_beta(beta_quantile(q, a, b), a, b) == pytest.approx(q, rel=1e-9)


@pytest.mark.parametrize(
    ("agreed", "total", "confidence", "expected"),
    [
        (90, 100, 0.95, 0.83628),  # published one-sided 95 % Clopper-Pearson bounds
        (18, 20, 0.975, 0.68302),  # the lower end of the two-sided 95 % interval of 18/20
        (10, 10, 0.95, 0.05**0.1),  # k = n: (1 - confidence) ** (1 / n)
        (1, 1, 0.95, 0.05),
    ],
)
def test_clopper_pearson_lower_bound_matches_known_values(
    agreed: int, total: int, confidence: float, expected: float
) -> None:
    assert agreement_lower_bound(agreed, total, confidence) == pytest.approx(expected, abs=1e-5)


def test_clopper_pearson_lower_bound_is_where_the_binomial_tail_is_one_minus_confidence() -> None:
    for agreed, total, confidence in [(199, 200, 0.95), (490, 500, 0.99), (5, 50, 0.9)]:
        bound = agreement_lower_bound(agreed, total, confidence)
        assert binomial_upper_tail(agreed, total, bound) == pytest.approx(1 - confidence, rel=1e-6)


def test_nothing_agreeing_bounds_the_rate_at_zero() -> None:
    assert agreement_lower_bound(0, 40, 0.95) == 0.0 and agreement_lower_bound(0, 0, 0.95) == 0.0


def test_fewest_rows_is_the_smallest_sample_a_perfect_agreement_passes() -> None:
    n = fewest_rows(0.9, 0.95)
    assert agreement_lower_bound(n, n, 0.95) >= 0.9 > agreement_lower_bound(n - 1, n - 1, 0.95)


def test_a_clean_sample_keeps_every_confident_row_and_stops_where_agreement_falls() -> None:
    # 100 confident rows that agree, then 100 unsure rows of which one in two agrees.
    confidences = [0.99 - i / 10_000 for i in range(100)] + [0.6 - i / 1000 for i in range(100)]
    agrees = [True] * 100 + [i % 2 == 0 for i in range(100)]
    chosen = choose_threshold(confidences, agrees, target=0.9, confidence=0.95)
    step = fewest_rows(0.9, 0.95) // 2  # rows each threshold after the first adds
    # The threshold tested next after the confident rows may take a few unsure ones (the grid's step), never more.
    assert confidences[100 + step] < chosen.threshold <= confidences[100 - step]
    assert 100 - step <= chosen.kept <= 100 + step and chosen.agreed >= chosen.kept - step // 2
    assert chosen.lower_bound >= 0.9 and chosen.agreement >= 0.95


def test_fixed_sequence_stops_at_the_first_threshold_that_fails_even_if_a_lower_one_would_pass() -> None:
    # The most confident 58 rows (the first threshold tested) agree only 40 times; everything below agrees.
    confidences = [1 - i / 1000 for i in range(300)]
    agrees = [i % 3 != 0 for i in range(58)] + [True] * 242
    assert agreement_lower_bound(sum(agrees), 300, 0.95) >= 0.9  # the whole sample alone would pass
    chosen = choose_threshold(confidences, agrees, target=0.9, confidence=0.95)
    assert chosen.threshold == math.inf and chosen.kept == 0 and chosen.tested == 1


def test_a_sample_where_no_threshold_passes_sends_everything_to_the_strong_model() -> None:
    rng = random.Random(7)
    confidences = [rng.random() for _ in range(200)]
    agrees = [rng.random() < 0.7 for _ in range(200)]
    chosen = choose_threshold(confidences, agrees, target=0.9, confidence=0.95)
    assert chosen.threshold == math.inf and chosen.kept == 0 and math.isnan(chosen.agreement)


def test_a_sample_too_small_for_the_bound_tests_once_and_fails() -> None:
    chosen = choose_threshold([0.99] * 10, [True] * 10, target=0.9, confidence=0.95)
    assert chosen.threshold == math.inf and chosen.tested == 1


def test_tied_confidences_are_kept_or_dropped_together() -> None:
    confidences = [0.9] * 80 + [0.5] * 80
    agrees = [True] * 80 + [False] * 80
    chosen = choose_threshold(confidences, agrees, target=0.9, confidence=0.95)
    assert chosen.threshold == 0.9 and chosen.kept == 80


def test_the_bound_holds_at_the_stated_confidence_over_many_samples() -> None:
    # A population whose agreement above each threshold is known: how often is the chosen one's below target?
    rng = random.Random(24)
    population = [(c, rng.random() < 0.6 + 0.4 * c) for c in (rng.random() for _ in range(20_000))]
    misses = trials = 0
    for _ in range(200):
        sample = rng.sample(population, 200)
        chosen = choose_threshold([c for c, _ in sample], [a for _, a in sample], target=0.9, confidence=0.9)
        if chosen.threshold == math.inf:
            continue
        kept = [a for c, a in population if c >= chosen.threshold]
        trials += 1
        misses += sum(kept) / len(kept) < 0.9
    assert trials > 50 and misses / trials <= 0.1


def test_confidences_and_agreements_of_different_lengths_are_a_value_error() -> None:
    with pytest.raises(ValueError, match="3 confidences but 2 agreements"):
        choose_threshold([0.1, 0.2, 0.3], [True, False], target=0.9, confidence=0.95)


def test_the_first_threshold_keeps_enough_rows_for_two_slips_of_the_strong_model() -> None:
    """Two disagreements among the 61 most confident sample rows (the strong model's own slips) no longer end the
    sequence at its first threshold: at twice fewest_rows (58) they did, and the proxy cascade kept nothing."""
    first = first_step(0.9, 0.95)
    assert first == 61 > 2 * fewest_rows(0.9, 0.95)
    assert agreement_lower_bound(first - 2, first, 0.95) >= 0.9 > agreement_lower_bound(first - 3, first - 1, 0.95)
    confidences = [1 - i / 1000 for i in range(200)]
    agrees = [i not in (3, 40) for i in range(150)] + [False] * 50  # two slips on top, then a first pass gone wrong
    chosen = choose_threshold(confidences, agrees, target=0.9, confidence=0.95)
    assert chosen.kept >= first and chosen.lower_bound >= 0.9
