"""The cascade strategy: a label batch answered by a cheap model where it is confident enough, the rest by a strong one.

1. The cheap model (``Cascade.first``) scores every lead row's labels (``scoring``): an answer and its
   confidence, through the batch's one worker pool (``runner.BatchRun``); a repeated row shares its lead's scores.
   A row it fails on goes to the strong model.
2. A seeded random sample of the scored rows is answered by the strong model (``then``), or read from the
   user's labels (``truth=``). ``threshold.choose_threshold`` picks the confidence threshold.
   With ``first="proxy"`` the sample comes first: classifiers on the rows' embeddings are cross-fitted on it and
   score every row with a model that never saw it, and the whole sample calibrates (``passes.proxy_pass``).
3. Rows at or above it keep the cheap answer; the others go to the strong model. A sample row already has
   its strong answer and is never asked again (one the strong model failed on keeps the cheap answer when
   that is at or above the threshold, and stays failed otherwise, as any failed row of a batch).

The strong model's rows are asked live (``live.answer_texts``), so they get the cache, concurrency, progress bar
and failures of any batch. Checkpoints and budgets are not combined with a cascade (a ``UsageError`` says so); an
estimate lists the cascade among its plans (``plan_table``).
"""

from __future__ import annotations

import dataclasses
import random
import sys
import time
from typing import TYPE_CHECKING, Any

from aiforge.batch.cascade.files import check_cascade_files
from aiforge.batch.cascade.passes import proxy_pass, scoring_pass
from aiforge.batch.cascade.proxy import check_proxy_output, logistic_regression
from aiforge.batch.cascade.report import CascadeReport
from aiforge.batch.cascade.scoring import CheapAnswer
from aiforge.batch.cascade.spec import PROXY, Cascade
from aiforge.batch.cascade.threshold import choose_threshold
from aiforge.batch.identity import pricer_of
from aiforge.batch.live import answer_texts
from aiforge.batch.output_labels import label_of, label_values
from aiforge.batch.prepare import Answered
from aiforge.batch.savings import CASCADE, Savings
from aiforge.core.types import UsageError

if TYPE_CHECKING:
    from aiforge.batch.options import BatchOptions
    from aiforge.batch.owner import BatchOwner
    from aiforge.batch.prepare import PreparedBatch
    from aiforge.core.output import OutputSpec


def check_cascade_options(options: BatchOptions) -> None:
    """A ``UsageError`` for the options a cascade does not combine with."""
    if options.plan == "cheapest":
        raise UsageError(
            "plan='cheapest' chooses how one model's requests are sent and does not combine with cascade=; "
            "use plan='as_is' (the default) with a cascade"
        )
    for name in ("checkpoint", "max_cost"):
        if getattr(options, name) is not None:
            raise UsageError(f"cascade= does not combine with {name}= yet; run the cascade without it")
    if options.calibrate:
        raise UsageError("cascade= does not combine with calibrate=True: its threshold is set on the scores as given")


async def answer_cascade(batch: PreparedBatch) -> Answered:
    """Answer ``batch`` as its ``options.cascade`` says; the report is a ``CascadeReport``."""
    options, spec, texts = batch.options, batch.spec, batch.inputs
    cascade = options.cascade
    assert isinstance(cascade, Cascade)
    strong = batch.owner if cascade.then is None else cascade.then
    check_cascade_files(cascade, batch.owner, strong, batch.prompts)  # every model asked takes the prompts' files
    proxy = cascade.first == PROXY
    if proxy:  # said before any request
        check_proxy_output(spec)
        logistic_regression()
    values = label_values(spec)  # a UsageError for an output that is no label
    assert spec is not None
    truth = truth_labels(batch.items, cascade.truth, values)
    started = time.perf_counter()
    leads = batch.leads
    lead_of = {twin: lead for lead, twins in batch.duplicates.twins.items() for twin in twins}
    labels = list(values)
    done: dict[int, Any] = {}
    failed: dict[int, BaseException] = {}

    async def ask_strong(positions: list[int]) -> None:
        if not positions:
            return
        asked = dataclasses.replace(options, cascade=None, prompt=None, max_batch=len(positions))
        answers, errors = await answer_texts(strong, [texts[i] for i in positions], asked)
        done.update({positions[i]: result for i, result in answers.items()})
        failed.update({positions[i]: error for i, error in errors.items()})

    async def reference_of(rows: list[int]) -> tuple[list[int], dict[int, str]]:
        """A seeded random sample of ``rows`` and its reference labels (the strong model's, or the user's)."""
        # The sample is of rows, as the guarantee is: a text repeated on many rows weighs as many rows.
        eligible = [i for i in rows if truth is None or truth[i] is not None]
        sample = sorted(random.Random(cascade.seed).sample(eligible, min(cascade.sample, len(eligible))))
        if truth is not None:
            return sample, {i: label for i in sample if (label := truth[i]) is not None}
        await ask_strong(sorted({lead_of.get(i, i) for i in sample}))  # each sampled text once, by its first row
        for i, lead in lead_of.items():  # every row of a sampled text takes its strong answer
            if lead in done and batch.served_again is not None:
                done[i] = batch.served_again(done[lead])
        return sample, {i: label_of(done[i].output) for i in sample if i in done}

    if proxy:
        first = await proxy_pass(batch, strong, labels, reference_of, cascade.seed)
    else:
        first = await scoring_pass(batch, strong, spec, labels, reference_of)
    scored, score_errors = first.scored, first.score_errors
    calibrated = first.calibrated
    chosen = choose_threshold(
        [scored[i].scores.confidence for i in calibrated],
        [scored[i].scores.answer == first.reference[i] for i in calibrated],
        target=cascade.target,
        confidence=cascade.confidence,
    )
    kept = {i for i, row in scored.items() if row.scores.confidence >= chosen.threshold}
    answered = kept | done.keys() | failed.keys() | batch.errors.keys()
    await ask_strong([i for i in range(len(texts)) if i not in answered])

    columns = strong.result_type().failed_row("")
    answered_by: list[str | None] = [None] * len(texts)
    for i in range(len(texts)):
        if i in done:
            batch.done[i], answered_by[i] = done[i], "then"
        elif i in kept:
            row, lead = scored[i], i in leads
            batch.done[i] = CheapAnswer(
                values[row.scores.answer],
                row.scores.answer,
                row.scores.model,
                row.cost,
                row.scores.usage.input_tokens * lead,
                row.scores.usage.output_tokens * lead,
                row.latency_ms,
                row.scores.confidence,
                columns,
            )
            answered_by[i] = "first"
        elif i not in batch.errors:
            batch.errors[i] = failed.get(i) or score_errors[i]
    vectors = first.vectors
    report = CascadeReport(
        first_model=first.model,
        then_model=strong.model,
        answered_by=tuple(answered_by),
        sampled=tuple(first.sample),
        calibrated_on=len(calibrated),
        reference="then" if cascade.truth is None else f"truth:{cascade.truth}",
        threshold=chosen.threshold,
        agreement=chosen.agreement,
        lower_bound=chosen.lower_bound,
        target=cascade.target,
        confidence=cascade.confidence,
        first_cost=sum(row.cost for row in scored.values()) + (vectors.cost if vectors else 0.0),
        first_tokens=sum(
            scored[i].scores.usage.input_tokens + scored[i].scores.usage.output_tokens for i in leads if i in scored
        )
        + (vectors.usage.total_tokens if vectors else 0),
        then_cost=sum(r.cost for r in done.values()),
        then_cost_per_row=_cost_per_row(strong, spec, list(done.values()), [texts[i] for i in kept]),
        trained_on=len(first.trained),
        embedding_model=vectors.model if vectors else None,
        embedding_requests=vectors.requests if vectors else 0,
        embedding_cost=vectors.cost if vectors else 0.0,
    )
    # The strong model's requests for the rows the cheap one kept; a cascade that cost more saves no dollars.
    saved = Savings.of(CASCADE, requests=report.by_first, dollars=max(report.saved, 0.0))
    return Answered("cascade", time.perf_counter() - started, report, saved)


def truth_labels(items: Any, column: str | None, values: dict[str, Any]) -> list[str | None] | None:
    """The label of each row in the ``truth=`` column of ``items`` (None where missing); None without ``truth``."""
    if column is None:
        return None
    pd = sys.modules.get("pandas")
    if pd is None or not isinstance(items, pd.DataFrame):
        raise UsageError(
            f"Cascade(truth={column!r}) names a column of a DataFrame, but the items are a {type(items).__name__}"
        )
    if column not in items.columns:
        raise UsageError(f"Cascade(truth={column!r}): the DataFrame has no such column (it has {list(items.columns)})")
    labels: list[str | None] = [None if pd.isna(value) else label_of(value) for value in items[column].tolist()]
    odd = next((label for label in labels if label is not None and label not in values), None)
    if odd is not None:
        raise UsageError(f"Cascade(truth={column!r}) has the label {odd!r}, which is not one of {list(values)}")
    return labels


def _cost_per_row(strong: BatchOwner, spec: OutputSpec, answered: list[Any], kept_texts: list[str]) -> float:
    """What a row costs the strong model: the mean of those it answered (cache hits left out), else its estimate."""
    paid: list[float] = [r.cost for r in answered if not getattr(r, "cached", False)]
    if paid:
        return sum(paid) / len(paid)
    pricer = pricer_of(strong, spec)
    estimates = [pricer.cost(text) or 0.0 for text in kept_texts]
    return sum(estimates) / len(estimates) if estimates else 0.0  # nothing answered nor kept: nothing to price
