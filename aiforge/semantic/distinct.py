"""The distinct texts of a column, each embedded once: what ``dedup`` and ``cluster`` compare.

Rows with the same text are one text here (an exact duplicate is never embedded twice, and always lands with its
twin), and a missing value (None, NaN, ``pd.NA``) is no text at all. ``DistinctTexts`` remembers which row holds
which text, so a result per text goes back to the rows in one step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from aiforge.chat.agent import ChatAgent

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


def embed_distinct(agent: ChatAgent, texts: list[str], cache: Any = None) -> tuple[np.ndarray, Any]:
    """The embedding of each text (rows in order) through ``agent``'s provider, and what they cost."""
    import numpy as np

    from aiforge.semantic.embeddings import embed_texts

    if not texts:
        return np.zeros((0, 0), dtype=np.float32), None
    return embed_texts(agent, texts, cache=cache), None
