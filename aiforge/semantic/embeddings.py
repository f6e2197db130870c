"""Texts to vectors through an agent's provider: ``embed_texts`` (the vectors) and ``run_embeddings`` (the vectors
with what they cost), used by ``df.aiforge.embed`` and by the operators that compare texts (dedup, join).

What it does for the caller, so each operator does not:

* each distinct text is embedded once (duplicates share a row);
* a text already in the response cache is not asked again, nor paid (``cache=`` as ``run_batch``'s: None uses the
  agent's ``CACHE`` setting, False turns it off, True, a path or ``"memory"`` name a cache);
* the rest go in requests within the provider's ``embedding_limits`` (texts and estimated tokens per request),
  ``concurrency`` of them at a time, with a progress bar when there is more than one request;
* every row is scaled to unit length (L2 norm 1), so a dot product is the cosine similarity (a zero vector stays zero);
* a failed request raises its mapped aiforge error (``ProviderError`` and its kinds) once the requests in flight are
  cancelled; the requests that had succeeded are cached, whole vectors only, so running it again pays only the rest;
* the cost and tokens of the requests are recorded on ``agent.cost_tracker`` (kind ``"embedding"``) and returned.

The requests themselves (cut within the limits, sent, normalised, priced, cached) are ``semantic.embedding_requests``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from aiforge.batch.options import DEFAULT_CONCURRENCY as OPERATIONS_CONCURRENCY
from aiforge.chat.arguments import checked_positive
from aiforge.core.aio import run_sync
from aiforge.core.embedding_batches import chunked
from aiforge.core.report import OperationReport
from aiforge.core.types import ConfigError, Usage, UsageError
from aiforge.semantic.embedding_requests import EmbeddingRequests, request_limits

if TYPE_CHECKING:
    import numpy as np

    from aiforge.chat.agent import ChatAgent
    from aiforge.providers.base import Provider
    from aiforge.store import ResponseCache

CacheOption = bool | str | os.PathLike[str] | None
"""``cache=``: None uses the agent's ``CACHE`` setting; False off; True, a path or ``"memory"`` name a cache."""

DEFAULT_CONCURRENCY = OPERATIONS_CONCURRENCY
"""Embedding requests in flight at once: every operation's one default (``batch.options.DEFAULT_CONCURRENCY``)."""


@dataclass(frozen=True, slots=True, repr=False)
class EmbeddingReport(OperationReport):
    """What embedding texts did and spent, without the vectors: ``embed``'s ``.attrs["aiforge"]`` (the vectors are
    the Series' values), and ``dedup``'s and ``cluster``'s ``report.embedding``. An ``OperationReport``
    (``core.report``): lean, so pandas' deep copy of ``.attrs`` (``head``, ``copy``) copies nothing."""

    title = "Embed"
    model: str
    """The embeddings model asked."""
    usage: Usage = field(repr=False)
    """Input tokens of the requests made (cached texts cost none): ``total_tokens``."""
    cost: float = field(repr=False)
    """USD of the requests made (0.0 for a free provider or an unpriced model: see ``priced``): ``total_cost``."""
    priced: bool
    """False when the model has no price (add it with the ``PRICES`` setting)."""
    requests: int
    """Embeddings requests sent."""
    embedded: int
    """Distinct texts sent to the provider."""
    cached: int
    """Distinct texts served from the response cache."""
    saved_cost: float
    """USD the cached texts cost when they were first embedded."""
    dim: int
    """The length of each vector."""

    @property
    def total_cost(self) -> float:
        """``cost``, under the name a ``BatchResult`` gives it."""
        return self.cost

    @property
    def total_tokens(self) -> int:
        """The input tokens of the requests made, under the name a ``BatchResult`` gives them."""
        return self.usage.total_tokens

    @property
    def failed(self) -> list[Any]:
        """Always empty: a failed embeddings request raises (a rerun with ``cache=True`` embeds only the rest)."""
        return []


@dataclass(frozen=True, slots=True, repr=False)
class EmbeddingRun(EmbeddingReport):
    """The vectors of ``run_embeddings`` and what they cost: an ``EmbeddingReport`` with the vectors (``report()``:
    the same without them, for a result's ``.attrs``)."""

    vectors: np.ndarray = field(repr=False)
    """float32, shape ``(len(texts), dim)``, each row of unit length (or zero), in the order of the texts."""

    def report(self) -> EmbeddingReport:
        """The run's counts, cost and model without the vectors: what a result's ``.attrs["aiforge"]`` keeps."""
        return EmbeddingReport(**{name.name: getattr(self, name.name) for name in fields(EmbeddingReport)})


def embed_texts(
    agent: ChatAgent,
    texts: Iterable[str],
    *,
    model: str | None = None,
    cache: CacheOption = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    batch_size: int | None = None,
) -> np.ndarray:
    """The embedding of each of ``texts`` through ``agent``'s provider: float32 ``(len(texts), dim)``, unit rows.

    ``model``: None uses the ``EMBEDDING_MODEL`` setting, else the provider's default embeddings model. See the
    module docstring for caching, batching and errors; ``run_embeddings`` also returns the cost.

        agent = ChatAgent(provider="scripted")
        vectors = embed_texts(agent, ["a red apple", "a red apples", "tax law"])
        vectors @ vectors.T  # cosine similarities: the first two are close
    """
    run = run_embeddings(agent, texts, model=model, cache=cache, concurrency=concurrency, batch_size=batch_size)
    return run.vectors


def run_embeddings(
    agent: ChatAgent,
    texts: Iterable[str],
    *,
    model: str | None = None,
    cache: CacheOption = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    batch_size: int | None = None,
) -> EmbeddingRun:
    """``embed_texts`` with its cost, tokens, requests and cache hits (an ``EmbeddingRun``).

    run = run_embeddings(ChatAgent(provider="scripted"), ["a", "b", "a"])
    run.vectors.shape, run.embedded, run.cost  # ((3, 256), 2, 0.0)
    """
    return run_sync(
        arun_embeddings(agent, texts, model=model, cache=cache, concurrency=concurrency, batch_size=batch_size)
    )


async def arun_embeddings(
    agent: ChatAgent,
    texts: Iterable[str],
    *,
    model: str | None = None,
    cache: CacheOption = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    batch_size: int | None = None,
) -> EmbeddingRun:
    """``run_embeddings`` in async code."""
    checked = _checked_texts(texts)
    checked_positive("concurrency", concurrency)
    if batch_size is not None:
        checked_positive("batch_size", batch_size)
    provider, provider_name = embedding_provider_of(agent)
    if not provider.embeds:
        from aiforge.providers import embedding_providers

        raise ConfigError(
            f"the {provider_name} provider cannot embed texts (no embeddings API, or behind a REPLAY cassette, "
            f"which records no embeddings); embeddings work with: {', '.join(embedding_providers())}. "
            "Set EMBEDDING_PROVIDER to one of them or to sentence-transformers (the [embeddings] extra)."
        )
    name = provider.embedding_model(model or agent.settings.EMBEDDING_MODEL)
    store = _cache_of(agent, cache)
    distinct = list(dict.fromkeys(checked))
    run = EmbeddingRequests(agent, provider, provider_name, name, store)
    found = run.cached_vectors(distinct)
    missing = [text for text in distinct if text not in found]
    chunks = chunked(missing, request_limits(provider.embedding_limits, batch_size))
    found.update(await run.embed_all(chunks, concurrency))
    return _result(run, checked, found, embedded=len(missing), cached=len(distinct) - len(missing))


def embedding_provider_of(agent: ChatAgent) -> tuple[Provider, str]:
    """The provider that makes ``agent``'s vectors (``EMBEDDING_PROVIDER``, ``providers.embedding_choice``) and the
    name it is cached and priced under."""
    from aiforge.providers.embedding_choice import embedding_provider

    return embedding_provider(agent.settings, agent.provider, agent.provider_name)


def _checked_texts(texts: Iterable[str]) -> list[str]:
    """``texts`` as a list (a Series or an array gives its values); a ``UsageError`` naming what is not text."""
    if isinstance(texts, str | bytes | Mapping) or not isinstance(texts, Iterable):
        raise UsageError(f"texts must be a list of strings (or a Series of them), not {type(texts).__name__}")
    texts = list(texts)
    wrong = [i for i, text in enumerate(texts) if not isinstance(text, str)]
    if wrong:
        raise UsageError(
            f"texts must be strings: the items at {wrong[:10]} are {type(texts[wrong[0]]).__name__} "
            "(fill or drop missing values first)"
        )
    empty = [i for i, text in enumerate(texts) if not text]
    if empty:
        raise UsageError(f"the texts at {empty[:10]} are empty: the embeddings APIs reject empty input")
    return texts


def _cache_of(agent: ChatAgent, cache: CacheOption) -> ResponseCache | None:
    from aiforge.batch.identity import open_cache

    return agent.response_cache if cache is None else open_cache(cache)


def _result(
    run: EmbeddingRequests, texts: list[str], vectors: dict[str, np.ndarray], *, embedded: int, cached: int
) -> EmbeddingRun:
    """The vectors of ``texts`` in order, as one matrix, with what ``run``'s requests cost."""
    import numpy as np

    dims = {row.shape[0] for row in vectors.values()}
    if len(dims) > 1:
        raise ConfigError(
            f"the embeddings of these texts have different lengths {sorted(dims)}: the cache holds vectors of "
            f"another model under the name {run.model!r}; run with cache=False or clear the cache"
        )
    dim = dims.pop() if dims else 0
    matrix = np.stack([vectors[text] for text in texts]) if texts else np.zeros((0, dim), dtype=np.float32)
    return EmbeddingRun(
        vectors=matrix,
        model=run.model,
        usage=run.usage,
        cost=run.cost,
        priced=run.priced,
        requests=run.requests,
        embedded=embedded,
        cached=cached,
        saved_cost=run.saved_cost,
        dim=dim,
    )
