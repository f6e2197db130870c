"""Topic clusters of embeddings: a seeded k-means in numpy, the same clusters for the same vectors and seed.

Vectors are normalised first (``similarity.unit_rows``), so squared distance between rows is ``2 - 2 cos``: the
clusters are those of cosine similarity, whatever the scale of the embedding model's vectors. Centres start by
greedy k-means++ (each next centre the best of a few rows drawn with probability proportional to their squared
distance from the nearest centre so far); Lloyd steps run until no row changes cluster or ``max_iter``. A centre
left with no row is moved to the row farthest from its own centre. ``RUNS`` such runs, all drawn from
``numpy.random.default_rng(seed)``, and the one with the rows closest to their centres wins: one run can still
settle with a topic split and two merged (1 in 100 on the planted topics of tests/semantic/test_clusters.py).
Distances are computed ``BLOCK_ROWS`` rows at a time: memory stays at ``BLOCK_ROWS x n_clusters`` whatever n is.

``cluster_ids`` clusters a text column's distinct texts (an exact duplicate adds no weight to its cluster) and
gives each row its text's cluster; a missing value or a blank text has none (``<NA>``). No rows give an empty
Series at once. On a chat model's pooled vectors (the embedded model's) it warns first
(``batch.embedded.ChatModelVectorsWarning``).

Cluster numbers are renumbered in the order their first row appears (row 0 is in cluster 0), so they do not
depend on how the centres happened to be drawn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiforge.core.report import OperationReport
from aiforge.core.types import UsageError
from aiforge.semantic.distinct import DistinctTexts, embed_distinct
from aiforge.semantic.similarity import BLOCK_ROWS, unit_rows

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from aiforge.chat.agent import ChatAgent
    from aiforge.semantic.embeddings import CacheOption, EmbeddingReport

MAX_ITERATIONS = 100
"""Lloyd steps at most; on sentence embeddings a few thousand rows settle in well under 30."""
RUNS = 4
"""k-means runs from different starts; the one with the least total squared distance is kept."""
CLUSTER = "cluster"
"""The name of ``cluster``'s Series."""


@dataclass(repr=False)
class ClusterReport(OperationReport):
    """What one ``cluster`` did and spent, kept in its result's ``.attrs["aiforge"]``: an ``OperationReport``
    (``core.report``)."""

    title = "Cluster"

    rows: int
    distinct: int
    """Distinct texts embedded and clustered."""
    n_clusters: int
    seed: int
    sizes: list[int]
    """Rows in each cluster, by cluster number."""
    embedding: EmbeddingReport | None = field(default=None, repr=False)
    """What embedding the distinct texts cost: requests, tokens, USD, cache hits (None: nothing to embed)."""

    @property
    def total_cost(self) -> float:
        """USD of the embeddings."""
        return self.embedding.cost if self.embedding is not None else 0.0

    @property
    def total_tokens(self) -> int:
        """Tokens of the embeddings."""
        return self.embedding.usage.total_tokens if self.embedding is not None else 0

    @property
    def requests(self) -> int:
        """Embeddings requests sent."""
        return self.embedding.requests if self.embedding is not None else 0

    @property
    def failed(self) -> list[Any]:
        """Always empty: a failed embeddings request raises."""
        return []


def cluster_ids(
    values: pd.Series, agent: ChatAgent, n_clusters: int, *, seed: int = 0, cache: CacheOption = None
) -> tuple[pd.Series, ClusterReport]:
    """Each row's topic cluster (nullable ``Int64``, on ``values``' index) and the report.

    >>> ids, report = cluster_ids(df["ticket"], agent, 5)
    >>> df.groupby(ids)["ticket"].first()  # one example ticket per topic
    """
    import numpy as np
    import pandas as pd

    from aiforge.batch.embedded import warn_if_chat_model_vectors
    from aiforge.semantic.embeddings import embedding_provider_of

    blank = values.map(lambda value: isinstance(value, str) and not value.strip())
    distinct = DistinctTexts.of(values.mask(blank))  # a blank text has no topic: <NA>, as a missing one
    if not _whole(n_clusters) or n_clusters < 1:
        raise UsageError(f"cluster: n_clusters is a whole number of clusters >= 1, got {n_clusters!r}.")
    if not _whole(seed):
        raise UsageError(f"cluster: seed is a whole number, got {seed!r}.")
    if len(values) == 0:  # no rows: an empty result at once, as every operation on an empty frame gives
        empty = pd.Series(pd.array([], dtype="Int64"), index=values.index, name=CLUSTER)
        return empty, ClusterReport(0, 0, n_clusters, seed, [0] * n_clusters)
    if n_clusters > len(distinct.texts):
        raise UsageError(
            f"cluster: n_clusters={n_clusters} but the column has {len(distinct.texts)} distinct texts; "
            "ask for at most that many."
        )
    warn_if_chat_model_vectors(embedding_provider_of(agent)[0], "cluster")
    vectors, embedding = embed_distinct(agent, distinct.texts, cache)
    of_text = kmeans(vectors, n_clusters, seed=seed)
    texted = distinct.of_row >= 0
    numbers = pd.array(np.zeros(len(values), dtype=np.int64), dtype="Int64")
    numbers[texted] = of_text[distinct.of_row[texted]]
    numbers[~texted] = pd.NA
    ids = pd.Series(numbers, index=values.index, name=CLUSTER)
    sizes = np.bincount(of_text[distinct.of_row[texted]], minlength=n_clusters).tolist()
    report = ClusterReport(len(values), len(distinct.texts), n_clusters, seed, sizes, embedding.report())
    return ids, report


def kmeans(vectors: np.ndarray, n_clusters: int, *, seed: int = 0, max_iter: int = MAX_ITERATIONS) -> np.ndarray:
    """Each row's cluster in ``0..n_clusters-1`` (int64), numbered by first appearance.

    >>> kmeans(np.array([[1.0, 0.0], [0.0, 1.0], [0.9, 0.1]]), 2).tolist()
    [0, 1, 0]
    """
    import numpy as np

    unit = unit_rows(vectors)
    if not _whole(n_clusters) or n_clusters < 1:
        raise ValueError(f"n_clusters must be a whole number of clusters >= 1, got {n_clusters!r}")
    if n_clusters > len(unit):
        raise ValueError(f"n_clusters={n_clusters} is more than the {len(unit)} rows to cluster")
    rng = np.random.default_rng(seed)
    runs = [_lloyd(unit, _first_centres(unit, n_clusters, rng), max_iter) for _ in range(RUNS)]
    labels, _ = min(runs, key=lambda run: run[1])  # the first of equally good runs
    return _by_first_appearance(labels)


def _lloyd(unit: np.ndarray, centres: np.ndarray, max_iter: int) -> tuple[np.ndarray, float]:
    """Each row's cluster once the centres settle, and the rows' total squared distance to their centres."""
    import numpy as np

    labels = np.full(len(unit), -1, dtype=np.int64)
    for _ in range(max_iter):
        nearest, distance = _nearest(unit, centres)
        if np.array_equal(nearest, labels):
            break
        labels = nearest
        centres = _moved_centres(unit, labels, distance, centres)
    return labels, float(distance.sum(dtype=np.float64))


def _whole(number: Any) -> bool:
    import numpy as np

    return isinstance(number, int | np.integer) and not isinstance(number, bool)


def _first_centres(unit: np.ndarray, n_clusters: int, rng: np.random.Generator) -> np.ndarray:
    """Greedy k-means++: a random first centre; then of a few candidates drawn in proportion to squared distance
    from the nearest centre so far, the one that brings the rows closest (plain k-means++ draws one, and a bad
    draw can split a topic and merge two others for good)."""
    import math

    import numpy as np

    candidates = 2 + int(math.log(n_clusters))
    chosen = [int(rng.integers(len(unit)))]
    closest = _squared_distances(unit, unit[chosen])[:, 0]
    for _ in range(1, n_clusters):
        # Every row already on a centre (fewer distinct vectors than clusters): any row not chosen yet.
        weights = closest if closest.sum() > 0 else np.isin(np.arange(len(unit)), chosen, invert=True)
        weights = weights.astype(np.float64)
        drawn = rng.choice(len(unit), size=candidates, p=weights / weights.sum())
        after = np.minimum(closest[:, None], _squared_distances(unit, unit[drawn]))
        best = int(after.sum(axis=0).argmin())
        chosen.append(int(drawn[best]))
        closest = after[:, best]
    return unit[chosen].copy()


def _nearest(unit: np.ndarray, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's nearest centre and its squared distance to it, ``BLOCK_ROWS`` rows at a time."""
    import numpy as np

    nearest = np.empty(len(unit), dtype=np.int64)
    distance = np.empty(len(unit), dtype=np.float32)
    for start in range(0, len(unit), BLOCK_ROWS):
        squared = _squared_distances(unit[start : start + BLOCK_ROWS], centres)
        nearest[start : start + BLOCK_ROWS] = squared.argmin(axis=1)
        distance[start : start + BLOCK_ROWS] = squared.min(axis=1)
    return nearest, distance


def _squared_distances(rows: np.ndarray, centres: np.ndarray) -> np.ndarray:
    import numpy as np

    squared = (rows * rows).sum(axis=1)[:, None] - 2 * rows @ centres.T + (centres * centres).sum(axis=1)[None, :]
    clipped: np.ndarray = np.maximum(squared, 0)  # rounding can take an exact match a hair below zero
    return clipped


def _moved_centres(unit: np.ndarray, labels: np.ndarray, distance: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Each centre moved to the mean of its rows; an empty one to the farthest row not already taken."""
    import numpy as np

    sums = np.zeros_like(centres)
    np.add.at(sums, labels, unit)
    counts = np.bincount(labels, minlength=len(centres))
    moved = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], centres)
    farthest = iter(np.argsort(-distance, kind="stable"))
    for empty in np.flatnonzero(counts == 0):
        moved[empty] = unit[next(farthest)]
    return moved.astype(np.float32)


def _by_first_appearance(labels: np.ndarray) -> np.ndarray:
    import numpy as np

    _, first = np.unique(labels, return_index=True)
    order = np.argsort(first, kind="stable")  # the cluster seen first gets 0
    renumber = np.zeros(int(labels.max()) + 1, dtype=np.int64)
    renumber[np.unique(labels)[order]] = np.arange(len(order))
    renumbered: np.ndarray = renumber[labels]
    return renumbered
