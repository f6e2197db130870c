"""Deterministic stand-in embeddings for tests: texts that share words get close vectors, with no model.

Each word of a text (lower-cased ``\\w+`` runs) adds weight 1 to one coordinate, and each character trigram of
the word (with a space either side) adds ``TRIGRAM_WEIGHT``, at a coordinate and sign picked by a stable hash
(blake2b, the same in every process, unlike ``hash()``); the vector is then scaled to unit length. So "the cat sat"
and "the cat sat down" are near (cosine about 0.85), a typo ("recieve"/"receive") stays fairly near through
the trigrams it shares, and unrelated texts are near 0. A text with no word is hashed whole.

fakellm's ``/v1/embeddings`` computes the same vectors (``tests/providers/test_embeddings_wire.py`` checks
they agree), so a test can compare a wire run with a scripted one.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

SCRIPTED_DIM = 256
"""The length of the scripted provider's vectors."""
TRIGRAM_WEIGHT = 0.25
"""A trigram's weight next to a whole word's 1: enough to keep typos near, little enough that words decide."""

_WORD = re.compile(r"\w+")


def _features(text: str) -> Iterable[tuple[str, float]]:
    words = _WORD.findall(text.lower())
    if not words:
        yield "text:" + text, 1.0
    for word in words:
        yield "word:" + word, 1.0
        padded = f" {word} "
        for start in range(len(padded) - 2):
            yield "tri:" + padded[start : start + 3], TRIGRAM_WEIGHT


def hashed_embedding(text: str, dim: int = SCRIPTED_DIM) -> list[float]:
    """The unit vector of ``text``'s hashed words and trigrams, ``dim`` long."""
    vector = [0.0] * dim
    for feature, weight in _features(text):
        digest = int.from_bytes(hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8).digest())
        vector[digest % dim] += weight if digest >> 63 else -weight
    norm = math.sqrt(sum(value * value for value in vector))
    return [value / norm for value in vector] if norm else vector


def hashed_embeddings(texts: Sequence[str], dim: int = SCRIPTED_DIM) -> np.ndarray:
    """``hashed_embedding`` of each text as a float32 array of shape ``(len(texts), dim)``."""
    import numpy as np

    return np.array([hashed_embedding(text, dim) for text in texts], dtype=np.float32).reshape(len(texts), dim)
