"""``agreement(predicted, human)``: how well a judge or a model agrees with people, on the rows people labelled.

Raw agreement flatters when one answer dominates (a judge saying "good" to everything agrees 90 % with people who
say "good" 90 % of the time), so the headline is Cohen's kappa with its 95 % interval, next to the raw agreement,
the confusion table and n: enough to decide whether the judge may replace the annotators, and how sure that is.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiforge.core.types import UsageError
from aiforge.evaluation.stats import NO_ANSWER, _missing, cohen_kappa, confusion_table

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Agreement:
    """Agreement of predictions with human labels on the rows people labelled."""

    n: int
    """Rows compared: those with a human label (a row without a prediction counts as a disagreement)."""
    kappa: float
    """Cohen's kappa (``stats.cohen_kappa``); nan when chance agreement is 1."""
    kappa_low: float
    kappa_high: float
    """The 95 % interval of kappa (Fleiss, Cohen & Everitt 1969 large-sample standard error)."""
    raw: float
    """The share of rows where the prediction equals the human label."""
    confusion: pd.DataFrame
    """Counts: rows are the human labels, columns the predictions (every label shown)."""
    unlabelled: int = 0
    """Rows left out because they have no human label."""

    def __repr__(self) -> str:
        return (
            f"Agreement(n={self.n}, kappa={self.kappa:.3f} [{self.kappa_low:.3f}, {self.kappa_high:.3f}], "
            f"raw={self.raw:.3f}{f', unlabelled={self.unlabelled}' if self.unlabelled else ''})"
        )

    def __str__(self) -> str:
        return f"{self.verdict()}\n{self.confusion.to_string()}"

    def verdict(self) -> str:
        """One line: kappa, its interval and the conventional reading of it (Landis & Koch 1977)."""
        if math.isnan(self.kappa):
            return f"n={self.n}: kappa undefined (one answer on both sides), raw agreement {self.raw:.0%}"
        return (
            f"n={self.n}: kappa {self.kappa:.2f} (95 % CI {self.kappa_low:.2f} to {self.kappa_high:.2f}, "
            f"{strength(self.kappa)}), raw agreement {self.raw:.0%}"
        )

    def _repr_html_(self) -> str:
        note = f"<br><small>{self.unlabelled} rows without a human label left out</small>" if self.unlabelled else ""
        return (
            f"<div><b>Agreement</b> · {html.escape(self.verdict())}{note}"
            f"{self.confusion.to_html(notebook=False)}</div>"
        )


def strength(kappa: float) -> str:
    """Landis & Koch's (1977) words for a kappa: slight, fair, moderate, substantial, almost perfect."""
    if kappa < 0:
        return "poor"
    for bound, word in ((0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
        if kappa <= bound:
            return word
    return "almost perfect"


def agreement(predicted: Sequence[Any], human: Sequence[Any], labels: Sequence[Any] | None = None) -> Agreement:
    """Cohen's kappa (with a 95 % interval), raw agreement and the confusion table of ``predicted`` vs ``human``.

    Two pandas Series are aligned on their index, lists and arrays by position. Only rows with a human label
    count (a partly labelled column is fine); a row with a human label but no prediction is a disagreement.
    ``labels`` fixes the categories shown (default: every value seen)::

        judged = df.aiforge.judge("Is the answer correct and complete?", column="answer")
        aiforge.evaluation.agreement(judged["score"], df["human_score"])
    """
    import pandas as pd

    if isinstance(predicted, pd.Series) and isinstance(human, pd.Series):
        predicted, human = predicted.align(human, join="outer")
    guesses, people = _listed(predicted, "predicted"), _listed(human, "human")
    if len(guesses) != len(people):
        raise UsageError(f"agreement: predicted has {len(guesses)} values but human has {len(people)}")
    pairs = list(zip(guesses, people, strict=True))
    labelled = [(p, h) for p, h in pairs if not _missing(h)]
    if not labelled:
        raise UsageError("agreement: no row has a human label (every value of human is missing)")
    guessed = [NO_ANSWER if _missing(p) else p for p, _ in labelled]
    truth = [h for _, h in labelled]
    if labels is not None:
        unknown = sorted({str(v) for v in [*truth, *guessed] if v not in labels and v != NO_ANSWER})
        if unknown:
            raise UsageError(f"agreement: values {unknown[:5]} are not among labels={list(labels)!r}")
    kappa, low, high = cohen_kappa(truth, guessed, labels)
    raw = sum(p == h for p, h in zip(guessed, truth, strict=True)) / len(truth)
    return Agreement(
        n=len(truth), kappa=kappa, kappa_low=low, kappa_high=high, raw=raw,
        confusion=confusion_table(truth, guessed, labels).rename_axis(index="human"),
        unlabelled=len(pairs) - len(labelled),
    )


def _listed(values: Sequence[Any], name: str) -> list[Any]:
    if isinstance(values, str | bytes) or not hasattr(values, "__len__"):
        raise UsageError(f"agreement: {name} is a sequence of labels (a Series, list or array), not {values!r:.60}")
    return list(values.tolist() if hasattr(values, "tolist") else values)
