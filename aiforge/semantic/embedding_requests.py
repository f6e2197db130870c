"""The requests that embed texts for ``run_embeddings``: cut within a provider's limits, sent ``concurrency`` at a
time, each reply checked and scaled to unit rows, priced, recorded on the agent's cost tracker and cached per text.
"""

from __future__ import annotations

import asyncio
import base64
from typing import TYPE_CHECKING, Any

from aiforge.core.embedding_batches import unit_rows
from aiforge.core.pricing import price_of
from aiforge.core.tokens import estimate_tokens
from aiforge.core.types import EmbeddingLimits, Usage

if TYPE_CHECKING:
    import numpy as np

    from aiforge.chat.agent import ChatAgent
    from aiforge.providers.base import Provider
    from aiforge.store import ResponseCache


def request_limits(limits: EmbeddingLimits, batch_size: int | None) -> EmbeddingLimits:
    """The provider's ``limits`` with at most ``batch_size`` texts a request."""
    if batch_size is None:
        return limits
    return EmbeddingLimits(max_inputs=min(batch_size, limits.max_inputs), max_tokens=limits.max_tokens)


class EmbeddingRequests:
    """One ``run_embeddings`` call's requests: its model and cache, the requests sent, their running totals."""

    def __init__(
        self, agent: ChatAgent, provider: Provider, provider_name: str, model: str, cache: ResponseCache | None
    ) -> None:
        self.agent, self.model, self.cache = agent, model, cache
        self.provider, self.provider_name = provider, provider_name
        self.usage = Usage()
        self.cost = 0.0
        self.priced = True
        self.requests = 0
        self.saved_cost = 0.0

    def key(self, text: str) -> str:
        from aiforge.store import fingerprint
        from aiforge.store.fingerprint import public_endpoint

        return fingerprint(
            {
                "kind": "embedding",
                "provider": self.provider_name,
                "endpoint": public_endpoint(self.provider.base_url),
                "model": self.model,
                "input": text,
            }
        )

    def cached_vectors(self, texts: list[str]) -> dict[str, np.ndarray]:
        """The vectors of ``texts`` the cache holds, by text."""
        if self.cache is None:
            return {}
        found = {}
        for text in texts:
            entry = self.cache.entry(self.key(text))
            if entry is not None:
                payload, cost = entry
                found[text] = _decoded(payload)
                self.saved_cost += cost
        return found

    async def embed_all(self, chunks: list[list[str]], concurrency: int) -> dict[str, np.ndarray]:
        """The vectors of every text of ``chunks``, ``concurrency`` requests at a time; the first error raises."""
        from aiforge.core.progress import progress_bar, progress_enabled

        vectors: dict[str, np.ndarray] = {}
        pending = list(reversed(chunks))
        shown = len(chunks) > 1 and progress_enabled(self.agent.settings.PROGRESS_BAR)
        bar = progress_bar(sum(map(len, chunks)), desc="aiforge embed", unit="text") if shown else None

        async def worker() -> None:
            while pending:
                chunk = pending.pop()
                vectors.update(await self.embed_chunk(chunk))
                if bar is not None:
                    bar.update(len(chunk))

        tasks = [asyncio.ensure_future(worker()) for _ in range(min(concurrency, len(chunks)))]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if bar is not None:
                bar.close()
        return vectors

    async def embed_chunk(self, texts: list[str]) -> dict[str, np.ndarray]:
        """One request: its vectors normalised, priced, recorded and cached (only when the whole request succeeded)."""
        agent = self.agent
        result = await self.provider.embed(texts, self.model)
        rows = unit_rows(result.vectors, len(texts), self.provider_name)
        free = self.provider.free
        cost, priced = (0.0, True) if free else price_of(result.usage, self.model, agent.settings.PRICES)
        agent.cost_tracker.record(
            result.usage,
            self.model,
            provider=self.provider_name,
            kind="embedding",
            price_overrides=agent.settings.PRICES,
            free=free,
        )
        self.usage += result.usage
        self.cost += cost
        self.priced &= priced
        self.requests += 1
        if self.cache is not None:
            weights = [estimate_tokens(text) for text in texts]
            total = sum(weights)
            for text, row, weight in zip(texts, rows, weights, strict=True):
                self.cache.put(self.key(text), _encoded(row), cost=cost * weight / total if total else 0.0)
        return dict(zip(texts, rows, strict=True))


def _encoded(row: np.ndarray) -> dict[str, Any]:
    """A cache payload for one vector: its little-endian float32 bytes in base64 (a quarter of its JSON)."""
    return {"embedding": base64.b64encode(row.astype("<f4").tobytes()).decode("ascii"), "dim": int(row.shape[0])}


def _decoded(payload: dict[str, Any]) -> np.ndarray:
    import numpy as np

    return np.frombuffer(base64.b64decode(payload["embedding"]), dtype="<f4").astype(np.float32)
