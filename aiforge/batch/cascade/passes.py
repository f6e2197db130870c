"""A cascade's first pass (``run``): every row's answer and confidence, the sample, and the rows to calibrate on.

* ``scoring_pass``: a cheap model scores every lead row's labels (``scoring``), then the sample is drawn from the
  rows it scored and answered by the reference; the whole sample calibrates.
* ``proxy_pass``: the sample is drawn first and answered by the reference; classifiers on the rows' embeddings
  (``proxy``) are cross-fitted on it, so that no row is scored by a model trained on it; the whole sample calibrates.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aiforge.batch.cascade.proxy import RowVectors, embed_rows, fit_proxy, folds_of, proxy_scores
from aiforge.batch.cascade.scoring import ScoredRow, scorer_of
from aiforge.batch.runner import BatchRun
from aiforge.core.progress import progress_bar, progress_enabled

if TYPE_CHECKING:
    from aiforge.batch.owner import BatchOwner
    from aiforge.batch.prepare import PreparedBatch
    from aiforge.core.output import OutputSpec

Reference = Callable[[list[int]], Awaitable[tuple[list[int], dict[int, str]]]]
"""Draws the sample from the rows given and returns it with each sample row's reference label (where known)."""


@dataclass(frozen=True, slots=True)
class FirstPass:
    """What the first pass gave: each row's scores, the rows it failed on, the sample and its reference labels."""

    model: str
    scored: dict[int, ScoredRow]
    score_errors: dict[int, BaseException]
    sample: list[int]
    reference: dict[int, str]
    calibrated: list[int]
    """The sample rows the threshold is chosen on (with a reference label, and never trained on)."""
    trained: list[int] = field(default_factory=list)
    """The sample rows the proxy's models were trained on (each by all but the model of its fold; none for a
    cheap model)."""
    vectors: RowVectors | None = None


async def scoring_pass(
    batch: PreparedBatch, strong: BatchOwner, spec: OutputSpec, labels: list[str], reference_of: Reference
) -> FirstPass:
    """The cheap model (``Cascade.first``) scores every lead row through the batch's one worker pool (a repeated row
    shares its lead's scores); then the sample, all of it calibrating."""
    cascade = batch.options.cascade
    assert cascade is not None
    scorer = scorer_of(cascade.first, strong, spec)
    leads = batch.leads
    shown = progress_enabled(strong.settings.PROGRESS_BAR) and len(leads) > 0
    bar = progress_bar(len(leads), desc=f"cascade: scoring on {scorer.params.model}") if shown else None
    scored: dict[int, ScoredRow] = {}
    not_scored: dict[int, BaseException] = dict(batch.errors)
    run = BatchRun(
        batch.inputs,
        lambda text: scorer.score(text, labels),
        scored,
        not_scored,
        progress=bar,
        twins=batch.duplicates.twins,
        served_again=ScoredRow.served_again,
    )
    try:
        await run.run(batch.options.concurrency)
    finally:
        if bar is not None:
            bar.close()
    score_errors = {i: error for i, error in not_scored.items() if i not in batch.errors}
    if score_errors and not scored:
        raise next(iter(score_errors.values()))  # not one row scored: a setup problem, not a row's
    sample, reference = await reference_of(sorted(scored))
    return FirstPass(scorer.params.model, scored, score_errors, sample, reference, sorted(reference))


async def proxy_pass(
    batch: PreparedBatch, strong: BatchOwner, labels: list[str], reference_of: Reference, seed: int
) -> FirstPass:
    """Every row embedded (each distinct text once, before any strong request), the sample answered, and each row
    scored by the model of its fold, trained on the other folds' sample rows (``proxy.folds_of``); the whole
    sample calibrates, on confidences from models that never saw those rows."""
    import numpy as np

    texts = batch.inputs
    rows = [i for i in range(len(texts)) if i not in batch.errors]
    vectors = await embed_rows(strong, [texts[i] for i in rows])
    sample, reference = await reference_of(rows)
    labelled = sorted(reference)
    fold = folds_of(labelled, texts, rows, seed)
    name = f"proxy:{vectors.model}"
    started = time.perf_counter()
    scored: dict[int, ScoredRow] = {}
    for k in sorted(set(fold.values())):
        trained = [i for i in labelled if fold[i] != k]
        scoring = [i for i in rows if fold[i] == k]
        model = fit_proxy(
            np.stack([vectors.by_text[texts[i]] for i in trained]) if trained else None,
            [reference[i] for i in trained],
            seed,
        )
        only = reference[trained[0]] if trained else labels[0]
        scores = proxy_scores(model, labels, np.stack([vectors.by_text[texts[i]] for i in scoring]), only, name)
        scored.update({i: ScoredRow(row, 0.0, 0.0) for i, row in zip(scoring, scores, strict=True)})
    latency = (time.perf_counter() - started) * 1000 / max(len(rows), 1)
    scored = {i: ScoredRow(scored[i].scores, 0.0, latency) for i in rows}
    return FirstPass(name, scored, {}, sample, reference, labelled, labelled, vectors)
