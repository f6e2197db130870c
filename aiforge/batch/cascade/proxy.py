"""``Cascade(first="proxy")``: a classifier on the rows' embeddings, trained on the strong model's labels.

The rows are embedded by the strong agent's embedding provider (``EMBEDDING_PROVIDER``:
``providers.embedding_choice``; all-MiniLM-L6-v2 in process when the chat provider is the embedded model and the
``[embeddings]`` extra is installed), each distinct text once. scikit-learn's ``LogisticRegression`` (in the extra) is
fitted on one part of the labelled sample (``train_part``); its probabilities score every row, and the threshold is
chosen on the other part only, which it never saw: so the guarantee of ``threshold`` holds as for any cheap model.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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


def train_part(labelled: Sequence[int], seed: int) -> tuple[list[int], list[int]]:
    """The sample rows ``labelled`` cut in two at random (``seed``): half to train on, the rest to calibrate on."""
    shuffled = list(labelled)
    random.Random(f"proxy {seed}").shuffle(shuffled)
    cut = len(shuffled) // 2
    return sorted(shuffled[:cut]), sorted(shuffled[cut:])


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
    import numpy as np

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
    step = max(1, provider.embedding_limits.max_inputs)
    by_text: dict[str, np.ndarray] = {}
    usage, cost, requests = Usage(), 0.0, 0
    for start in range(0, len(distinct), step):
        chunk = distinct[start : start + step]
        result = await provider.embed(chunk, model)
        requests += 1
        raw = np.asarray(result.vectors, dtype=np.float32).reshape(len(chunk), -1)
        norms = np.linalg.norm(raw, axis=1, keepdims=True)
        rows = (raw / np.where(norms == 0, 1.0, norms)).astype(np.float32)
        by_text.update(zip(chunk, rows, strict=True))
        usage = usage + result.usage
        cost += owner.cost_tracker.record(
            result.usage,
            result.model or model,
            provider=name,
            kind="embedding",
            price_overrides=settings.PRICES or None,
            free=provider.free,
        ).cost
    return RowVectors(by_text, model, requests, usage, cost)


def fit_proxy(vectors: np.ndarray, labels: Sequence[str], seed: int) -> Any:
    """A ``LogisticRegression`` fitted on ``vectors`` and their ``labels``; None when they hold one label only (the
    proxy then answers it on every row, with confidence 1.0)."""
    if len(set(labels)) < 2:
        return None
    model = logistic_regression()(max_iter=1000, random_state=seed)
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
