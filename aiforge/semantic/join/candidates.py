"""The join's blocking step: for each left text, the k right texts nearest by cosine similarity of their embeddings.

Pure NumPy over the vectors it is given, so it is tested with vectors built by hand. The vectors are normalised
here whatever the embedding function returns (a zero vector is similar to nothing), and the left rows go through
in blocks so an n x m similarity matrix is never held whole (10 000 x 10 000 float32 would be 400 MB). Ties are
broken by the lower right position: the same vectors give the same candidates on every run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiforge.core.types import UsageError

if TYPE_CHECKING:
    import numpy as np

DEFAULT_K = 5
"""Candidates per left row for ``strategy="pairs"`` with ``candidates="auto"`` (and for ``"candidates"`` when its
sample finds no match): on the 200 x 200 bench set (bench/semantic_join.py) k=5 already finds every match of the
scripted embeddings while asking 5 / 200 of the pairs; k=10 costs twice the questions for recall it rarely adds."""
_BLOCK_ROWS = 1024
"""Left rows per similarity block: 1024 x m float32 at a time."""


def nearest(left: np.ndarray, right: np.ndarray, k: int) -> np.ndarray:
    """Per left row, the positions of its ``min(k, m)`` most similar right rows, most similar first: (n, k) ints.

    >>> nearest(np.eye(2, dtype="float32"), np.array([[0.0, 1.0], [1.0, 0.1]], dtype="float32"), 1).tolist()
    [[1], [0]]
    """
    import numpy as np

    left, right = _unit_rows(left, "left"), _unit_rows(right, "right")
    if left.shape[1] != right.shape[1]:
        raise UsageError(f"join: left vectors have {left.shape[1]} dimensions, right vectors {right.shape[1]}.")
    k = min(checked_k(k), right.shape[0])
    found = np.empty((left.shape[0], k), dtype=np.int64)
    for start in range(0, left.shape[0], _BLOCK_ROWS):
        similarity = left[start : start + _BLOCK_ROWS] @ right.T
        # A stable sort of the negated similarities: the highest first, equal ones by right position.
        found[start : start + _BLOCK_ROWS] = np.argsort(-similarity, axis=1, kind="stable")[:, :k]
    return found


def checked_k(k: Any) -> int:
    """``k`` if it is a count of candidates (an integer >= 1); a ``UsageError`` otherwise."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise UsageError(f"join: candidates= (right rows per left row) must be 'auto' or an integer >= 1, got {k!r}.")
    return k


def _unit_rows(vectors: np.ndarray, side: str) -> np.ndarray:
    """``vectors`` as float32 rows of unit length (a zero row stays zero); a ``UsageError`` for a non-matrix."""
    import numpy as np

    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or not array.shape[1]:
        raise UsageError(f"join: the {side} embeddings must be a 2-d array (rows x dimensions), got {array.shape}.")
    if not np.isfinite(array).all():
        raise UsageError(f"join: the {side} embeddings hold NaN or infinite values.")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)
    return unit
