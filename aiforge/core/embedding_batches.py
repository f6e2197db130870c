"""Embedding requests as data, for every path that embeds (``semantic.embedding_requests``, a proxy cascade's
``batch.cascade.proxy``): texts cut into requests within a provider's ``EmbeddingLimits``, and a reply's vectors
checked and scaled to unit rows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiforge.core.types import EmbeddingLimits, ProviderError

if TYPE_CHECKING:
    import numpy as np


def chunked(texts: list[str], limits: EmbeddingLimits) -> list[list[str]]:
    """``texts`` in order, cut into requests of at most ``max_inputs`` texts and ``max_tokens`` tokens (bounded by
    ``token_bound``). A text over the budget on its own still goes, alone: the server says whether it is too long.
    """
    chunks: list[list[str]] = []
    current: list[str] = []
    tokens = 0
    for text in texts:
        size = token_bound(text)
        if current and (len(current) >= limits.max_inputs or tokens + size > limits.max_tokens):
            chunks.append(current)
            current, tokens = [], 0
        current.append(text)
        tokens += size
    if current:
        chunks.append(current)
    return chunks


def token_bound(text: str) -> int:
    """A high estimate of ``text``'s tokens: its UTF-8 bytes / 3, rounded up.

    ``estimate_tokens`` (characters / 4) fits English but undercounts other scripts four times over, and a request
    over the server's budget fails whole; bytes / 3 is above the real count for English and near it for CJK.
    """
    return -(-len(text.encode("utf-8", "surrogatepass")) // 3)


def unit_rows(vectors: Any, count: int, provider: str) -> np.ndarray:
    """A provider's vectors as float32 rows of unit length (a zero row stays zero); checks there is one per text."""
    import numpy as np

    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != count or not np.isfinite(matrix).all():
        raise ProviderError(
            f"the {provider} provider returned embeddings of shape {matrix.shape} (finite: "
            f"{bool(np.isfinite(matrix).all())}) for {count} texts",
            provider=provider,
        )
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return unit
