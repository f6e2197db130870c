"""aiforge.evaluation.agreement: kappa with its interval, raw agreement and the confusion table, on labelled rows."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from aiforge.core.types import UsageError
from aiforge.evaluation import Agreement, agreement
from aiforge.evaluation.stats import NO_ANSWER


def planted(table: list[list[int]], labels: list[str]) -> tuple[list[str], list[str]]:
    """(human, predicted) whose confusion table is ``table`` (rows human, columns predicted)."""
    human, predicted = [], []
    for i, row in enumerate(table):
        for j, count in enumerate(row):
            human += [labels[i]] * count
            predicted += [labels[j]] * count
    return human, predicted


def test_a_planted_confusion_matrix_gives_its_known_kappa() -> None:
    """[[20, 5], [10, 15]]: kappa = (0.7 - 0.5) / 0.5 = 0.4, SE 0.127 (Fleiss-Cohen-Everitt, test_stats)."""
    human, predicted = planted([[20, 5], [10, 15]], ["yes", "no"])
    result = agreement(predicted, human)
    assert isinstance(result, Agreement) and result.n == 50 and result.raw == pytest.approx(0.7)
    assert result.kappa == pytest.approx(0.4)
    assert result.kappa_low == pytest.approx(0.4 - 1.959964 * 0.126996, abs=1e-5)
    assert result.confusion.loc["yes"].to_dict() == {"no": 5, "yes": 20}
    assert result.confusion.index.name == "human" and result.confusion.columns.name == "predicted"


def test_only_rows_with_a_human_label_count_and_series_align_on_their_index() -> None:
    human = pd.Series(["a", None, "b", "b"], index=[1, 2, 3, 4])
    predicted = pd.Series(["b", "b", "a", "a"], index=[4, 3, 2, 1])  # other order: aligned by index, not position
    result = agreement(predicted, human)
    assert (result.n, result.unlabelled, result.raw) == (3, 1, 1.0)  # by position it would be 0 of 3


def test_a_row_without_a_prediction_disagrees() -> None:
    result = agreement(["a", None, "b", "b"], ["a", "a", "b", "b"])
    assert result.raw == 0.75 and result.confusion.loc["a", NO_ANSWER] == 1
    assert result.kappa == pytest.approx(0.6)


def test_the_repr_and_html_read_as_a_verdict_with_the_table() -> None:
    human, predicted = planted([[20, 5], [10, 15]], ["yes", "no"])
    result = agreement(predicted, human)
    assert repr(result) == "Agreement(n=50, kappa=0.400 [0.151, 0.649], raw=0.700)"
    assert result.verdict() == "n=50: kappa 0.40 (95 % CI 0.15 to 0.65, fair), raw agreement 70%"
    assert str(result).startswith(result.verdict() + "\npredicted")
    page = result._repr_html_()
    assert "<b>Agreement</b>" in page and "<table" in page and "0.15 to 0.65" in page


def test_kappa_is_undefined_when_everyone_gives_one_answer() -> None:
    result = agreement(["a", "a"], ["a", "a"])
    assert math.isnan(result.kappa) and "kappa undefined" in result.verdict()


@pytest.mark.parametrize(
    ("predicted", "human", "message"),
    [
        (["a"], ["a", "b"], "predicted has 1 values but human has 2"),
        (["a", "b"], [None, None], "no row has a human label"),
        ("ab", ["a", "b"], "predicted is a sequence of labels"),
    ],
)
def test_bad_arguments_are_usage_errors(predicted: object, human: object, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        agreement(predicted, human)  # type: ignore[arg-type]


def test_labels_outside_the_given_labels_are_named() -> None:
    with pytest.raises(UsageError, match=r"values \['c'\] are not among labels=\['a', 'b'\]"):
        agreement(["a", "c"], ["a", "b"], labels=["a", "b"])
