"""``EvalResult``: an evaluation grid's rows (one per candidate x input row) and its summary (one per candidate).

The rows are built from the candidates' ``BatchResult``s, which stay in ``.batches``: ``rescore(metric)`` scores
them again without a request. Summary statistics are ``evaluation.stats``'s (Wilson interval, Cohen's kappa with
its Fleiss-Cohen-Everitt interval, macro-F1, latency percentiles).
"""

from __future__ import annotations

import functools
import html
import math
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from aiforge.core.report import OperationReport
from aiforge.core.types import UsageError
from aiforge.evaluation.agreement import Agreement, agreement
from aiforge.evaluation.stats import cohen_kappa, latency_percentiles, macro_f1, mean_interval, wilson_interval
from aiforge.evaluation.summary_html import summary_html

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

    from aiforge.batch.results import BatchFailure, BatchResult

Kind = Literal["labels", "output", "text"]
"""What a candidate answers: one of ``labels``, an ``output=`` value, or text."""

ROW_COLUMNS = [
    "candidate", "prompt", "agent", "row", "prediction", "truth", "correct",
    "input_tokens", "output_tokens", "cost", "latency_ms", "cached", "error",
]
"""The columns of ``EvalResult.rows``."""


def default_metric(kind: Kind) -> Callable[[Any, Any], bool]:
    """Right or wrong when no ``metric=`` is given: text compared after ``strip()`` and ``casefold()``, a label or
    an output value with ``==``."""
    if kind == "text":
        return lambda prediction, truth: str(prediction).strip().casefold() == str(truth).strip().casefold()
    return lambda prediction, truth: bool(prediction == truth)


class EvalResult(OperationReport):
    """An evaluation grid's results: ``.rows`` (tidy), ``.summary`` (per candidate), ``.plot()``, ``.agreement()``;
    an ``OperationReport`` (``core.report``) over every candidate's batch, whose repr names the best candidate."""

    title = "Evaluation"

    def __init__(
        self,
        *,
        candidates: Sequence[tuple[str, str, str]],
        batches: dict[str, BatchResult],
        frame: pd.DataFrame,
        truth: str,
        kind: Kind,
        labels: tuple[str, ...] | None = None,
        metric: Callable[[Any, Any], bool | float] | None = None,
        unlabelled: int = 0,
    ) -> None:
        self.candidates = list(candidates)
        """``(candidate, prompt, agent)`` names, in the grid's order."""
        self.batches = batches
        """Each candidate's ``BatchResult`` (costs, failures, ``saved``)."""
        self.frame = frame
        """The rows evaluated: the input's rows with a truth."""
        self.truth, self.kind, self.labels = truth, kind, labels
        self.metric = metric
        self.unlabelled = unlabelled
        """Input rows left out because their truth is missing."""

    @property
    def total_cost(self) -> float:
        """USD of every candidate's batch (an ``OperationReport``'s fields, ``core.report``)."""
        return sum(batch.total_cost for batch in self.batches.values())

    @property
    def total_tokens(self) -> int:
        """Input and output tokens of every candidate's batch."""
        return sum(batch.total_tokens for batch in self.batches.values())

    @property
    def requests(self) -> int:
        """Requests every candidate's batch sent."""
        return sum(batch.requests for batch in self.batches.values())

    @property
    def failed(self) -> list[BatchFailure]:
        """Every candidate's failed rows, candidate by candidate (each row's ``error`` is in ``.rows`` too)."""
        return [failure for batch in self.batches.values() for failure in batch.failed]

    def rescore(self, metric: Callable[[Any, Any], bool | float]) -> EvalResult:
        """The same predictions scored by another ``metric(prediction, truth)``: no request is made.

            result.rescore(lambda answer, truth: truth.lower() in answer.lower()).summary
        """
        return EvalResult(
            candidates=self.candidates, batches=self.batches, frame=self.frame, truth=self.truth, kind=self.kind,
            labels=self.labels, metric=metric, unlabelled=self.unlabelled,
        )

    @functools.cached_property
    def rows(self) -> pd.DataFrame:
        """One row per candidate x input row: the prediction, the truth, whether it is right, tokens, cost, latency.

        ``row`` is the input's index label. ``cost`` is what the answer cost when it was made, also when it was
        served again by the cache or a repeated row (``cached``), so a re-run's numbers match the first run's.
        A failed row has no prediction, its ``error``, and ``correct`` False (0).
        """
        import pandas as pd

        truths = self.frame[self.truth].tolist()
        records = [
            record
            for name, prompt, agent in self.candidates
            for record in self._candidate_rows(name, prompt, agent, truths)
        ]
        rows = pd.DataFrame(records, columns=ROW_COLUMNS)
        right_or_wrong = rows["correct"].isin([0.0, 1.0]).all()
        return rows.astype({"cached": "boolean", "error": "string", "latency_ms": "Float64",
                            "correct": bool if right_or_wrong else float})

    def _candidate_rows(self, name: str, prompt: str, agent: str, truths: list[Any]) -> list[dict[str, Any]]:
        batch = self.batches[name]
        metric = self.metric or default_metric(self.kind)
        records: list[dict[str, Any]] = [
            {"candidate": name, "prompt": prompt, "agent": agent, "row": label, "prediction": None, "truth": truth,
             "correct": False, "input_tokens": 0, "output_tokens": 0, "cost": 0.0, "latency_ms": None,
             "cached": False, "error": None}
            for label, truth in zip(self.frame.index, truths, strict=True)
        ]
        for position, response in zip(batch.indices, batch.results, strict=True):
            prediction = response.message if self.kind == "text" else response.output
            records[position].update(
                prediction=prediction, correct=_scored(metric, prediction, truths[position], name),
                input_tokens=response.input_tokens, output_tokens=response.output_tokens,
                cost=(response.cached_cost or 0.0) if response.cached else response.cost,
                latency_ms=None if response.cached else response.latency_ms, cached=response.cached,
            )
        for failure in batch.failed:
            records[failure.position]["error"] = f"{type(failure.error).__name__}: {failure.error}"
        return records

    @functools.cached_property
    def summary(self) -> pd.DataFrame:
        """One row per candidate, best first (accuracy, then cost): n, accuracy and its 95 % interval, kappa and
        its interval and macro-F1 (with ``labels``), errors, tokens, cost (USD), p50/p95 latency (ms).

        With right/wrong scores the interval is Wilson's; with fractional scores, a normal interval of the mean.
        Latency counts the rows that made a request (not cache hits nor failures).
        """
        import pandas as pd

        table = pd.DataFrame([self._candidate_summary(name, group) for name, group in self._groups()])
        table = table.sort_values(["accuracy", "cost"], ascending=[False, True], kind="stable")
        return table.set_index("candidate")

    def _groups(self) -> list[tuple[str, pd.DataFrame]]:
        grouped = dict(tuple(self.rows.groupby("candidate", sort=False)))
        return [(name, grouped[name]) for name, _, _ in self.candidates]

    def _candidate_summary(self, name: str, rows: pd.DataFrame) -> dict[str, Any]:
        scores = rows["correct"].astype(float).tolist()
        n = len(scores)
        binary = all(score in (0.0, 1.0) for score in scores)
        low, high = wilson_interval(int(sum(scores)), n) if binary else mean_interval(scores)
        summary: dict[str, Any] = {
            "candidate": name, "prompt": rows["prompt"].iloc[0], "agent": rows["agent"].iloc[0], "n": n,
            "accuracy": sum(scores) / n if n else math.nan, "low": low, "high": high,
        }
        if self.kind == "labels":
            truth, predicted = rows["truth"].tolist(), rows["prediction"].tolist()
            kappa, kappa_low, kappa_high = cohen_kappa(truth, predicted, self.labels)
            summary |= {"kappa": kappa, "kappa_low": kappa_low, "kappa_high": kappa_high,
                        "macro_f1": macro_f1(truth, predicted, self.labels)}
        asked = rows[~rows["cached"].fillna(False) & rows["error"].isna()]
        p50, p95 = latency_percentiles(asked["latency_ms"].astype(float).tolist())
        return summary | {
            "errors": int(rows["error"].notna().sum()),
            "input_tokens": int(rows["input_tokens"].sum()), "output_tokens": int(rows["output_tokens"].sum()),
            "cost": float(rows["cost"].sum()), "p50_ms": p50, "p95_ms": p95,
        }

    def agreement(self, human: str, candidate: str | None = None) -> Agreement:
        """How well ``candidate``'s predictions agree with the people's labels in column ``human`` (kappa with its
        interval, raw agreement, confusion table), on the rows that have one. ``candidate`` may be left out when
        the grid has one::

            result.agreement(human="annotator_label", candidate="judge/4o")
        """
        if human not in self.frame.columns:
            from aiforge.core.templates import no_such_column

            raise UsageError(no_such_column("agreement: human=", human, self.frame.columns))
        name = self._one_candidate(candidate)
        predicted = self.rows.loc[self.rows["candidate"] == name, "prediction"].tolist()
        return agreement(predicted, self.frame[human].tolist(), self.labels)

    def _one_candidate(self, candidate: str | None) -> str:
        names = [name for name, _, _ in self.candidates]
        if candidate is None and len(names) == 1:
            return names[0]
        if candidate in names:
            return candidate
        what = "say which candidate" if candidate is None else f"no candidate {candidate!r}"
        raise UsageError(f"agreement: {what}: candidate= one of {', '.join(map(repr, names))}")

    def plot(self, ax: Axes | None = None) -> Axes:
        """Accuracy (with its 95 % interval as error bars) against cost, one labelled point per candidate."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        table = self.summary
        accuracy = table["accuracy"].to_numpy(dtype=float)
        errors = [accuracy - table["low"].to_numpy(dtype=float), table["high"].to_numpy(dtype=float) - accuracy]
        ax.errorbar(table["cost"], accuracy, yerr=errors, fmt="o", capsize=4)
        for (cost, value), names in _points(table.index, table["cost"], accuracy).items():
            ax.annotate(", ".join(names), (cost, value), textcoords="offset points", xytext=(6, 4), fontsize=9)
        ax.locator_params(axis="x", nbins=4)  # dollar ticks with many decimals run into each other otherwise
        ax.set_xlabel("cost (USD)")
        ax.set_ylabel("accuracy (95 % interval)")
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(f"{len(table)} candidates on {len(self.frame)} rows")
        return ax

    def own_fields(self) -> dict[str, str]:
        """The candidates and rows (``print(result)``'s line starts with them)."""
        return {"candidates": str(len(self.candidates)), "rows": str(len(self.frame))}

    def __repr__(self) -> str:
        try:
            best = self.summary.iloc[0]
        except UsageError:  # a metric that raises: the repr still shows, .summary says what went wrong
            lead = ""
        else:
            lead = f", best={best.name!r} ({best['accuracy']:.3f})"
        return f"EvalResult(candidates={len(self.candidates)}, rows={len(self.frame)}{lead})"

    def _repr_html_(self) -> str:
        left = f"; {self.unlabelled} rows without a truth left out" if self.unlabelled else ""
        return (
            f"<div><b>Evaluation</b> · {len(self.candidates)} candidates on {len(self.frame)} rows "
            f"(truth: {html.escape(self.truth)}{html.escape(left)}){summary_html(self.summary)}</div>"
        )


def _points(
    names: Iterable[Any], costs: Iterable[float], accuracies: Iterable[float]
) -> dict[tuple[float, float], list[str]]:
    """Candidates by their point on the plot: those at the same cost and accuracy (two free models that score
    alike) share one label instead of printing over each other."""
    points: dict[tuple[float, float], list[str]] = {}
    for name, cost, value in zip(names, costs, accuracies, strict=True):
        points.setdefault((float(cost), float(value)), []).append(str(name))
    return points


def _scored(metric: Callable[[Any, Any], bool | float], prediction: Any, truth: Any, candidate: str) -> float:
    """``metric(prediction, truth)`` as a number in [0, 1]; a metric that raises or answers otherwise is named."""
    try:
        score = metric(prediction, truth)
        score = score.item() if hasattr(score, "item") else score  # a NumPy bool or float
    except Exception as exc:
        raise UsageError(
            f"metric raised {type(exc).__name__}: {exc} on candidate {candidate!r} "
            f"(prediction {prediction!r:.60}, truth {truth!r:.60}); fix it and call result.rescore(metric)"
        ) from exc
    if isinstance(score, bool):
        return float(score)
    if not isinstance(score, int | float) or not 0 <= score <= 1:
        raise UsageError(f"metric must return True/False or a score in [0, 1], got {score!r:.60} on {candidate!r}")
    return float(score)
