"""embed_texts / run_embeddings on the scripted provider: vectors, duplicates, the cache, requests and errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from aiforge import ChatAgent
from aiforge.core.types import ConfigError, EmbeddingLimits, ProviderError, UsageError
from aiforge.providers.scripted import ScriptedProvider
from aiforge.semantic.embeddings import embed_texts, run_embeddings

TEXTS = ["a red apple on the table", "a red apple on a table", "tax law of 1986", "quarterly revenue grew"]


def agent_of(provider: ScriptedProvider | None = None, **settings: Any) -> ChatAgent:
    return ChatAgent(provider=provider or ScriptedProvider(), **settings)


def test_vectors_are_float32_unit_rows_in_the_order_of_the_texts() -> None:
    vectors = embed_texts(agent_of(), TEXTS)
    assert vectors.shape == (4, 256) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    similar = vectors @ vectors.T
    assert similar[0, 1] > 0.8 and abs(similar[0, 2]) < 0.2 and abs(similar[2, 3]) < 0.2
    assert np.allclose(embed_texts(agent_of(), TEXTS[::-1]), vectors[::-1])


def test_scripted_vectors_are_the_users_and_scaled_to_length_one() -> None:
    fake = ScriptedProvider(embeddings=lambda text: [3.0, 4.0] if "apple" in text else [0.0, 2.0])
    vectors = embed_texts(agent_of(fake), TEXTS[:3])
    assert np.allclose(vectors, [[0.6, 0.8], [0.6, 0.8], [0.0, 1.0]])


def test_a_duplicate_text_is_embedded_once_and_shares_its_row() -> None:
    fake = ScriptedProvider()
    run = run_embeddings(agent_of(fake), ["b", "a", "b", "a", "c"])
    assert fake.embed_calls == [["b", "a", "c"]]
    assert (run.embedded, run.cached, run.requests) == (3, 0, 1)
    assert np.array_equal(run.vectors[0], run.vectors[2]) and np.array_equal(run.vectors[1], run.vectors[3])


def test_texts_are_split_into_requests_by_count_and_by_estimated_tokens() -> None:
    fake = ScriptedProvider(embedding_limits=EmbeddingLimits(max_inputs=3, max_tokens=10))
    texts = ["one", "two", "three", "four", "x" * 27, "five", "日本語"]  # UTF-8 bytes / 3: 1, 1, 2, 2, 9, 2, 3
    run = run_embeddings(agent_of(fake), texts, concurrency=1)
    assert fake.embed_calls == [["one", "two", "three"], ["four"], ["x" * 27], ["five", "日本語"]]
    assert run.requests == 4
    assert run_embeddings(agent_of(fake), [f"t{i}" for i in range(5)], batch_size=2, concurrency=1).requests == 3
    assert fake.embed_calls[4:] == [["t0", "t1"], ["t2", "t3"], ["t4"]]


def test_a_cached_text_is_not_asked_again_nor_paid() -> None:
    fake = ScriptedProvider()
    agent = agent_of(fake, cache="memory")
    first = run_embeddings(agent, TEXTS[:2])
    second = run_embeddings(agent, TEXTS)
    assert fake.embed_calls == [TEXTS[:2], TEXTS[2:]]
    assert (second.cached, second.embedded, second.requests) == (2, 2, 1)
    assert np.array_equal(second.vectors[:2], first.vectors)
    assert run_embeddings(agent, TEXTS).requests == 0 and len(fake.embed_calls) == 2


def test_cache_false_asks_again_and_a_named_cache_is_used_for_this_call() -> None:
    fake = ScriptedProvider()
    agent = agent_of(fake, cache="memory")
    run_embeddings(agent, ["a"])
    run_embeddings(agent, ["a"], cache=False)
    assert len(fake.embed_calls) == 2
    path = "embeddings.sqlite"
    run_embeddings(agent_of(fake), ["b"], cache=path)
    assert run_embeddings(agent_of(fake), ["b"], cache=path).cached == 1 and len(fake.embed_calls) == 3


def test_another_model_is_another_cache_entry() -> None:
    fake = ScriptedProvider()
    agent = agent_of(fake, cache="memory")
    run_embeddings(agent, ["a"])
    run = run_embeddings(agent, ["a"], model="other-embedding")
    assert run.requests == 1 and run.model == "other-embedding"
    assert run_embeddings(agent_of(fake, cache="memory", EMBEDDING_MODEL="from-settings"), ["a"]).model == (
        "from-settings"
    )


def test_a_failed_request_raises_and_caches_only_the_requests_that_succeeded() -> None:
    def vectors(text: str) -> list[float]:
        if text == "bad":
            raise ProviderError("the server is down", provider="scripted")
        return [1.0, float(len(text))]

    fake = ScriptedProvider(embeddings=vectors, embedding_limits=EmbeddingLimits(max_inputs=2))
    agent = agent_of(fake, cache="memory")
    with pytest.raises(ProviderError, match="the server is down"):
        run_embeddings(agent, ["ok", "fine", "bad", "good"], concurrency=1)
    fake.embeddings = lambda text: [1.0, float(len(text))]
    run = run_embeddings(agent, ["ok", "fine", "bad", "good"])
    assert (run.cached, run.embedded) == (2, 2)
    assert fake.embed_calls[-1] == ["bad", "good"]


def test_costs_and_tokens_are_recorded_on_the_agent_as_embedding_calls() -> None:
    agent = agent_of()
    run = run_embeddings(agent, ["a red apple", "a pear"])
    assert run.usage.input_tokens == 11 // 4 + 1 + 6 // 4 + 1
    record = agent.cost_tracker.records[-1]
    assert (record.kind, record.model, record.input_tokens, record.cost) == ("embedding", "scripted-embedding", 5, 0.0)


@pytest.mark.parametrize(
    ("texts", "message"),
    [
        ("one text", "list of strings"),
        ({"a": "b"}, "list of strings"),
        (["a", None, "b"], r"items at \[1\] are NoneType"),
        (["a", ""], r"texts at \[1\] are empty"),
    ],
)
def test_bad_texts_are_refused_before_any_request(texts: Any, message: str) -> None:
    fake = ScriptedProvider()
    with pytest.raises(UsageError, match=message):
        embed_texts(agent_of(fake), texts)
    assert fake.embed_calls == []


@pytest.mark.parametrize(("option", "value"), [("concurrency", 0), ("batch_size", -1), ("batch_size", 1.5)])
def test_bad_options_are_refused(option: str, value: Any) -> None:
    with pytest.raises(UsageError, match=option):
        embed_texts(agent_of(), ["a"], **{option: value})


def test_a_provider_without_embeddings_names_the_ones_with() -> None:
    agent = ChatAgent(provider="anthropic", ANTHROPIC_API_KEY="sk-ant-test-key")
    with pytest.raises(ConfigError, match=r"anthropic provider cannot embed.*embeddings work with: .*openai.*scripted"):
        embed_texts(agent, ["a"])


def test_a_series_or_an_array_of_texts_is_taken_by_its_values() -> None:
    import pandas as pd

    expected = embed_texts(agent_of(), TEXTS)
    series = pd.Series(TEXTS, index=[9, 8, 7, 6])
    assert np.array_equal(embed_texts(agent_of(), series), expected)
    assert np.array_equal(embed_texts(agent_of(), np.array(TEXTS, dtype=object)), expected)


def test_no_texts_is_an_empty_matrix_and_no_request() -> None:
    fake = ScriptedProvider()
    run = run_embeddings(agent_of(fake), [])
    assert run.vectors.shape[0] == 0 and run.requests == 0 and fake.embed_calls == []
