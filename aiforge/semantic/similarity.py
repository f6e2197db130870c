"""Cosine similarity over many vectors in bounded memory, and groups whose members all match their representative.

``dedup`` compares every row with the rows before it, and 50 000 rows have 1.25 billion pairs: an n x n float
matrix (10 GB) never exists here. ``leader_groups`` takes the rows in order, ``BLOCK_ROWS`` at a time, and scores
each block against the representatives found so far in tiles of ``BLOCK_ROWS`` x ``BLOCK_ROWS`` (a 2048 x 2048
float32 tile is 16 MiB), then against itself: memory stays at a few tiles whatever n is.

Groups never chain. A row is a duplicate of a representative when their similarity is at or above ``accept``;
a row that is a duplicate of no earlier representative becomes one, and every other row joins the representative
it is most similar to (the earliest of equals). So every member of a group is a duplicate of the group's first
row, which the group is named by; two members need not be duplicates of each other. (Union-find over all pairs
would chain: A~B and B~C put A with C whatever A and C are, and a few false pairs join everything.)

Vectors are normalised here (``unit_rows``), so callers may pass raw embeddings: cosine similarity is the dot
product of unit rows, and a zero vector (an empty text) is similar to nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

BLOCK_ROWS = 2048
"""Rows per side of one similarity tile: 2048 x 2048 float32 = 16 MiB at a time, whatever the number of rows."""


class BandOverflow(ValueError):
    """More pairs in the band than ``leader_groups`` was allowed to keep."""


@dataclass(frozen=True)
class LeaderGroups:
    """Each row's representative, and the pairs of representatives in the band below ``accept``."""

    representative: np.ndarray
    """int64: each row's representative, the row itself when it leads its group; always <= the row."""
    similarity: np.ndarray
    """float32: each row's similarity to its representative (``nan`` for a representative)."""
    band: list[tuple[int, int, float]]
    """``(earlier, later, similarity)``: both representatives, similarity in ``[floor, accept)``, in order found."""


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` as float32 rows of unit length (a zero row stays zero); a ``ValueError`` unless 2-D and finite.

    >>> unit_rows(np.array([[3.0, 4.0]])).tolist()
    [[0.6000000238418579, 0.800000011920929]]
    """
    import numpy as np

    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2:
        raise ValueError(f"embeddings must be a 2-D array (rows x dimensions), got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError("embeddings contain NaN or infinite values")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)
    return unit


def leader_groups(
    unit: np.ndarray,
    accept: float,
    floor: float | None = None,
    *,
    block_rows: int = BLOCK_ROWS,
    max_band: int | None = None,
) -> LeaderGroups:
    """The groups of the rows of ``unit`` (unit rows): each row a duplicate (similarity >= ``accept``) of its
    representative, the first row of its group (module docstring). With ``floor`` below ``accept``, the pairs of
    representatives at ``[floor, accept)`` are kept too (a ``BandOverflow`` past ``max_band`` of them).

    >>> groups = leader_groups(unit_rows(np.array([[1.0, 0.0], [0.94, 0.34], [0.77, 0.64]])), 0.9)
    >>> groups.representative.tolist()  # row 1 is a duplicate of row 0, row 2 of row 1 only: no chain
    [0, 0, 2]
    """
    import numpy as np

    count = len(unit)
    representative = np.arange(count, dtype=np.int64)
    best = np.full(count, np.nan, dtype=np.float32)  # similarity to the representative chosen so far (nan: none)
    leaders = np.zeros(0, dtype=np.int64)
    band: list[tuple[int, int, float]] = []
    for start in range(0, count, block_rows):
        block = unit[start : start + block_rows]
        rows = np.arange(start, start + len(block))
        for first in range(0, len(leaders), block_rows):
            earlier = leaders[first : first + block_rows]
            scores = block @ unit[earlier].T
            top = scores.argmax(axis=1)  # the first of equals: the earliest representative
            top_score = scores[np.arange(len(block)), top]
            better = (top_score >= accept) & ~(top_score <= best[rows])  # nan (none yet) is never <=
            representative[rows[better]], best[rows[better]] = earlier[top[better]], top_score[better]
        scores = block @ block.T
        for offset in range(len(block)):
            if not np.isnan(best[start + offset]):
                continue  # a duplicate of an earlier representative: it leads nothing
            later = rows[offset + 1 :]
            row_scores = scores[offset, offset + 1 :]
            better = (row_scores >= accept) & ~(row_scores <= best[later])
            representative[later[better]], best[later[better]] = start + offset, row_scores[better]
        leads = rows[np.isnan(best[rows])]
        if floor is not None and floor < accept and len(leads):
            room = None if max_band is None else max_band - len(band)
            try:
                band += _band_pairs(unit, leaders, leads, (floor, accept), block_rows, room)
            except BandOverflow:
                raise BandOverflow(f"more than {max_band} pairs in the band [{floor}, {accept})") from None
        leaders = np.concatenate([leaders, leads])
    return LeaderGroups(representative, best, band)


def _band_pairs(
    unit: np.ndarray,
    leaders: np.ndarray,
    leads: np.ndarray,
    band: tuple[float, float],
    block_rows: int,
    room: int | None,
) -> list[tuple[int, int, float]]:
    """The pairs of a block's new representatives ``leads`` with earlier ones (``leaders``, then each other) whose
    similarity is in ``band`` (low, high); a ``BandOverflow`` past ``room`` of them, counted before they are listed."""
    import numpy as np

    floor, accept = band

    def within(scores: np.ndarray) -> np.ndarray:
        inside: np.ndarray = (scores >= floor) & (scores < accept)
        return inside

    pairs: list[tuple[int, int, float]] = []

    def add(earlier: np.ndarray, later: np.ndarray, similarity: np.ndarray) -> None:
        if room is not None and len(pairs) + len(earlier) > room:
            raise BandOverflow
        pairs.extend(zip(earlier.tolist(), later.tolist(), similarity.tolist(), strict=True))

    new = unit[leads]
    for first in range(0, len(leaders), block_rows):
        earlier = leaders[first : first + block_rows]
        scores = new @ unit[earlier].T
        later, before = np.nonzero(within(scores))
        add(earlier[before], leads[later], scores[later, before])
    scores = new @ new.T
    before, later = np.nonzero(np.triu(within(scores), k=1))
    add(leads[before], leads[later], scores[before, later])
    return pairs
