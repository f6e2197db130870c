"""OpenAI's embeddings API (``POST /v1/embeddings``) for every Chat Completions provider: OpenAI itself and any
OpenAI-compatible server (``internal_gateway``, vLLM, Ollama, llama.cpp's llama-server, LM Studio).

The request goes through the SDK's ``client.embeddings.create`` with ``encoding_format="base64"``: that is what
the SDK sends when none is named too, but then it decodes each vector into a Python list of floats; naming it
leaves the base64 text as it came, and ``numpy.frombuffer`` reads it at once (little-endian float32, as OpenAI
sends it). A server that ignores the format and answers plain float lists is read as well. The call is paced,
retried and its errors mapped exactly as a chat call's (``SDKProvider``).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from aiforge.core.retry import call_with_retries
from aiforge.core.types import Embeddings, ProviderError, Usage

if TYPE_CHECKING:
    import numpy as np

    from aiforge.providers.sdk import SDKProvider

DEFAULT_OPENAI_EMBEDDING_MODEL = "text-embedding-3-small"


async def embed_over_openai(provider: SDKProvider[Any], texts: Sequence[str], model: str | None) -> Embeddings:
    """The vectors of ``texts`` from one ``/embeddings`` request of ``provider``'s OpenAI client."""
    name = provider.embedding_model(model)
    inputs = list(texts)
    caught = provider._sdk_errors().caught
    pacer = provider._pacer
    paced = [{"content": text} for text in inputs]  # what the pacer estimates a request's tokens from

    async def attempt() -> Embeddings:
        reserved = await pacer.acquire(paced, 1)  # nothing is generated: no output allowance beyond a token
        try:
            response = await provider.client().embeddings.create(input=inputs, model=name, encoding_format="base64")
        except caught as exc:
            provider._fail(exc)
        embeddings = _embeddings_from(response, len(inputs), name, provider.name)
        pacer.settle(reserved, embeddings.usage.input_tokens)
        return embeddings

    return await call_with_retries(attempt, policy=provider.retry_policy)


def _embeddings_from(response: Any, count: int, model: str, provider: str) -> Embeddings:
    """``Embeddings`` of a ``CreateEmbeddingResponse``: rows put in input order by their ``index``."""
    import numpy as np

    data = sorted(response.data or (), key=lambda item: item.index)
    if [item.index for item in data] != list(range(count)):
        raise ProviderError(
            f"the {provider} server answered {len(data)} embeddings (indexes {[i.index for i in data][:10]}) "
            f"for {count} texts",
            provider=provider,
        )
    rows = [_vector(item.embedding, provider) for item in data]
    if len({row.shape[0] for row in rows}) > 1:
        raise ProviderError(f"the {provider} server answered vectors of different lengths", provider=provider)
    vectors = np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)
    usage = getattr(response, "usage", None)
    tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
    return Embeddings(vectors, Usage(input_tokens=tokens), getattr(response, "model", None) or model)


def _vector(raw: Any, provider: str) -> np.ndarray:
    """One embedding as float32: base64 of little-endian float32s, or a list of numbers."""
    import numpy as np

    if isinstance(raw, str):
        try:
            data = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ProviderError(
                f"the {provider} server answered an embedding that is not base64", provider=provider
            ) from exc
        if len(data) % 4:
            raise ProviderError(
                f"the {provider} server answered a base64 embedding of {len(data)} bytes, not float32s",
                provider=provider,
            )
        return np.frombuffer(data, dtype="<f4").astype(np.float32)
    return np.asarray(raw, dtype=np.float32)
