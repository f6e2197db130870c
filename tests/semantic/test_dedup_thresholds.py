"""``dedup`` without ``threshold=``: the embedding model's own threshold (``semantic.dedup_thresholds``), never one
number for every model; a threshold given always wins."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aiforge.core.types import Usage
from aiforge.semantic.dedup_thresholds import DEDUP_THRESHOLDS, FALLBACK_THRESHOLD, default_threshold
from aiforge.semantic.distinct import DistinctTexts
from aiforge.semantic.embeddings import EmbeddingRun
from aiforge.semantic.near_duplicates import Band, DedupRequest, ids_from_vectors, similarity_band

MINILM = "all-MiniLM-L6-v2"


def run_of(vectors: np.ndarray, model: str) -> EmbeddingRun:
    return EmbeddingRun(
        model=model, usage=Usage(), cost=0.0, priced=True, requests=1, embedded=len(vectors), cached=0,
        saved_cost=0.0, dim=vectors.shape[1], vectors=vectors,
    )


def at_similarity(similarity: float) -> np.ndarray:
    """Two unit vectors whose cosine similarity is ``similarity``."""
    return np.array([[1.0, 0.0], [similarity, np.sqrt(1 - similarity**2)]], dtype=np.float32)


def dedup_ids(band: Band, model: str, similarity: float) -> tuple[list[int], Band]:
    values = pd.Series(["reset email missing", "no password reset mail"])
    vectors = at_similarity(similarity)
    ids, report = ids_from_vectors(
        values.index, DistinctTexts.of(values), vectors, DedupRequest(band), None, run_of(vectors, model)
    )
    return ids.tolist(), report.band


def test_every_model_in_the_table_has_its_own_threshold_in_range() -> None:
    assert all(0 < threshold <= 1 for threshold in DEDUP_THRESHOLDS.values())
    assert DEDUP_THRESHOLDS[MINILM] < FALLBACK_THRESHOLD < DEDUP_THRESHOLDS["SmolLM2-135M-Instruct"]


@pytest.mark.parametrize(
    "name", [MINILM, f"sentence-transformers/{MINILM}", f"/models/{MINILM}", f"/models/{MINILM}/", f"C:\\m\\{MINILM}"]
)
def test_a_model_is_found_by_its_name_or_its_folders_last_part(name: str) -> None:
    assert default_threshold(name) == DEDUP_THRESHOLDS[MINILM]


def test_a_model_not_in_the_table_keeps_the_fallback() -> None:
    assert default_threshold("nomic-embed-text") == FALLBACK_THRESHOLD == 0.9


def test_a_pair_at_a_paraphrases_similarity_is_one_group_on_minilm_without_a_threshold() -> None:
    similarity = round(DEDUP_THRESHOLDS[MINILM] + 0.02, 2)
    ids, band = dedup_ids(similarity_band(None, False), MINILM, similarity)
    assert ids == [0, 0] and band == Band(DEDUP_THRESHOLDS[MINILM], DEDUP_THRESHOLDS[MINILM])


def test_the_same_pair_stays_apart_on_a_model_not_in_the_table() -> None:
    similarity = round(DEDUP_THRESHOLDS[MINILM] + 0.02, 2)
    ids, band = dedup_ids(similarity_band(None, False), "some-model", similarity)
    assert ids == [0, 1] and band.accept == FALLBACK_THRESHOLD


def test_a_threshold_given_wins_over_the_models() -> None:
    ids, band = dedup_ids(similarity_band(0.95, False), MINILM, 0.93)
    assert ids == [0, 1] and band == Band(0.95, 0.95)


def test_confirm_keeps_its_band_width_below_the_models_threshold() -> None:
    band = similarity_band(None, True).for_model(MINILM)
    assert band.accept == DEDUP_THRESHOLDS[MINILM] and band.ask == pytest.approx(band.accept - 0.1)
    assert similarity_band(None, (0.6, 0.8)).for_model(MINILM) == Band(0.6, 0.8)
