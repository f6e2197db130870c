"""The distinct texts of a column, each embedded once: what ``dedup`` and ``cluster`` compare.

Rows with the same text are one text here (an exact duplicate is never embedded twice, and always lands with its
twin), and a missing value (None, NaN, ``pd.NA``) is no text at all. ``DistinctTexts`` remembers which row holds
which text, so a result per text goes back to the rows in one step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiforge.semantic.embeddings import DEFAULT_CONCURRENCY

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from aiforge.chat.agent import ChatAgent
    from aiforge.semantic.embeddings import CacheOption, EmbeddingRun

MISSING = -1
"""``DistinctTexts.of_row`` of a row whose value is missing."""


@dataclass(frozen=True)
class DistinctTexts:
    """A column's distinct texts in order of first appearance, and where each row's text is among them."""

    texts: list[str]
    first_rows: np.ndarray
    """The position of each text's first row."""
    of_row: np.ndarray
    """Each row's text number, or ``MISSING``."""

    @classmethod
    def of(cls, values: pd.Series) -> DistinctTexts:
        """The distinct texts of ``values`` (non-strings as ``str(value)``).

        >>> DistinctTexts.of(pd.Series(["a", "b", "a", None])).of_row.tolist()
        [0, 1, 0, -1]
        """
        import numpy as np

        number: dict[str, int] = {}
        first_rows: list[int] = []
        of_row: list[int] = []
        for row, (value, missing) in enumerate(zip(values.tolist(), values.isna().tolist(), strict=True)):
            if missing:
                of_row.append(MISSING)
                continue
            text = str(value)
            if text not in number:
                number[text] = len(first_rows)
                first_rows.append(row)
            of_row.append(number[text])
        return cls(list(number), np.array(first_rows, dtype=np.int64), np.array(of_row, dtype=np.int64))


def embed_distinct(
    agent: ChatAgent, texts: list[str], cache: CacheOption = None, concurrency: int = DEFAULT_CONCURRENCY
) -> tuple[np.ndarray, EmbeddingRun]:
    """The embedding of each text (rows in order, unit length) through ``agent``'s provider, and what it cost.

    An empty text (the embeddings APIs reject it) gets a zero vector, similar to nothing.

        vectors, run = embed_distinct(ChatAgent(provider="scripted"), ["refund", "refund please", ""])
    """
    import numpy as np

    from aiforge.semantic.embeddings import run_embeddings

    asked = [position for position, text in enumerate(texts) if text]
    run = run_embeddings(agent, [texts[position] for position in asked], cache=cache, concurrency=concurrency)
    vectors = np.zeros((len(texts), run.vectors.shape[1]), dtype=np.float32)
    vectors[asked] = run.vectors
    return vectors, run
