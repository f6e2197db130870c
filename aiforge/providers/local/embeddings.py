"""Embeddings from the embedded model: the GGUF file's second llama.cpp server, in embedding mode (``engine.py``).

The bundled SmolLM2-135M-Instruct is a chat model, not an embedding model: its mean-pooled vectors (576 long)
rank near paraphrases first, but every pair of English texts scores high (cosine 0.6 to 0.9 for unrelated ones),
so thresholds made on a real embedding model do not carry over. It is for trying ``embed`` (and the operators on
it) offline; a GGUF embedding model (``LOCAL_MODEL_PATH``, e.g. a bge or nomic-embed GGUF) gives real ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from aiforge.core.types import BadRequestError, EmbeddingLimits, Embeddings, ProviderError, Usage

if TYPE_CHECKING:
    from aiforge.providers.local.engine import LocalEngine

LOCAL_EMBEDDING_LIMITS = EmbeddingLimits(max_inputs=32)
"""Texts per call into the engine: all run in process, so a call is cut only to let progress and a failure show."""


async def embed_locally(
    engine: LocalEngine, texts: Sequence[str], error_of: Callable[[dict[str, Any]], ProviderError]
) -> Embeddings:
    """The vectors of ``texts`` from ``engine`` (embedding mode), decoded on its worker thread.

    ``error_of`` turns an error answer of llama.cpp into the provider's error.
    """
    import numpy as np

    loop = asyncio.get_running_loop()
    answer = await loop.run_in_executor(engine.executor, engine.embed, list(texts))
    if "error" in answer:
        error = answer["error"] if isinstance(answer["error"], dict) else {"message": str(answer["error"])}
        if "too large to process" in str(error.get("message")):  # llama.cpp answers 500 to a text over its batch
            raise BadRequestError(
                f"the embedded model cannot embed a text this long ({error.get('message')}): a text must fit in "
                f"LOCAL_CONTEXT_SIZE tokens (now {engine.context_size}, env AIFORGE_LOCAL_CONTEXT_SIZE or "
                "aiforge.yaml); shorten or split it",
                provider="local", status_code=400, body=error,
            )
        raise error_of(error)
    data = sorted(answer.get("data") or (), key=lambda item: item["index"])
    if len(data) != len(texts):
        raise ProviderError(
            f"the embedded model answered {len(data)} embeddings for {len(texts)} texts", provider="local"
        )
    vectors = np.array([item["embedding"] for item in data], dtype=np.float32).reshape(len(texts), -1)
    tokens = int((answer.get("usage") or {}).get("prompt_tokens") or 0)
    return Embeddings(vectors, Usage(input_tokens=tokens), engine.model_name)
