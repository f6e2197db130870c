"""Cosine similarity over many vectors in bounded memory, and the groups that similar pairs join.

``dedup`` needs every pair of rows at or above a similarity, and 50 000 rows have 1.25 billion pairs: an n x n
float matrix (10 GB) never exists here. ``pair_tiles`` walks the upper triangle in square tiles of ``BLOCK_ROWS``
rows (a 2048 x 2048 float32 tile is 16 MiB, plus its 4 MiB mask), so memory stays at one tile whatever n is, and
yields only the pairs that pass. Each ``(left, right)`` pair has ``left < right``, never a row with itself.

Vectors are normalised here (``unit_rows``), so callers may pass raw embeddings: cosine similarity is the dot
product of unit rows, and a zero vector (an empty text) is similar to nothing. ``Groups`` is a union-find whose
representative is always the smallest position in its group: the first row in input order, so a group's id does
not depend on the order pairs were joined in.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

BLOCK_ROWS = 2048
"""Rows per side of one similarity tile: 2048 x 2048 float32 = 16 MiB at a time, whatever the number of rows."""


@dataclass(frozen=True)
class PairTile:
    """The pairs of one tile at or above the floor: positions ``left < right`` and their cosine similarity."""

    left: np.ndarray
    right: np.ndarray
    similarity: np.ndarray


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` as float32 rows of length 1 (a zero row stays zero); a ``ValueError`` unless 2-D and finite.

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


def pair_tiles(unit: np.ndarray, floor: float, block_rows: int = BLOCK_ROWS) -> Iterator[PairTile]:
    """The pairs of rows of ``unit`` (unit rows) with cosine similarity >= ``floor``, one tile at a time.

    >>> tiles = pair_tiles(unit_rows(np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]])), 0.9)
    >>> [(int(l), int(r)) for t in tiles for l, r in zip(t.left, t.right)]
    [(0, 1)]
    """
    import numpy as np

    rows = len(unit)
    for start in range(0, rows, block_rows):
        block = unit[start : start + block_rows]
        for other in range(start, rows, block_rows):
            scores = block @ unit[other : other + block_rows].T
            passing = scores >= floor
            if other == start:
                passing = np.triu(passing, k=1)  # each pair once, never a row with itself
            left, right = np.nonzero(passing)
            if len(left):
                yield PairTile(left + start, right + other, scores[left, right])


class Groups:
    """Union-find over positions ``0..size-1``; each group's representative is its smallest position.

    >>> groups = Groups(4)
    >>> groups.join(3, 1); groups.join(1, 2)
    >>> groups.roots().tolist()
    [0, 1, 1, 1]
    """

    def __init__(self, size: int) -> None:
        self._parent = list(range(size))

    def find(self, position: int) -> int:
        """The representative of ``position``'s group (its smallest member)."""
        parent = self._parent
        root = position
        while parent[root] != root:
            root = parent[root]
        while parent[position] != root:  # path compression: later finds are one step
            parent[position], position = root, parent[position]
        return root

    def join(self, first: int, second: int) -> None:
        """Puts ``first`` and ``second`` in one group, represented by the smaller of their representatives."""
        a, b = self.find(first), self.find(second)
        if a != b:
            self._parent[max(a, b)] = min(a, b)

    def roots(self) -> np.ndarray:
        """Each position's representative, as an int64 array."""
        import numpy as np

        return np.array([self.find(position) for position in range(len(self._parent))], dtype=np.int64)
