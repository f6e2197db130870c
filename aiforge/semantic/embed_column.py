"""A pandas column of texts as a column of embeddings: what ``df.aiforge.embed`` and ``ddf.aiforge.embed`` return.

Each cell is the text's float32 vector (a 1-D ``numpy.ndarray`` of unit length, see ``embeddings``) on the input's
index, in a Series named ``<column>_embedding`` (``embedding`` for an unnamed Series). A missing value (None, NaN,
``pd.NA``) is None in the result and costs nothing, as pandas' own string methods keep missing values missing; an
empty string is a ``UsageError`` naming its rows, since every embeddings API refuses one. The ``EmbeddingReport``
(cost, tokens, requests, cache hits) is in the result's ``.attrs["aiforge"]``. ``embedding_matrix`` turns such a
column back into one ``(rows, dim)`` array for similarity search.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from aiforge.core.types import UsageError
from aiforge.semantic.embeddings import DEFAULT_CONCURRENCY, CacheOption, run_embeddings

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from aiforge.chat.agent import ChatAgent

ATTRS_KEY = "aiforge"
EMBEDDING_SUFFIX = "_embedding"


def embedding_name(name: Hashable | None) -> str:
    """The name of the embeddings of a column called ``name``: ``review`` -> ``review_embedding``."""
    return "embedding" if name is None else f"{name}{EMBEDDING_SUFFIX}"


def embedding_series(
    values: pd.Series,
    agent: ChatAgent,
    *,
    model: str | None = None,
    cache: CacheOption = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    batch_size: int | None = None,
) -> pd.Series:
    """The embedding of each value of ``values`` on its index (None where a value is missing); the run in attrs.

        vectors = embedding_series(df["review"], ChatAgent(provider="scripted"))
        vectors.iloc[0].shape  # (256,)
    """
    import numpy as np
    import pandas as pd

    present = values.notna().to_numpy(dtype=bool)
    texts = values[present]
    _check_texts(texts)
    run = run_embeddings(
        agent, texts.tolist(), model=model, cache=cache, concurrency=concurrency, batch_size=batch_size
    )
    cells = np.empty(len(values), dtype=object)
    cells[:] = None
    for position, vector in zip(np.flatnonzero(present), run.vectors, strict=True):
        cells[position] = vector
    result = pd.Series(cells, index=values.index, name=embedding_name(values.name), dtype=object)
    result.attrs[ATTRS_KEY] = run.report()  # the counts: the vectors are the Series' values, not its report's
    return result


def _check_texts(texts: pd.Series) -> None:
    """A ``UsageError`` naming the rows (index labels) that are not text, or are empty."""
    odd = [(label, value) for label, value in texts.items() if not isinstance(value, str)]
    if odd:
        label, value = odd[0]
        raise UsageError(
            f"embed needs text: the value at index {label!r} is {type(value).__name__} ({value!r}); "
            f"{len(odd)} row(s) are not strings. Convert the column first, e.g. df[col].astype('string')."
        )
    empty = [label for label, value in texts.items() if not value]
    if empty:
        raise UsageError(
            f"embed: the values at index {empty[:10]!r} are empty strings, which the embeddings APIs refuse; "
            "drop them or replace them with None (a missing value gives None)."
        )


def embedding_matrix(column: pd.Series | Any) -> np.ndarray:
    """The vectors of an embeddings column (``df.aiforge.embed``) as one float32 ``(rows, dim)`` array.

        matrix = embedding_matrix(df.aiforge.embed("review"))
        nearest = (matrix @ matrix[0]).argsort()[::-1]
    """
    import numpy as np

    missing = [label for label, vector in column.items() if vector is None]
    if missing:
        raise UsageError(f"the embeddings at index {missing[:10]!r} are missing (None): drop them first (.dropna())")
    if len(column) == 0:
        return np.zeros((0, 0), dtype=np.float32)
    return np.stack(column.tolist()).astype(np.float32, copy=False)
