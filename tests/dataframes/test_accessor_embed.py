"""df.aiforge.embed / s.aiforge.embed: a column of float32 vectors on the index, missing values kept missing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import aiforge  # noqa: F401 - registers the accessor
from aiforge import ChatAgent
from aiforge.core.types import UsageError
from aiforge.providers.scripted import ScriptedProvider
from aiforge.semantic.embed_column import embedding_matrix
from aiforge.semantic.embeddings import EmbeddingReport, embed_texts

REVIEWS = pd.read_csv(Path(__file__).parents[1] / "data" / "reviews.csv", index_col="id").head(6)


def test_embed_is_a_series_of_unit_float32_vectors_on_the_frames_index() -> None:
    fake = ScriptedProvider()
    subset = REVIEWS.iloc[[4, 1, 2]]
    vectors = subset.aiforge.embed("review", agent=ChatAgent(provider=fake))
    assert vectors.name == "review_embedding" and vectors.dtype == object
    assert list(vectors.index) == list(subset.index)
    assert all(v.dtype == np.float32 and v.shape == (256,) for v in vectors)
    expected = embed_texts(ChatAgent(provider=ScriptedProvider()), subset["review"].tolist())
    assert np.array_equal(embedding_matrix(vectors), expected)
    run = vectors.attrs["aiforge"]
    assert isinstance(run, EmbeddingReport) and run.requests == 1 and run.total_cost == 0.0


def test_a_missing_value_is_none_and_not_sent() -> None:
    fake = ScriptedProvider()
    values = pd.Series(["a red apple", None, np.nan, "a red apple", pd.NA], index=list("abcde"), name="text")
    vectors = values.aiforge.embed(agent=ChatAgent(provider=fake))
    assert [v is None for v in vectors] == [False, True, True, False, True]
    assert fake.embed_calls == [["a red apple"]]
    assert np.array_equal(vectors["a"], vectors["d"])


def test_an_empty_string_names_its_rows() -> None:
    values = pd.Series(["fine", ""], index=["x", "y"])
    with pytest.raises(UsageError, match=r"index \['y'\] are empty strings"):
        values.aiforge.embed(provider="scripted")


def test_a_value_that_is_not_text_names_its_row() -> None:
    with pytest.raises(UsageError, match="value at index 1 is int"):
        pd.Series(["fine", 7]).aiforge.embed(provider="scripted")


def test_an_unnamed_series_gives_embedding_and_settings_build_the_agent() -> None:
    vectors = pd.Series(["one", "two"]).aiforge.embed(provider="scripted", cache="memory")
    assert vectors.name == "embedding" and len(vectors) == 2


def test_an_unknown_column_names_the_columns() -> None:
    with pytest.raises(UsageError, match="embed: no column 'reviews' in the frame; did you mean 'review'"):
        REVIEWS.aiforge.embed("reviews", provider="scripted")
    with pytest.raises(UsageError, match="name of the text column, got a Series"):
        REVIEWS.aiforge.embed(REVIEWS["review"], provider="scripted")


@pytest.mark.parametrize("option", ["max_cost", "checkpoint", "pack", "dedup"])
def test_a_row_batch_option_is_named_as_an_option_embed_does_not_take(option: str) -> None:
    provider = ScriptedProvider()
    agent = ChatAgent(provider=provider)
    with pytest.raises(UsageError, match=f"embed does not take {option}=; of the batch options it takes cache="):
        REVIEWS.aiforge.embed("review", **{option: 1})
    with pytest.raises(UsageError, match=f"does not take {option}="):
        REVIEWS["review"].aiforge.embed(agent=agent, **{option: 1})
    assert provider.embed_calls == []


def test_settings_beside_an_agent_are_refused() -> None:
    with pytest.raises(UsageError, match="EMBEDDING_MODEL"):
        REVIEWS.aiforge.embed("review", agent=ChatAgent(provider="scripted"), EMBEDDING_MODEL="x")


def test_the_embedding_model_and_the_cache_pass_through() -> None:
    fake = ScriptedProvider()
    agent = ChatAgent(provider=fake, cache="memory")
    REVIEWS.aiforge.embed("review", agent=agent, model="my-embedder")
    again = REVIEWS.aiforge.embed("review", agent=agent, model="my-embedder")
    assert len(fake.embed_calls) == 1 and again.attrs["aiforge"].cached == len(set(REVIEWS["review"]))
    assert again.attrs["aiforge"].model == "my-embedder"


def test_embedding_matrix_refuses_missing_vectors() -> None:
    vectors = pd.Series(["a", None]).aiforge.embed(provider="scripted")
    with pytest.raises(UsageError, match="missing"):
        embedding_matrix(vectors)
    assert embedding_matrix(vectors.dropna()).shape == (1, 256)
