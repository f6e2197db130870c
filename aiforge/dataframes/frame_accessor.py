"""``df.aiforge``: the DataFrame accessor registered with pandas. Prompts name the frame's columns; the row and
whole-column operations are shared with ``s.aiforge`` (``row_operations``, ``column_operations``), and what only a
frame has is here: the operations that take a text column's name (extract, dedup, cluster, embed), ``evaluate`` (a
grid of prompts x agents scored against a truth column, ``aiforge.evaluation``) and ``join`` (with another frame,
``aiforge.semantic.join``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from aiforge.batch.options import DEFAULT_CONCURRENCY, ROW_OPTIONS, VECTOR_OPTIONS, with_options
from aiforge.core.chunks import DEFAULT_GATHER_TOKENS
from aiforge.core.templates import no_such_column
from aiforge.core.types import UsageError
from aiforge.dataframes.column_operations import ColumnOperations
from aiforge.dataframes.results import ATTRS_KEY, records_reports
from aiforge.dataframes.row_operations import RowOperations
from aiforge.semantic.join import semantic_join
from aiforge.semantic.join.choices import TARGET_RECALL

if TYPE_CHECKING:
    from aiforge.chat.agent import ChatAgent
    from aiforge.evaluation.result import EvalResult


@pd.api.extensions.register_dataframe_accessor(ATTRS_KEY)
@records_reports
class DataFrameOperations(RowOperations, ColumnOperations):
    """``df.aiforge.map / classify / filter / extract``; prompts name the frame's columns."""

    _data: pd.DataFrame

    def __init__(self, data: pd.DataFrame) -> None:
        self._data = data

    @with_options(ROW_OPTIONS)
    def extract(
        self,
        column: str,
        output: Any = None,
        *,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.DataFrame:
        """The fields of ``output`` (a type) extracted from the text column ``column``, on the frame's index."""
        check_column(column, self._data.columns)
        if output is None:
            raise UsageError(
                f"extract needs output=, the type to extract: df.aiforge.extract({column!r}, output=Person)."
            )
        return self._extract(self._data[column], output, agent, concurrency, settings)

    @with_options(ROW_OPTIONS)
    def dedup(
        self,
        column: str,
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
        """``duplicate_of``: for each row, the index label of the first row of its group of near-duplicates.

        Each row is a duplicate of the row it names: its text in ``column`` has cosine similarity >= ``threshold``
        with that row's (the most similar group's first row, taking rows in order), or is the same text. Groups
        never chain through a third row. ``confirm=True`` (or a band ``(low, high)``) asks the model about a row
        left alone and each group's first row just below (``[threshold - 0.1, threshold)``), and joins the group
        it says is a duplicate; ``prompt=`` replaces the question and names ``{left}`` and ``{right}``.
        ``threshold="auto"`` (the default with ``confirm=True``, and with neither on a billed chat model) has the
        model label ``sample`` candidate pairs drawn across the similarity range and takes the largest threshold
        whose estimated recall reaches ``target_recall``; the pairs between it and where the sample saw no false
        pair are confirmed (``semantic.dedup_auto``). Otherwise (a free model such as the embedded one, or
        ``confirm=False``), the threshold is the embedding model's own (``semantic.dedup_thresholds``; 0.9 for a
        model not in it) and no chat request is made. A missing value is its own group; a column of files is a
        ``UsageError``, as for ``embed``. On a chat model's vectors (the embedded model's) it warns
        (``ChatModelVectorsWarning``). The ``DedupReport`` (threshold and how it was chosen, the sample's estimates,
        requests, cost) is in ``.attrs["aiforge"]``::

            ids = df.aiforge.dedup("ticket", threshold="auto")
            df[ids == ids.index]             # the first row of each group
            df.groupby(ids)["ticket"].agg(list)
        """
        check_column(column, self._data.columns, "dedup")
        values = self._data[column]
        return self._dedup(values, threshold, confirm, prompt, agent, concurrency, settings, target_recall, sample)

    @with_options(VECTOR_OPTIONS)
    def cluster(
        self, column: str, n_clusters: int, *, seed: int = 0, agent: ChatAgent | None = None, **settings: Any
    ) -> pd.Series:
        """``cluster``: each row's topic cluster ``0..n_clusters-1`` (k-means on the embeddings of ``column``).

        The same texts and ``seed`` give the same clusters; cluster 0 is the first row's. A missing value is
        ``<NA>``; a column of files is a ``UsageError``, as for ``embed``. On a chat model's vectors (the embedded
        model's) it warns (``ChatModelVectorsWarning``). The ``ClusterReport`` (sizes, cost) is in
        ``.attrs["aiforge"]``::

            df["topic"] = df.aiforge.cluster("ticket", n_clusters=8)
        """
        check_column(column, self._data.columns, "cluster")
        return self._cluster(self._data[column], n_clusters, seed, agent, settings)

    @with_options(VECTOR_OPTIONS)
    def embed(
        self,
        column: str,
        *,
        agent: ChatAgent | None = None,
        model: str | None = None,
        cache: Any = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        batch_size: int | None = None,
        **settings: Any,
    ) -> pd.Series:
        """The embedding of each text of ``column``: a Series ``<column>_embedding`` of float32 vectors.

        Vectors have unit length (L2 norm 1: a dot product is the cosine); a missing value gives None, an empty
        string is a ``UsageError``. ``model`` is the embeddings model (default ``EMBEDDING_MODEL``, else the
        provider's); ``cache=`` as ``map``'s; the ``EmbeddingReport`` (cost, tokens, requests) is in
        ``.attrs["aiforge"]``. A column of files (``aiforge.File``, ``Path``, bytes) is a ``UsageError`` before any
        request: a file's ``str`` is its path, not its text, so embed what ``map`` or ``extract`` read from each file,
        or the ``text`` of ``split``'s chunks. See ``aiforge.semantic.embed_column``::

            vectors = df.aiforge.embed("review", provider="openai")
        """
        return self._embed(text_column(self._data, column), agent, model, cache, concurrency, batch_size, settings)

    def split(
        self,
        column: str,
        by: str = "tokens",
        size: int | None = None,
        *,
        overlap: int = 0,
        gather: str | None = None,
        gather_tokens: int = DEFAULT_GATHER_TOKENS,
        prompt: str | None = None,
        keep: bool | Sequence[str] = False,
        agent: ChatAgent | None = None,
        **settings: Any,
    ) -> pd.DataFrame:
        """Each document of ``column`` (text, or an ``aiforge.File``/``Path``/bytes of a PDF) cut into chunks of at
        most ``size`` tokens (None: the most the model's window holds), by ``"page"`` or ``"tokens"`` with
        ``overlap``: one row a chunk (``document``, ``page``, ``last_page``, ``text``, ``tokens``, ``context`` with
        ``gather="tail"|"heading"``, ``error``) on the input's index then ``chunk``. A document that cannot be read
        is one row with its ``error``. See ``aiforge.dataframes.split``::

            chunks = docs.aiforge.split("pdf", gather="heading")
            chunks["answer"] = chunks.aiforge.map("{context}\\n{text}\\nAny penalty clause?")["response"]
            docs["penalties"] = chunks.aiforge.agg("Penalty clauses: {answer}", by="document")
        """
        from aiforge.dataframes.split import split_frame

        return split_frame(
            self._data, column, by=by, size=size, overlap=overlap, gather=gather, gather_tokens=gather_tokens,
            prompt=prompt, keep=keep, agent=agent, settings=settings,
        )  # fmt: skip

    @with_options(ROW_OPTIONS)
    def evaluate(
        self,
        prompts: Mapping[str, str],
        agents: Mapping[str, Any] | None = None,
        truth: str | None = None,
        labels: Sequence[str] | None = None,
        output: Any = None,
        metric: Callable[[Any, Any], bool | float] | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        checkpoint: str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> EvalResult:
        """Every prompt x agent run over the rows with a ``truth`` and scored: an ``EvalResult`` (``.rows``,
        ``.summary``, ``.plot()``, ``.agreement(human=...)``); see ``aiforge.evaluation.grid.evaluate``.

        ``checkpoint=`` is one file (each candidate's batch a part of it): a second run asks only new candidates'
        rows. Without ``agents``, the grid runs on the agent the settings make (``provider=``, ``MODEL=``), as
        ``map``'s does; every candidate is checked before the first request.
        """
        from aiforge.evaluation.grid import evaluate

        return evaluate(
            self._data,
            prompts,
            agents,
            truth,
            labels=labels,
            output=output,
            metric=metric,
            concurrency=concurrency,
            checkpoint=checkpoint,
            **options,
        )

    @with_options(ROW_OPTIONS)
    def join(
        self,
        right: pd.DataFrame,
        prompt: str,
        how: str = "inner",
        *,
        suffixes: tuple[str | None, str | None] = ("_x", "_y"),
        strategy: str = "auto",
        candidates: int | str = "auto",
        target_recall: float = TARGET_RECALL,
        multiple: bool = True,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.DataFrame:
        """The row pairs the model says ``prompt`` holds for, merged as ``pd.merge`` does, without n x m calls.

        ``tickets.aiforge.join(products, "Does the ticket {left.text} concern {right.name}?", how="left")``: fields
        name a side and a column. Up to ``semantic.join.CLASSIFY_MAX_RIGHT`` distinct right rows, each left row is
        one classification over them (``strategy="classify"``); above, one multiple-choice question over its
        ``candidates`` nearest right rows by embedding (``"candidates"``; ``"auto"`` chooses the depth from a sample
        for ``target_recall``); ``"pairs"`` asks each candidate pair yes/no. ``how`` and ``suffixes`` are
        ``merge``'s; the index is a
        ``MultiIndex`` ``("left", "right")`` of both rows' labels. ``.attrs["aiforge"]`` is a ``JoinReport``
        (requests, cost, failures). A field naming a column of files is a ``UsageError``, as for ``embed``. See
        ``aiforge.semantic.join``.
        """
        if not isinstance(right, pd.DataFrame):
            hint = " (a Series: right.to_frame())" if isinstance(right, pd.Series) else ""
            raise UsageError(f"join: the right side is a DataFrame, got {type(right).__name__}{hint}.")
        return semantic_join(
            self._data,
            right,
            prompt,
            how=how,
            suffixes=suffixes,
            strategy=strategy,
            candidates=candidates,
            target_recall=target_recall,
            multiple=multiple,
            agent=agent,
            concurrency=concurrency,
            **settings,
        )


def check_column(column: Any, columns: pd.Index, operation: str = "extract") -> None:
    """Returns if ``column`` names one of ``columns``; a ``UsageError`` saying what to pass otherwise."""
    if isinstance(column, pd.DataFrame | pd.Series):
        # df.aiforge.extract(df[["review"]]) or (df["review"]): the data itself where its column's name goes.
        names = list(column.columns) if isinstance(column, pd.DataFrame) else [column.name]
        name = names[0] if len(names) == 1 and names[0] is not None else "review"
        more = "output=..." if operation == "extract" else "..."
        raise UsageError(
            f"{operation} takes the name of the text column, got a {type(column).__name__}: "
            f"df.aiforge.{operation}({name!r}, {more}), or on the column df[{name!r}].aiforge.{operation}({more})."
        )
    if operation == "extract" and isinstance(column, type):  # extract(Person): the type where the column goes
        raise UsageError(
            f"extract takes the text column, then the type: df.aiforge.extract('review', output={column.__name__})."
        )
    try:
        found = column in columns
    except TypeError:  # unhashable: a list, a dict
        found = False
    if not found:
        raise UsageError(no_such_column(operation, column, columns))


def text_column(data: pd.DataFrame, column: Any) -> pd.Series:
    """``data[column]``; a ``UsageError`` naming the columns when ``column`` is not one of them."""
    if isinstance(column, pd.DataFrame | pd.Series):
        raise UsageError(
            f"embed takes the name of the text column, got a {type(column).__name__}: df.aiforge.embed('review'), "
            "or on the column itself df['review'].aiforge.embed()."
        )
    try:
        found = column in data.columns
    except TypeError:  # unhashable: a list, a dict
        found = False
    if not found:
        raise UsageError(no_such_column("embed", column, data.columns))
    values: pd.Series = data[column]
    return values
