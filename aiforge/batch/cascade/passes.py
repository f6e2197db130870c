"""A cascade's first pass (``run``): every row's answer and confidence, the sample, and the rows to calibrate on.

* ``scoring_pass``: a cheap model scores every lead row's labels (``scoring``), then the sample is drawn from the
  rows it scored and answered by the reference; the whole sample calibrates.
* ``proxy_pass``: the sample is drawn first and answered by the reference; a classifier on the rows' embeddings
  (``proxy``) is trained on half of it and scores every row; only the other half calibrates.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aiforge.batch.cascade.proxy import RowVectors, embed_rows, fit_proxy, proxy_scores, train_part
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
    """The sample rows the proxy was trained on (none for a cheap model)."""
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
    """Every row embedded (each distinct text once, before any strong request), the sample answered, the proxy
    trained on half of it (``proxy.train_part``) and scoring every row; the other half calibrates."""
    import numpy as np

    texts = batch.inputs
    rows = [i for i in range(len(texts)) if i not in batch.errors]
    vectors = await embed_rows(strong, [texts[i] for i in rows])
    sample, reference = await reference_of(rows)
    trained, calibrated = train_part(sorted(reference), seed)
    started = time.perf_counter()
    model = fit_proxy(
        np.stack([vectors.by_text[texts[i]] for i in trained]) if trained else np.zeros((0, 0)),
        [reference[i] for i in trained],
        seed,
    )
    name = f"proxy:{vectors.model}"
    only = reference[trained[0]] if trained else labels[0]
    matrix = np.stack([vectors.by_text[texts[i]] for i in rows]) if rows else np.zeros((0, 0))
    scores = proxy_scores(model, labels, matrix, only, name)
    latency = (time.perf_counter() - started) * 1000 / max(len(rows), 1)
    scored = {i: ScoredRow(row, 0.0, latency) for i, row in zip(rows, scores, strict=True)}
    return FirstPass(name, scored, {}, sample, reference, calibrated, trained, vectors)
