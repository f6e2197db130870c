"""The statistics of an evaluation: Wilson intervals, Cohen's kappa with its interval, macro-F1, confusion tables and
latency percentiles. Pure numpy and pandas, so every number a summary shows can be checked by hand.

A missing prediction (a failed row) is an answer of its own, ``NO_ANSWER``: it is never right, so it counts
against accuracy, kappa and F1 alike, and a candidate that fails often never looks better for it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

Z_95 = 1.959963984540054
"""The standard normal quantile of 0.975: a two-sided 95 % interval."""
NO_ANSWER = "(no answer)"
"""The category of a row with no prediction (its call failed) in a confusion table."""


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``successes / n`` (95 % by default); ``(nan, nan)`` for ``n = 0``.

    With p = k/n: ``(p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)`` (Wilson 1927, "Probable inference, the
    law of succession, and statistical inference", JASA 22; recommended over the Wald interval by Brown, Cai &
    DasGupta 2001). Unlike Wald it is never empty at 0/n or n/n: 0 of 10 gives (0, 0.278)::

        wilson_interval(0, 10)  # (0.0, 0.2775...)
    """
    if n <= 0:
        return math.nan, math.nan
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be between 0 and n={n}, got {successes}")
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    center = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    # At 0/n and n/n the bound is exactly 0 or 1; floating point would leave it a hair off.
    low = 0.0 if successes == 0 else max(0.0, center - half)
    high = 1.0 if successes == n else min(1.0, center + half)
    return low, high


def mean_interval(scores: Sequence[float], z: float = Z_95) -> tuple[float, float]:
    """A normal-approximation interval of a mean score in [0, 1]: ``mean ± z·s/sqrt(n)``, clipped to [0, 1].

    For a metric that returns fractions rather than right/wrong (the Wilson interval needs counts); ``s`` is the
    sample standard deviation (ddof 1). ``(nan, nan)`` below two scores::

        mean_interval([0.5, 1.0, 0.75])  # (0.467..., 1.0)
    """
    import numpy as np

    values = np.asarray(scores, dtype=float)
    if len(values) < 2:
        return math.nan, math.nan
    mean = float(values.mean())
    half = z * float(values.std(ddof=1)) / math.sqrt(len(values))
    return max(0.0, mean - half), min(1.0, mean + half)


def confusion_table(
    truth: Sequence[Any], predicted: Sequence[Any], labels: Sequence[Any] | None = None
) -> pd.DataFrame:
    """Counts of each (truth, prediction) pair: rows are the truth, columns the predictions, every label shown.

    ``labels`` fixes the categories and their order (a label never predicted is a column of zeros); without it
    they are the values seen, sorted. A missing prediction is the column ``NO_ANSWER``, shown only when one occurs.
    (What ``pandas.crosstab`` over categoricals gives, counted directly: crosstab's pivot costs 20 ms a table.)::

        confusion_table(["a", "b"], ["a", "a"], labels=["a", "b", "c"])
    """
    import pandas as pd

    truth_values = _values(truth)
    predicted_values = [NO_ANSWER if _missing(v) else v for v in _values(predicted)]
    if len(truth_values) != len(predicted_values):
        raise ValueError(f"truth has {len(truth_values)} values, predictions {len(predicted_values)}")
    categories = list(labels) if labels is not None else _sorted_union(truth_values, predicted_values)
    columns = categories + [NO_ANSWER] * (NO_ANSWER in predicted_values and NO_ANSWER not in categories)
    pairs = Counter(zip(truth_values, predicted_values, strict=True))
    return pd.DataFrame(
        [[pairs.get((t, p), 0) for p in columns] for t in categories],
        index=pd.Index(categories, name="truth"),
        columns=pd.Index(columns, name="predicted"),
    )


def cohen_kappa(
    truth: Sequence[Any], predicted: Sequence[Any], labels: Sequence[Any] | None = None, z: float = Z_95
) -> tuple[float, float, float]:
    """Cohen's kappa between two raters and its 95 % interval: ``(kappa, low, high)``.

    ``kappa = (p_o - p_e) / (1 - p_e)``, ``p_o`` the observed agreement and ``p_e`` the agreement expected by
    chance from the two marginals (Cohen 1960). The interval is ``kappa ± z·SE`` clipped to [-1, 1], with the
    large-sample standard error of Fleiss, Cohen & Everitt (1969, "Large sample standard errors of kappa and
    weighted kappa", Psychological Bulletin 72), on the n x n table of proportions ``p_ij``::

        SE² = (A + B - C) / (n (1 - p_e)²)
        A = Σ_i p_ii (1 - (p_i. + p_.i)(1 - kappa))²
        B = (1 - kappa)² Σ_{i≠j} p_ij (p_.i + p_j.)²
        C = (kappa - p_e (1 - kappa))²

    A rater who always gives one answer has kappa 0 with SE 0 (no sample of rows can change it), perfect
    agreement kappa 1 with SE 0. ``p_e = 1`` (both raters always give the same single answer) leaves kappa
    undefined: ``nan``. A missing prediction is the answer ``NO_ANSWER`` (never right)::

        cohen_kappa(["a", "a", "b", "b"], ["a", "b", "b", "b"])  # (0.5, ...)
    """
    import numpy as np

    table = confusion_table(truth, predicted, labels)
    categories = list(dict.fromkeys([*table.index, *table.columns]))
    counts = table.reindex(index=categories, columns=categories, fill_value=0).to_numpy(dtype=float)
    n = counts.sum()
    if n == 0:
        return math.nan, math.nan, math.nan
    p = counts / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    observed, expected = float(np.trace(p)), float(rows @ cols)
    if expected >= 1.0:
        return math.nan, math.nan, math.nan
    kappa = (observed - expected) / (1 - expected)
    diagonal = np.diag(p)
    a = float(np.sum(diagonal * (1 - (rows + cols) * (1 - kappa)) ** 2))
    spread = (cols[:, None] + rows[None, :]) ** 2  # (p_.i + p_j.)² at [i, j]
    off = p * spread
    b = (1 - kappa) ** 2 * float(off.sum() - np.trace(off))
    c = (kappa - expected * (1 - kappa)) ** 2
    se = math.sqrt(max(a + b - c, 0.0) / n) / (1 - expected)
    return kappa, max(-1.0, kappa - z * se), min(1.0, kappa + z * se)


def macro_f1(truth: Sequence[Any], predicted: Sequence[Any], labels: Sequence[Any] | None = None) -> float:
    """The unweighted mean of each label's F1 = 2·TP / (2·TP + FP + FN) (Sokolova & Lapalme 2009, "macro").

    Over ``labels`` (or every value seen) that occur in the truth or the predictions; a label in neither has no
    F1 and is left out rather than counted as 0. A missing prediction is a false negative of its row's label::

        macro_f1(["a", "b"], ["a", "a"])  # mean(2/3, 0) = 0.333...
    """
    counts = confusion_table(truth, predicted, labels).to_numpy()  # columns: the rows' labels, then NO_ANSWER
    scores = []
    for i in range(counts.shape[0]):
        tp = int(counts[i, i])
        fn, fp = int(counts[i].sum()) - tp, int(counts[:, i].sum()) - tp
        if tp + fp + fn:
            scores.append(2 * tp / (2 * tp + fp + fn))
    return sum(scores) / len(scores) if scores else math.nan


def latency_percentiles(latencies_ms: Sequence[float]) -> tuple[float, float]:
    """The median and 95th percentile of latencies (numpy's linear interpolation, Hyndman & Fan 1996 type 7);
    missing values are left out, ``(nan, nan)`` when none is left::

        latency_percentiles([10, 20, 30])  # (20.0, 29.0)
    """
    import numpy as np

    values = np.asarray([v for v in latencies_ms if not _missing(v)], dtype=float)
    if len(values) == 0:
        return math.nan, math.nan
    p50, p95 = np.percentile(values, [50, 95])
    return float(p50), float(p95)


def _values(values: Sequence[Any]) -> list[Any]:
    return list(values.tolist() if hasattr(values, "tolist") else values)


def _missing(value: Any) -> bool:
    """None, NaN, ``pd.NA`` or ``NaT``: a value that is not there."""
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN and NaT are unequal to themselves
    except TypeError:  # pd.NA refuses a truth value
        return True


def _sorted_union(*columns: list[Any]) -> list[Any]:
    seen = list(dict.fromkeys(v for column in columns for v in column if v != NO_ANSWER))
    try:
        return sorted(seen)
    except TypeError:  # values of mixed types keep their order of appearance
        return seen
