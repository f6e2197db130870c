"""The whole-column operations of ``df.aiforge`` and ``s.aiforge``: topk and agg read all the rows together, and
embed, dedup and cluster a column's texts; each is a thin wrapper over ``aiforge.semantic`` whose report (with
requests and cost) is in the result's ``.attrs["aiforge"]`` (``results``).

``agg`` reduces all the rows (or each group's, ``by=``) to one answer under ``CONTEXT_WINDOW``
(``semantic.agg``). The frame's ``dedup``, ``cluster`` and ``embed`` name the text column;
the Series' read its values: both call the helpers here.

All of them read text: a column of files (``aiforge.File``, ``Path``, bytes, PIL images), whose ``str`` is only a
path, is a one-line ``UsageError`` before any request (``core.files.refuse_files``) naming what reads files: ``map``
or ``extract`` each file first and run the operation on their answers, or ``split`` the documents into text chunks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, overload

import pandas as pd

from aiforge.batch.options import (
    DEFAULT_CONCURRENCY,
    ROUND_OPTIONS,
    VECTOR_OPTIONS,
    batch_options,
    take_options,
    with_options,
)
from aiforge.chat.operation_agent import operation_agent
from aiforge.core.files import refuse_files
from aiforge.dataframes.results import attach, last_report, remember

if TYPE_CHECKING:
    from aiforge.chat.agent import ChatAgent
    from aiforge.core.report import OperationReport
    from aiforge.semantic.agg.frames import AggText

_Answer = TypeVar("_Answer")


class ColumnOperations:
    """The operations over all of ``_data`` at once (a DataFrame's rows, or a Series' values)."""

    _data: pd.DataFrame | pd.Series

    @property
    def last_report(self) -> OperationReport | None:
        """The report of the last operation that returned on this very frame or Series (None before one has):
        the same as its result's ``.attrs["aiforge"]``, and the only place for the report of an answer that keeps no
        ``.attrs`` (``agg(output=int)``). It is kept on the object, not on a copy: ``df["review"]`` is a new Series
        each time, so keep it in a variable (``s = df["review"]``) to read ``s.aiforge.last_report``."""
        return last_report(self._data)

    @with_options(ROUND_OPTIONS)
    def topk(
        self,
        prompt: str,
        k: int,
        method: str = "listwise",
        *,
        agent: ChatAgent | None = None,
        window: int = 10,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.DataFrame:
        """The ``k`` rows that best satisfy ``prompt``, best first, with a ``rank`` column (1..k), on their index.

        Model comparisons in a tournament, never n² calls: ``method="listwise"`` ranks windows of rows per request
        (about n / (window - k) requests), ``"pairwise"`` compares two rows per request (at most
        n - 1 + (k - 1)·⌈log2 n⌉); see ``aiforge.semantic.topk``. k above the number of rows ranks them all.
        ``cache=``, ``checkpoint=`` (one file, every round in it), ``restart=``, ``max_cost=`` and ``dedup=`` go to
        every round; the ``TopKRun`` (batches, requests, cost) is in ``.attrs["aiforge"]``. A comparison failing twice
        raises ``ComparisonFailedError``. A field naming a column of files is a ``UsageError``: rank what ``map``
        read from each file. On a Series, the frame has the values and ``rank``::

            tickets.aiforge.topk("the most urgent ticket: {ticket}", k=3)
        """
        from aiforge.semantic.topk import rank_rows, ranked_frame

        run = rank_rows(
            self._data, prompt, k, method=method, agent=agent, window=window, concurrency=concurrency, **settings
        )
        return attach(ranked_frame(self._data, run.positions), run)

    @overload
    def agg(
        self,
        prompt: str,
        by: None = None,
        output: None = None,
        *,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> AggText: ...

    @overload
    def agg(
        self,
        prompt: str,
        by: None = None,
        output: type[_Answer] = ...,
        *,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> _Answer: ...

    @overload
    def agg(  # a Literal[...] or Annotated[...] form: mypy cannot name the type of its value
        self,
        prompt: str,
        by: None = None,
        output: object = ...,
        *,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> Any: ...

    @overload
    def agg(
        self,
        prompt: str,
        by: str | list[Any],
        output: object = None,
        *,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.Series: ...

    @with_options(ROUND_OPTIONS)
    def agg(
        self,
        prompt: str,
        by: Any = None,
        output: Any = None,
        *,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> Any:
        """One answer for all the rows, reduced level by level under ``CONTEXT_WINDOW``; with ``by``, one per group.

        The prompt names the columns to read (``{review}``), which read as their names in the instruction:
        ``df.aiforge.agg("What do the {review}s complain about most?")``; on a Series ``{value}`` or no field.
        Without ``by``: a ``str`` (its ``.attrs["aiforge"]`` is the ``AggReport``: levels, requests, cost), or the
        ``output=`` value, an instance of that type (``output=int`` returns an ``int``); its ``AggReport`` is at
        ``df.aiforge.last_report``, as every operation's is. With ``by`` (a column or a list): a Series indexed by
        group. ``cache=``, ``checkpoint=`` (one file, every level in it), ``restart=``,
        ``max_cost=`` and ``dedup=`` go to each level's batch; the same call after an interrupt asks only the
        unanswered chunks (``semantic.agg``). A field naming a column of files is a ``UsageError``: ``map`` or
        ``extract`` each file first and agg the answers, or ``split`` the documents and agg their ``text`` by
        ``document``.
        """
        from aiforge.semantic.agg.frames import agg_answer, agg_data

        if by is None and output is not None:  # an int, a bool or a model carries no .attrs: keep the report here
            answer, report = agg_data(self._data, prompt, output, agent, concurrency, settings)
            remember(self._data, report)
            return answer
        return agg_answer(self._data, prompt, by, output, agent, concurrency, settings)

    def _dedup(
        self,
        values: pd.Series,
        threshold: float | str | None,
        confirm: bool | tuple[float, float] | None,
        prompt: str | None,
        agent: ChatAgent | None,
        concurrency: int,
        settings: dict[str, Any],
        target_recall: float = 0.95,
        sample: int = 100,
    ) -> pd.Series:
        """``dedup`` over the texts ``values`` (a DataFrame's column, or a Series' values)."""
        from aiforge.semantic.near_duplicates import check_unique_index, dedup_request, duplicate_ids

        refuse_files(values, "dedup", values.name)
        options = batch_options(settings)
        agent = operation_agent(agent, settings)
        request = dedup_request(
            threshold, confirm, prompt, concurrency, options, target_recall, sample, judge=not agent.provider.free
        )
        check_unique_index(values.index)
        ids, report = duplicate_ids(values, agent, request)
        return attach(ids, report)

    def _cluster(
        self, values: pd.Series, n_clusters: int, seed: int, agent: ChatAgent | None, settings: dict[str, Any]
    ) -> pd.Series:
        """``cluster`` over the texts ``values``."""
        from aiforge.semantic.clusters import cluster_ids

        refuse_files(values, "cluster", values.name)
        agent, options = _semantic_agent(agent, settings)
        ids, report = cluster_ids(values, agent, n_clusters, seed=seed, cache=options.get("cache"))
        return attach(ids, report)

    def _embed(
        self,
        values: pd.Series,
        agent: ChatAgent | None,
        model: str | None,
        cache: Any,
        concurrency: int,
        batch_size: int | None,
        settings: dict[str, Any],
    ) -> pd.Series:
        """``embed`` over the texts ``values``: a Series of unit vectors (``semantic.embed_column``)."""
        from aiforge.semantic.embed_column import embedding_series

        refuse_files(values, "embed", values.name)
        take_options(settings, VECTOR_OPTIONS, "embed")  # cache= is a parameter: a rerun embeds only what is new
        return embedding_series(
            values,
            operation_agent(agent, settings),
            model=model,
            cache=cache,
            concurrency=concurrency,
            batch_size=batch_size,
        )


def _semantic_agent(agent: ChatAgent | None, settings: dict[str, Any]) -> tuple[ChatAgent, dict[str, Any]]:
    """The agent a semantic operation embeds and asks with, and ``run_batch``'s options taken out of ``settings``."""
    options = batch_options(settings)
    return operation_agent(agent, settings), options
