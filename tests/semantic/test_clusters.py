"""The seeded k-means: planted topics found, the same clusters for the same seed, numbered by first appearance."""

from __future__ import annotations

import numpy as np
import pytest

from aiforge.semantic.clusters import kmeans


def planted(topics: int = 6, per_topic: int = 50, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Rows scattered around ``topics`` random directions, shuffled; and each row's topic."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(topics, 24))
    truth = rng.permutation(np.repeat(np.arange(topics), per_topic))
    return centres[truth] + 0.25 * rng.normal(size=(len(truth), 24)), truth


def test_planted_topics_are_found_exactly() -> None:
    vectors, truth = planted()
    labels = kmeans(vectors, 6)
    # One cluster per topic, one topic per cluster.
    pairs = set(zip(labels.tolist(), truth.tolist(), strict=True))
    assert len(pairs) == 6 and len({c for c, _ in pairs}) == 6


def test_the_same_vectors_and_seed_give_the_same_clusters() -> None:
    vectors, _ = planted(topics=8, per_topic=20)
    noisy = vectors + np.random.default_rng(0).normal(scale=2.0, size=vectors.shape)  # no clean answer to find
    assert np.array_equal(kmeans(noisy, 8, seed=5), kmeans(noisy.copy(), 8, seed=5))


def test_clusters_are_numbered_by_first_appearance_and_ignore_scale() -> None:
    vectors, _ = planted()
    labels = kmeans(vectors * 40.0, 6)
    assert labels[0] == 0
    firsts = [int(np.flatnonzero(labels == c)[0]) for c in range(6)]
    assert firsts == sorted(firsts)
    assert np.array_equal(labels, kmeans(vectors, 6))


@pytest.mark.parametrize("n_clusters", [0, 2.5, True, 11])
def test_a_bad_number_of_clusters_is_a_value_error(n_clusters: object) -> None:
    with pytest.raises(ValueError, match="n_clusters"):
        kmeans(np.eye(10), n_clusters)  # type: ignore[arg-type]
