"""``Cascade(first="proxy")``: logistic regressions on the rows' embeddings, cross-fitted on the reference labels.

The rows are embedded by the strong agent's embedding provider (``EMBEDDING_PROVIDER``:
``providers.embedding_choice``; all-MiniLM-L6-v2 in process when the chat provider is the embedded model and the
``[embeddings]`` extra is installed), each distinct text once. The labelled sample is cut at random into ``FOLDS``
folds; for each fold, scikit-learn's ``LogisticRegression`` (in the extra) is fitted on the other folds and scores
that fold's rows, and the rows outside the sample are dealt to the folds at random (a text with a sample row goes to
that row's fold), each scored by its fold's model. So no row is scored by a model that saw it, and a fold's sample
rows and the other rows dealt to it are alike draws that its model never saw: the threshold is chosen on every
sample row's out-of-fold confidence (``threshold``), with all of the sample calibrating and 90 % of it training
each model. The pooled Clopper-Pearson bound treats the folds as one sample; the fold models differ a little
(each trained on 9 of 10 folds), which is the approximation of cross-fitting.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiforge.core.embedding_batches import chunked, unit_rows
from aiforge.core.progress import progress_bar, progress_enabled
from aiforge.core.types import ConfigError, LabelScores, Usage, UsageError
from aiforge.providers.embedding_choice import check_embedding_settings, embedding_provider

if TYPE_CHECKING:
    import numpy as np

    from aiforge.batch.owner import BatchOwner
    from aiforge.core.output import OutputSpec

INSTALL_HINT = 'pip install "aiforge-kit[embeddings]"'


def logistic_regression() -> Any:
    """scikit-learn's ``LogisticRegression`` class; a one-line ``ConfigError`` when scikit-learn is missing."""
    try:
        return importlib.import_module("sklearn.linear_model").LogisticRegression
    except ImportError:
        raise ConfigError(
            f'Cascade(first="proxy") trains scikit-learn\'s LogisticRegression, which is not installed: {INSTALL_HINT}'
        ) from None


def check_proxy_output(spec: OutputSpec | None) -> None:
    """A ``UsageError`` for an output with no labels to learn (free text, a structured output)."""
    from aiforge.batch.output_labels import label_values

    try:
        label_values(spec)
    except UsageError:
        named = "free text (no output=)" if spec is None else f"output={spec.name}"
        raise UsageError(
            f'Cascade(first="proxy") learns labels (classify, output=Literal[...], an Enum or bool), not {named}; '
            "run that batch without cascade=, or with first= a model that answers it"
        ) from None


FOLDS = 10
"""How many folds the sample is cut into: each model trains on 90 % of it."""


def folds_of(labelled: Sequence[int], texts: Sequence[str], rows: Sequence[int], seed: int) -> dict[int, int]:
    """Each of ``rows``' fold: the distinct texts of the ``labelled`` sample rows dealt in turn after a seeded
    shuffle, every other text at random (seeded); the rows of one text share its fold."""
    rng = random.Random(f"proxy {seed}")
    sampled = list(dict.fromkeys(texts[row] for row in labelled))
    rng.shuffle(sampled)
    folds = min(FOLDS, len(sampled)) or 1
    fold_of_text = {text: k % folds for k, text in enumerate(sampled)}
    for row in rows:
        if texts[row] not in fold_of_text:
            fold_of_text[texts[row]] = rng.randrange(folds)
    return {row: fold_of_text[texts[row]] for row in rows}


@dataclass(frozen=True, slots=True)
class RowVectors:
    """The vectors of a batch's distinct texts, and what embedding them took."""

    by_text: dict[str, np.ndarray]
    model: str
    requests: int
    usage: Usage
    cost: float


async def embed_rows(owner: BatchOwner, texts: Sequence[str]) -> RowVectors:
    """Each distinct text of ``texts`` embedded once by ``owner``'s embedding provider, priced and recorded on its
    cost tracker (kind ``"embedding"``). A provider that cannot embed is a ``ConfigError`` before any request."""
    settings = owner.settings
    check_embedding_settings(settings, owner.provider_name)
    provider, name = embedding_provider(settings, owner.provider, owner.provider_name)
    if not provider.embeds:
        raise ConfigError(
            f'Cascade(first="proxy") embeds the rows, and the {name} provider cannot embed texts: set '
            f"EMBEDDING_PROVIDER to one that does (sentence-transformers, from {INSTALL_HINT})"
        )
    model = provider.embedding_model(settings.EMBEDDING_MODEL)
    distinct = list(dict.fromkeys(texts))
    chunks = chunked(distinct, provider.embedding_limits)
    by_text: dict[str, np.ndarray] = {}
    usage, cost, requests = Usage(), 0.0, 0
    shown = len(chunks) > 1 and progress_enabled(settings.PROGRESS_BAR)
    bar = progress_bar(len(distinct), desc=f"cascade: embedding on {model}", unit="text") if shown else None
    try:
        for chunk in chunks:
            result = await provider.embed(chunk, model)
            requests += 1
            by_text.update(zip(chunk, unit_rows(result.vectors, len(chunk), name), strict=True))
            usage = usage + result.usage
            cost += owner.cost_tracker.record(
                result.usage,
                result.model or model,
                provider=name,
                kind="embedding",
                price_overrides=settings.PRICES or None,
                free=provider.free,
            ).cost
            if bar is not None:
                bar.update(len(chunk))
    finally:
        if bar is not None:
            bar.close()
    return RowVectors(by_text, model, requests, usage, cost)


def fit_proxy(vectors: np.ndarray | None, labels: Sequence[str], seed: int) -> Any:
    """A ``LogisticRegression`` fitted on ``vectors`` and their ``labels``; None when they hold fewer than two labels
    (the proxy then answers the one label, or the first, on every row, with confidence 1.0)."""
    if vectors is None or len(set(labels)) < 2:
        return None
    # C=10: the rows are unit vectors, whose small coordinates the default C=1 shrinks to near-uniform answers.
    model = logistic_regression()(C=10.0, max_iter=1000, random_state=seed)
    model.fit(vectors, list(labels))
    return model


def proxy_scores(model: Any, labels: Sequence[str], vectors: np.ndarray, only: str, name: str) -> list[LabelScores]:
    """Each row's probabilities over ``labels`` from the fitted ``model`` (None: ``only``, the one label seen)."""
    if model is None:
        return [LabelScores({label: float(label == only) for label in labels}, model=name) for _ in vectors]
    classes = [str(c) for c in model.classes_]
    rows = model.predict_proba(vectors) if len(vectors) else []
    return [
        LabelScores(
            {label: float(row[classes.index(label)]) if label in classes else 0.0 for label in labels}, model=name
        )
        for row in rows
    ]
