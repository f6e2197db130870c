"""The statistics of an evaluation against values worked out by hand (each test's docstring shows the arithmetic)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from aiforge.evaluation.stats import (
    NO_ANSWER,
    cohen_kappa,
    confusion_table,
    latency_percentiles,
    macro_f1,
    mean_interval,
    wilson_interval,
)

Z = 1.959963984540054


def planted(table: list[list[int]], labels: list[str]) -> tuple[list[str], list[str]]:
    """Truth and predictions whose confusion table is ``table`` (rows truth, columns predictions)."""
    truth, predicted = [], []
    for i, row in enumerate(table):
        for j, count in enumerate(row):
            truth += [labels[i]] * count
            predicted += [labels[j]] * count
    return truth, predicted


def test_wilson_for_none_right_is_zero_to_z2_over_n_plus_z2() -> None:
    """0/n: low 0, high z²/(n + z²) = 3.8415 / 13.8415 = 0.2775 for n = 10."""
    assert wilson_interval(0, 10) == (0.0, pytest.approx(Z**2 / (10 + Z**2)))
    assert wilson_interval(0, 10)[1] == pytest.approx(0.27753, abs=1e-5)


def test_wilson_for_all_right_is_n_over_n_plus_z2_to_one() -> None:
    """n/n: low n/(n + z²) = 10 / 13.8415 = 0.7225, high 1."""
    assert wilson_interval(10, 10) == (pytest.approx(10 / (10 + Z**2)), 1.0)


def test_wilson_for_half_right_is_symmetric_around_one_half() -> None:
    """5/10: centre 0.5, half-width z·sqrt(0.025 + z²/400) / (1 + z²/10) = 0.2634."""
    low, high = wilson_interval(5, 10)
    half = Z * math.sqrt(0.25 / 10 + Z**2 / 400) / (1 + Z**2 / 10)
    assert (low, high) == (pytest.approx(0.5 - half), pytest.approx(0.5 + half))
    assert half == pytest.approx(0.26341, abs=1e-5)


def test_wilson_of_no_rows_is_undefined_and_a_count_above_n_is_refused() -> None:
    assert all(math.isnan(v) for v in wilson_interval(0, 0))
    with pytest.raises(ValueError, match="between 0 and n=3"):
        wilson_interval(4, 3)


def test_kappa_of_a_planted_two_by_two_table_and_its_standard_error() -> None:
    """[[20, 5], [10, 15]] of 50 (Wikipedia's example): p_o = 0.7, p_e = 0.5·0.6 + 0.5·0.4 = 0.5, kappa = 0.4.

    Fleiss-Cohen-Everitt: A = 0.4·(1 - 1.1·0.6)² + 0.3·(1 - 0.9·0.6)² = 0.10972,
    B = 0.36·(0.1·1.1² + 0.2·0.9²) = 0.10188, C = (0.4 - 0.5·0.6)² = 0.01,
    SE = sqrt(0.2016 / 50) / 0.5 = 0.126996.
    """
    truth, predicted = planted([[20, 5], [10, 15]], ["yes", "no"])
    kappa, low, high = cohen_kappa(truth, predicted)
    se = math.sqrt(0.2016 / 50) / 0.5
    assert kappa == pytest.approx(0.4)
    assert (low, high) == (pytest.approx(0.4 - Z * se), pytest.approx(0.4 + Z * se))
    assert se == pytest.approx(0.126996, abs=1e-6)


def test_kappa_of_a_three_label_table() -> None:
    """[[30,5,5],[4,20,6],[2,3,25]] of 100: p_o = 0.75, marginals rows (.4,.3,.3) cols (.36,.28,.36),
    p_e = .144 + .084 + .108 = .336, kappa = (.75 - .336) / .664 = 0.62349."""
    truth, predicted = planted([[30, 5, 5], [4, 20, 6], [2, 3, 25]], ["a", "b", "c"])
    kappa, low, high = cohen_kappa(truth, predicted)
    assert kappa == pytest.approx(0.414 / 0.664)
    assert low < kappa < high


def test_a_constant_rater_has_kappa_zero_with_no_spread_and_a_perfect_one_kappa_one() -> None:
    """Constant answer c: p_e = share of c = p_o, so kappa = 0 on every sample (SE 0); perfect: kappa 1, SE 0."""
    truth = ["a"] * 6 + ["b"] * 3 + ["c"]
    assert cohen_kappa(truth, ["a"] * 10) == pytest.approx((0.0, 0.0, 0.0), abs=1e-6)
    assert cohen_kappa(truth, truth) == pytest.approx((1.0, 1.0, 1.0), abs=1e-6)


def test_kappa_is_undefined_when_both_raters_give_one_and_the_same_answer() -> None:
    assert all(math.isnan(v) for v in cohen_kappa(["a"] * 4, ["a"] * 4))


def test_a_missing_prediction_is_a_wrong_answer_in_kappa() -> None:
    """Truth a,a,b,b; predictions a,None,b,b: p_o = 3/4, p_e = .5·.25 + .5·.5 = .375, kappa = .375/.625 = 0.6."""
    assert cohen_kappa(["a", "a", "b", "b"], ["a", None, "b", "b"])[0] == pytest.approx(0.6)


def test_the_confusion_table_shows_every_label_and_a_no_answer_column_only_when_needed() -> None:
    table = confusion_table(["a", "b", "b"], ["a", "a", None], labels=["a", "b", "c"])
    assert list(table.index) == ["a", "b", "c"] and list(table.columns) == ["a", "b", "c", NO_ANSWER]
    assert table.loc["b"].tolist() == [1, 0, 0, 1] and table["c"].sum() == 0
    assert NO_ANSWER not in confusion_table(["a"], ["a"], labels=["a", "b"]).columns
    assert isinstance(table, pd.DataFrame) and table.index.name == "truth" and table.columns.name == "predicted"


def test_macro_f1_averages_the_labels_that_occur() -> None:
    """Truth a,a,b,c; predictions a,b,b,b: F1(a) = 2/3, F1(b) = 2/4, F1(c) = 0 -> mean 0.38889; a label in
    neither (d) is left out."""
    assert macro_f1(["a", "a", "b", "c"], ["a", "b", "b", "b"], labels=["a", "b", "c", "d"]) == pytest.approx(
        (2 / 3 + 0.5 + 0) / 3
    )


def test_latency_percentiles_interpolate_and_skip_missing_values() -> None:
    """[10, 20, 30]: median 20, p95 at rank 0.95·2 = 1.9 -> 20 + 0.9·10 = 29."""
    assert latency_percentiles([10, None, 20, float("nan"), 30]) == (20.0, 29.0)
    assert all(math.isnan(v) for v in latency_percentiles([None]))


def test_the_mean_interval_of_fractional_scores() -> None:
    """[0.5, 1, 0.75]: mean 0.75, s = 0.25, half-width z·0.25/sqrt(3) = 0.2829 -> (0.4671, 1.0 clipped)."""
    low, high = mean_interval([0.5, 1.0, 0.75])
    assert low == pytest.approx(0.75 - Z * 0.25 / math.sqrt(3)) and high == 1.0
