"""Embeddings over HTTP: the real ``openai`` SDK's ``embeddings.create`` against fakellm's ``/v1/embeddings``, for
the openai and internal_gateway providers, and ``run_embeddings`` through them (requests, splits, cost, cache)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from aiforge import ChatAgent
from aiforge.core.types import AuthenticationError, BadRequestError, ProviderError
from aiforge.semantic.embeddings import run_embeddings
from fakellm import Fault, LLMServer
from fakellm.embeddings import hashed_embedding
from tests.providers.conftest import GATEWAY, OPENAI, SECRET, WireProtocol


@pytest.fixture
def protocol() -> WireProtocol:
    return OPENAI


def openai_agent(server: LLMServer, **settings: Any) -> ChatAgent:
    return ChatAgent(
        provider="openai", OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=server.openai_base_url, MAX_RETRIES=0, **settings
    )


async def test_embed_is_one_request_in_openai_shape_with_base64_vectors_decoded(
    llm_server: LLMServer, make_provider: Any
) -> None:
    llm_server.strict = True
    result = await make_provider(llm_server.openai_base_url).embed(["a red apple", "tax law"])
    (request,) = llm_server.requests
    assert request.path == "/v1/embeddings"
    assert request.body == {"input": ["a red apple", "tax law"], "model": "text-embedding-3-small",
                            "encoding_format": "base64"}
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert result.vectors.dtype == np.float32 and result.vectors.shape == (2, 1536)
    expected = np.array([hashed_embedding("a red apple", 1536), hashed_embedding("tax law", 1536)], dtype=np.float32)
    assert np.array_equal(result.vectors, expected)
    assert (result.usage.input_tokens, result.usage.output_tokens, result.model) == (11 // 4 + 1 + 7 // 4 + 1, 0,
                                                                                      "text-embedding-3-small")


async def test_the_model_asked_is_sent(llm_server: LLMServer, make_provider: Any) -> None:
    result = await make_provider(llm_server.openai_base_url).embed(["a"], "text-embedding-3-large")
    assert llm_server.requests[0].body["model"] == "text-embedding-3-large" and result.vectors.shape == (1, 3072)


async def test_a_server_answering_float_lists_is_read_as_well(
    canned_sse: Callable[..., str], make_provider: Any
) -> None:
    body = {"object": "list", "model": "m", "usage": {"prompt_tokens": 3, "total_tokens": 3},
            "data": [{"object": "embedding", "index": 1, "embedding": [0.0, 1.0]},
                     {"object": "embedding", "index": 0, "embedding": [0.5, 0.25]}]}
    url = canned_sse([json.dumps(body)], content_type="application/json")
    result = await make_provider(url + "/v1").embed(["x", "y"])
    assert result.vectors.tolist() == [[0.5, 0.25], [0.0, 1.0]] and result.usage.input_tokens == 3


async def test_an_answer_missing_a_vector_is_a_provider_error(
    canned_sse: Callable[..., str], make_provider: Any
) -> None:
    body = {"object": "list", "model": "m", "usage": {"prompt_tokens": 3, "total_tokens": 3},
            "data": [{"object": "embedding", "index": 0, "embedding": [0.5, 0.25]}]}
    url = canned_sse([json.dumps(body)], content_type="application/json")
    with pytest.raises(ProviderError, match="answered 1 embeddings .* for 2 texts"):
        await make_provider(url + "/v1").embed(["x", "y"])


async def test_a_bad_key_is_an_authentication_error_naming_the_setting_without_the_key(
    llm_server: LLMServer, make_provider: Any
) -> None:
    llm_server.enqueue(Fault(status=401, message=f"Incorrect API key provided: {SECRET}"))
    with pytest.raises(AuthenticationError, match="OPENAI_API_KEY") as caught:
        await make_provider(llm_server.openai_base_url).embed(["a"])
    assert SECRET not in str(caught.value)


async def test_a_rate_limit_is_retried_by_the_policy(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Fault(status=429, retry_after=0))
    result = await make_provider(llm_server.openai_base_url, MAX_RETRIES=1).embed(["a"])
    assert llm_server.request_count == 2 and result.vectors.shape == (1, 1536)


async def test_too_many_inputs_are_refused_by_a_strict_server_as_a_bad_request(
    llm_server: LLMServer, make_provider: Any
) -> None:
    llm_server.strict = True
    with pytest.raises(BadRequestError, match="max number of inputs is 2048"):
        await make_provider(llm_server.openai_base_url).embed([f"t{i}" for i in range(2049)])


def test_run_embeddings_splits_at_2048_inputs_per_request(llm_server: LLMServer) -> None:
    llm_server.strict = True
    llm_server.embedder = lambda text: [1.0, float(len(text))]
    texts = [f"text number {i}" for i in range(5000)]
    run = run_embeddings(openai_agent(llm_server), texts, concurrency=2)
    assert sorted(len(r.body["input"]) for r in llm_server.requests) == [904, 2048, 2048]
    assert run.requests == 3 and run.vectors.shape == (5000, 2)
    expected = np.array([[1.0, len(t)] for t in texts], dtype=np.float32)
    assert np.allclose(run.vectors, expected / np.linalg.norm(expected, axis=1, keepdims=True))


def test_run_embeddings_splits_at_the_token_budget_of_a_request(llm_server: LLMServer) -> None:
    llm_server.strict = True  # refuses a request over 300 000 tokens
    llm_server.embedder = lambda text: [1.0]
    texts = [f"{i:04d}" + "x" * 7996 for i in range(200)]  # 2 001 tokens each, 400 200 in all
    run = run_embeddings(openai_agent(llm_server), texts, concurrency=1)
    assert [len(r.body["input"]) for r in llm_server.requests] == [112, 88]  # bounded at 8 000 / 3 tokens a text
    assert run.usage.input_tokens == 200 * (8000 // 4 + 1)


def test_cost_is_priced_from_the_price_table_and_recorded(llm_server: LLMServer) -> None:
    llm_server.embedder = lambda text: [1.0]
    texts = ["x" * 3999] * 2 + ["y" * 3999]  # 1 000 tokens each; a duplicate is sent once
    small = run_embeddings(openai_agent(llm_server), texts)
    assert (small.usage.input_tokens, small.priced) == (2000, True)
    assert small.cost == pytest.approx(2000 * 0.02 / 1e6)
    large = run_embeddings(openai_agent(llm_server, EMBEDDING_MODEL="text-embedding-3-large"), texts)
    assert large.cost == pytest.approx(2000 * 0.13 / 1e6) and large.model == "text-embedding-3-large"


def test_a_cached_text_makes_no_request_the_second_time(llm_server: LLMServer) -> None:
    texts = ["a red apple", "tax law", "a red apple"]
    first = run_embeddings(openai_agent(llm_server, CACHE="embeddings.sqlite"), texts)
    again = run_embeddings(openai_agent(llm_server, CACHE="embeddings.sqlite"), texts)
    assert llm_server.request_count == 1
    assert (again.requests, again.cached, again.cost) == (0, 2, 0.0)
    assert again.saved_cost == pytest.approx(first.cost)
    assert np.array_equal(again.vectors, first.vectors)


def test_a_failed_request_raises_the_mapped_error(llm_server: LLMServer) -> None:
    llm_server.enqueue(Fault(status=500, message="boom"))
    with pytest.raises(ProviderError, match="boom"):
        run_embeddings(openai_agent(llm_server, CACHE="memory"), ["a"])


def test_the_gateway_embeds_with_the_embedding_model_or_its_own(llm_server: LLMServer) -> None:
    prices = {model: {"input": 0.01, "output": 0.0} for model in ("served-model", "bge-small")}
    settings = {GATEWAY.url_setting: llm_server.openai_base_url, "GATEWAY_MODEL": "served-model", "PRICES": prices}
    run_embeddings(ChatAgent(provider="internal_gateway", **settings), ["a"])
    run_embeddings(ChatAgent(provider="internal_gateway", EMBEDDING_MODEL="bge-small", **settings), ["a"])
    assert [r.body["model"] for r in llm_server.requests] == ["served-model", "bge-small"]
    assert all(r.path == "/v1/embeddings" for r in llm_server.requests)


async def test_a_provider_without_an_embeddings_api_says_where_to_look(provider_cleanup: list[Any]) -> None:
    from aiforge.core.settings import load_settings
    from aiforge.providers import embedding_providers
    from aiforge.providers.anthropic import AnthropicProvider

    provider = AnthropicProvider(load_settings(ANTHROPIC_API_KEY=SECRET))
    provider_cleanup.append(provider)
    assert not provider.embeds
    with pytest.raises(ProviderError, match=r"anthropic provider has no embeddings API.*embedding_providers\(\)"):
        await provider.embed(["a"])
    assert {"openai", "internal_gateway", "local", "scripted"} <= set(embedding_providers())
    assert "anthropic" not in embedding_providers()
