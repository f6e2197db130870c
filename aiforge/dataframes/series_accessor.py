"""``s.aiforge``: the Series accessor registered with pandas. Prompts say ``{value}`` (or the Series' name); the
row and whole-column operations are shared with ``df.aiforge``, and extract, dedup, cluster and embed read the
values themselves where the frame's name a text column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from aiforge.batch.options import DEFAULT_CONCURRENCY, ROW_OPTIONS, VECTOR_OPTIONS, with_options
from aiforge.core.chunks import DEFAULT_GATHER_TOKENS
from aiforge.dataframes.column_operations import ColumnOperations
from aiforge.dataframes.results import ATTRS_KEY, records_reports
from aiforge.dataframes.row_operations import RowOperations

if TYPE_CHECKING:
    from aiforge.chat.agent import ChatAgent


@pd.api.extensions.register_series_accessor(ATTRS_KEY)
@records_reports
class SeriesOperations(RowOperations, ColumnOperations):
    """``s.aiforge.map / classify / filter / extract`` over the values; prompts say ``{value}``."""

    _data: pd.Series

    def __init__(self, data: pd.Series) -> None:
        self._data = data

    @with_options(ROW_OPTIONS)
    def extract(
        self,
        output: Any,
        *,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.DataFrame:
        """The fields of ``output`` (a type) extracted from each text value, on the Series' index."""
        return self._extract(self._data, output, agent, concurrency, settings)

    @with_options(ROW_OPTIONS)
    def dedup(
        self,
        threshold: float | str | None = None,
        *,
        confirm: bool | tuple[float, float] | None = None,
        prompt: str | None = None,
        target_recall: float = 0.95,
        sample: int = 100,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.Series:
        """``duplicate_of`` of each value: the index label of its near-duplicate group's first row; see
        ``df.aiforge.dedup``::

            ids = df["ticket"].aiforge.dedup(0.9)
        """
        data = self._data
        return self._dedup(data, threshold, confirm, prompt, agent, concurrency, settings, target_recall, sample)

    @with_options(VECTOR_OPTIONS)
    def cluster(self, n_clusters: int, *, seed: int = 0, agent: ChatAgent | None = None, **settings: Any) -> pd.Series:
        """Each value's topic cluster; see ``df.aiforge.cluster``.

        On a frame's column::

            topics = df["ticket"].aiforge.cluster(8)
        """
        return self._cluster(self._data, n_clusters, seed, agent, settings)

    @with_options(VECTOR_OPTIONS)
    def embed(
        self,
        *,
        agent: ChatAgent | None = None,
        model: str | None = None,
        cache: Any = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        batch_size: int | None = None,
        **settings: Any,
    ) -> pd.Series:
        """The embedding of each text value: a Series ``<name>_embedding`` (``embedding`` unnamed); see
        ``DataFrameOperations.embed``::

            vectors = df["review"].aiforge.embed(provider="openai")
        """
        return self._embed(self._data, agent, model, cache, concurrency, batch_size, settings)

    def split(
        self,
        by: str = "tokens",
        size: int | None = None,
        *,
        overlap: int = 0,
        gather: str | None = None,
        gather_tokens: int = DEFAULT_GATHER_TOKENS,
        prompt: str | None = None,
        agent: ChatAgent | None = None,
        **settings: Any,
    ) -> pd.DataFrame:
        """Each document value cut into chunks, one row a chunk on the Series' index then ``chunk``; see
        ``DataFrameOperations.split``::

            chunks = docs["pdf"].aiforge.split(by="page")
        """
        from aiforge.dataframes.split import split_frame

        column = self._data.name if self._data.name is not None else "document"
        return split_frame(
            self._data.to_frame(column), column, by=by, size=size, overlap=overlap, gather=gather,
            gather_tokens=gather_tokens, prompt=prompt, agent=agent, settings=settings,
        )  # fmt: skip
