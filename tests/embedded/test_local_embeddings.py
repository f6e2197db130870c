"""Embeddings from the embedded model: the real SmolLM2 weights in a llama.cpp server in embedding mode."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aiforge import ChatAgent
from aiforge.core.types import BadRequestError
from aiforge.providers.local import weights
from aiforge.providers.local.weights import find_default_weights
from aiforge.semantic.embeddings import run_embeddings

if not weights.xllamacpp_installed() or find_default_weights() is None:
    pytest.skip(f"the embedded model is not installed: {weights.INSTALL_HINT}", allow_module_level=True)

pytestmark = pytest.mark.embedded

TEXTS = ["a red apple on the table", "tax law of 1986", "a red apple on a table", "the cat sat on the mat"]


def test_vectors_are_unit_float32_and_a_paraphrase_is_the_nearest_text() -> None:
    run = run_embeddings(ChatAgent(provider="local", EMBEDDING_PROVIDER="local"), TEXTS)
    assert run.vectors.shape == (4, 576) and run.vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(run.vectors, axis=1), 1.0, atol=1e-5)
    similar = run.vectors @ run.vectors.T
    np.fill_diagonal(similar, -1.0)
    assert similar[0].argmax() == 2 and similar[2].argmax() == 0
    assert run.model == "SmolLM2-135M-Instruct" and run.cost == 0.0 and run.usage.input_tokens > 0


def test_the_same_text_gives_the_same_vector_alone_or_among_others() -> None:
    agent = ChatAgent(provider="local", EMBEDDING_PROVIDER="local")
    alone = run_embeddings(agent, [TEXTS[1]]).vectors[0]
    among = run_embeddings(agent, TEXTS, batch_size=3).vectors[1]
    assert np.allclose(alone, among, atol=1e-5)


def test_the_chat_model_still_answers_beside_the_embedding_server() -> None:
    agent = ChatAgent(provider="local", EMBEDDING_PROVIDER="local", MAX_TOKENS=8)
    run_embeddings(agent, ["hello"])
    assert agent.chat("Say hello.").message


def test_a_text_longer_than_the_context_is_a_bad_request() -> None:
    agent = ChatAgent(provider="local", EMBEDDING_PROVIDER="local", LOCAL_CONTEXT_SIZE=256)
    with pytest.raises(BadRequestError, match="embedded model"):
        run_embeddings(agent, ["word " * 600])


def test_the_accessor_embeds_a_column_on_the_embedded_model() -> None:
    frame = pd.DataFrame({"note": ["a red apple", None, "tax law"]}, index=[7, 8, 9])
    vectors = frame.aiforge.embed("note", provider="local", EMBEDDING_PROVIDER="local")
    assert vectors.name == "note_embedding" and vectors[8] is None and vectors[7].shape == (576,)
