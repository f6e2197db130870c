"""``df.aiforge`` and ``s.aiforge``: map, classify, filter, extract and judge over rows with one batch each; the
semantic operators agg, embed, dedup, cluster, join and topk; and evaluate.

Every operation is one ``run_batch`` (same progress bar, concurrency, failures kept per row), and
returns pandas data aligned on the input's index, so ``df.join(df.aiforge.map(...))`` lines up, also
on a filtered frame. The ``BatchResult`` (costs, tokens, ``failed``, ``saved``) is in the result's
``.attrs["aiforge"]``; a failed row is null in the new columns (its error is in that batch), and the call says how
many failed in one ``FailedRowsWarning`` (``core.failed_rows``). Rows whose
prompt is the same are asked once (``run_batch``'s dedup).

Prompts are row templates (``core.templates``): ``"Classify: {review}"`` names a DataFrame's columns;
on a Series, ``{value}`` (or the Series' name) is the value. ``agent=None`` builds a
``ChatAgent(memory="none", **settings)``; the model is asked about each row independently either way.
``cache=``, ``checkpoint=``, ``restart=``, ``max_cost=``, ``dedup=``, ``cascade=``, ``pack=`` and ``calibrate=`` are
``run_batch``'s and go to it. On a provider that classifies by scoring (the embedded model), ``classify``, ``filter``
and a label ``output=`` score each row rather than generate it (``LABELS_BY``), with a ``confidence`` per row.

``agg`` reduces all the rows (or each group's, ``by=``) to one answer under ``CONTEXT_WINDOW``
(``semantic.agg``); ``df.groupby(keys).aiforge.agg`` does it per group of a pandas groupby. ``embed``,
``dedup``, ``cluster``, ``join`` and ``topk`` are thin wrappers over ``aiforge.semantic`` (each puts its report,
with requests and cost, in ``.attrs["aiforge"]``).
``df.aiforge.evaluate`` (a grid of prompts x agents scored against a truth column) and ``judge`` (a rubric's score
and reason per row) are thin wrappers over ``aiforge.evaluation``.

Importing this module registers the accessors (``aiforge`` imports it when pandas is imported), and the
``aiforge`` property of pandas' groupby objects (``GroupByOperations``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

import pandas as pd

from aiforge.batch.cascade import Cascade
from aiforge.batch.options import DEFAULT_CONCURRENCY, batch_options, with_options
from aiforge.batch.results import BatchResult
from aiforge.chat.operation_agent import operation_agent
from aiforge.core.columns import OUTPUT_COLUMN, output_columns
from aiforge.core.labels import checked_labels
from aiforge.core.output import OutputSpec
from aiforge.core.report import OperationReport
from aiforge.core.templates import VALUE_FIELD, no_such_column
from aiforge.core.types import UsageError
from aiforge.semantic.join import semantic_join
from aiforge.semantic.join.candidates import DEFAULT_K

if TYPE_CHECKING:
    from aiforge.chat.agent import ChatAgent
    from aiforge.evaluation.result import EvalResult
    from aiforge.semantic.agg.frames import AggText

ATTRS_KEY = "aiforge"
"""Where each result keeps its report (an ``OperationReport``, ``core.report``): ``result.attrs["aiforge"]``."""
RESPONSE_COLUMN = "response"
"""The column of ``map``'s text replies when there is no ``output=``."""
LABEL_COLUMN = "label"
"""The name of ``classify``'s Series."""


class _Operations:
    """What ``df.aiforge`` and ``s.aiforge`` share; ``_items`` is what each row's prompt is built from."""

    def __init__(self, data: pd.DataFrame | pd.Series) -> None:
        self._data = data

    @with_options
    def map(
        self,
        prompt: str,
        output: Any = None,
        *,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.DataFrame:
        """A DataFrame on the input's index: one text column ``response``, or the fields of ``output``."""
        batch = self._run(prompt, output, agent, concurrency, settings)
        return _attach(_columns(batch), batch)

    @with_options
    def classify(
        self,
        prompt: str,
        labels: Sequence[str],
        *,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.Series:
        """A categorical Series ``label`` of ``labels``: the answer constrained to them, or scored (``LABELS_BY``)."""
        labels = checked_labels(labels, "classify")
        batch = self._run(prompt, Literal[labels], agent, concurrency, settings)
        return _attach(_columns(batch)[OUTPUT_COLUMN].rename(LABEL_COLUMN), batch)

    @with_options
    def filter(
        self,
        prompt: str,
        *,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.DataFrame | pd.Series:
        """The rows for which the model answers true (a boolean output); failed rows are left out."""
        batch = self._run(prompt, bool, agent, concurrency, settings)
        keep = _columns(batch)[OUTPUT_COLUMN].fillna(False).to_numpy(dtype=bool)
        return _attach(self._data[keep], batch)

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
        ``cache=``, ``checkpoint=`` (one file per round), ``restart=``, ``max_cost=`` and ``dedup=`` go to every
        round; the ``TopKRun`` (batches, requests, cost) is in ``.attrs["aiforge"]``. A comparison failing twice
        raises ``ComparisonFailedError``. On a Series, the frame has the values and ``rank``::

            tickets.aiforge.topk("the most urgent ticket: {ticket}", k=3)
        """
        from aiforge.semantic.topk import rank_rows, ranked_frame

        run = rank_rows(
            self._data, prompt, k, method=method, agent=agent, window=window, concurrency=concurrency, **settings
        )
        return _attach(ranked_frame(self._data, run.positions), run)

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
        *,
        output: type[_Answer],
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> _Answer: ...

    @overload
    def agg(
        self,
        prompt: str,
        by: str | list[Any],
        output: Any = None,
        *,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.Series: ...

    @overload
    def agg(
        self,
        prompt: str,
        by: Any = None,
        output: Any = None,
        *,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> Any: ...

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
        ``output=`` value (an instance of that type, which keeps no report). With ``by`` (a column or a list): a
        Series indexed by group. ``cache=``, ``checkpoint=`` (a directory), ``restart=``, ``max_cost=`` and
        ``dedup=`` go to each level's batch; the same call after an interrupt asks only the unanswered chunks
        (``semantic.agg``).
        """
        from aiforge.semantic.agg.frames import agg_answer

        return agg_answer(self._data, prompt, by, output, agent, concurrency, settings)

    @with_options
    def judge(
        self,
        criteria: str | Mapping[int, str],
        column: str | None = None,
        template: str | None = None,
        output: Any = None,
        scale: tuple[int, int] | None = None,
        *,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.DataFrame:
        """Each row's text scored against a rubric: columns ``score`` (an int on ``scale``, 1-5 by default) and
        ``reason``, or the fields of ``output``; on the input's index (``aiforge.evaluation.judge``).

        The text is ``column`` (a Series: its values) or a row ``template`` (``"Q: {question}\nA: {answer}"``);
        ``criteria`` is the rubric as text or levels ``{1: "wrong", 5: "right"}``. Check it against people with
        ``aiforge.evaluation.agreement(judged["score"], df["human_score"])``.
        """
        from aiforge.evaluation.judge import JUDGEMENT_COLUMNS, judge_request

        if isinstance(self._data, pd.Series) and column is None and template is None:
            column = VALUE_FIELD
        prompt, spec = judge_request(criteria, column=column, template=template, output=output, scale=scale)
        batch = self._run(prompt, spec, agent, concurrency, settings)
        judged = _columns(batch)
        return _attach(judged[JUDGEMENT_COLUMNS] if output is None else judged, batch)

    def _extract(
        self,
        items: pd.Series,
        output: Any,
        agent: ChatAgent | None,
        concurrency: int,
        settings: dict[str, Any],
    ) -> pd.DataFrame:
        batch = _batch(items, extraction_prompt(output), output, agent, concurrency, settings)
        return _attach(_columns(batch), batch)

    def _run(
        self, prompt: str, output: Any, agent: ChatAgent | None, concurrency: int, settings: dict[str, Any]
    ) -> BatchResult:
        return _batch(self._data, prompt, output, agent, concurrency, settings)

    def _dedup(
        self,
        values: pd.Series,
        threshold: float | None,
        confirm: bool | tuple[float, float],
        prompt: str | None,
        agent: ChatAgent | None,
        concurrency: int,
        settings: dict[str, Any],
    ) -> pd.Series:
        from aiforge.semantic.near_duplicates import (
            DedupRequest,
            check_unique_index,
            confirm_template,
            duplicate_ids,
            similarity_band,
        )

        band = similarity_band(threshold, confirm)
        template = confirm_template(prompt)
        check_unique_index(values.index)
        agent, options = _semantic_agent(agent, settings)
        ids, report = duplicate_ids(values, agent, DedupRequest(band, template, concurrency, options))
        return _attach(ids, report)

    def _cluster(
        self, values: pd.Series, n_clusters: int, seed: int, agent: ChatAgent | None, settings: dict[str, Any]
    ) -> pd.Series:
        from aiforge.semantic.clusters import cluster_ids

        agent, options = _semantic_agent(agent, settings)
        ids, report = cluster_ids(values, agent, n_clusters, seed=seed, cache=options.get("cache"))
        return _attach(ids, report)


@pd.api.extensions.register_dataframe_accessor(ATTRS_KEY)
class DataFrameOperations(_Operations):
    """``df.aiforge.map / classify / filter / extract``; prompts name the frame's columns."""

    _data: pd.DataFrame

    @with_options
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
        _check_column(column, self._data.columns)
        if output is None:
            raise UsageError(
                f"extract needs output=, the type to extract: df.aiforge.extract({column!r}, output=Person)."
            )
        return self._extract(self._data[column], output, agent, concurrency, settings)

    def dedup(
        self,
        column: str,
        threshold: float | None = None,
        *,
        confirm: bool | tuple[float, float] = False,
        prompt: str | None = None,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.Series:
        """``duplicate_of``: for each row, the index label of the first row of its group of near-duplicates.

        Each row is a duplicate of the row it names: its text in ``column`` has cosine similarity >= ``threshold``
        (default 0.9) with that row's (the most similar group's first row, taking rows in order), or is the same
        text. Groups never chain through a third row. ``confirm=True`` (or a band ``(low, high)``) asks the model
        about a row left alone and each group's first row just below (``[threshold - 0.1, threshold)``), and
        joins the group it says is a duplicate; ``prompt=`` replaces the question and names ``{left}`` and
        ``{right}``. A missing value is its own group. On a chat model's vectors (the embedded model's) it warns
        (``ChatModelVectorsWarning``). The ``DedupReport`` (pairs, requests, cost) is in ``.attrs["aiforge"]``::

            ids = df.aiforge.dedup("ticket", threshold=0.9, confirm=True)
            df[ids == ids.index]             # the first row of each group
            df.groupby(ids)["ticket"].agg(list)
        """
        _check_column(column, self._data.columns, "dedup")
        return self._dedup(self._data[column], threshold, confirm, prompt, agent, concurrency, settings)

    def cluster(
        self, column: str, n_clusters: int, *, seed: int = 0, agent: ChatAgent | None = None, **settings: Any
    ) -> pd.Series:
        """``cluster``: each row's topic cluster ``0..n_clusters-1`` (k-means on the embeddings of ``column``).

        The same texts and ``seed`` give the same clusters; cluster 0 is the first row's. A missing value is
        ``<NA>``. On a chat model's vectors (the embedded model's) it warns (``ChatModelVectorsWarning``). The
        ``ClusterReport`` (sizes, cost) is in ``.attrs["aiforge"]``::

            df["topic"] = df.aiforge.cluster("ticket", n_clusters=8)
        """
        _check_column(column, self._data.columns, "cluster")
        return self._cluster(self._data[column], n_clusters, seed, agent, settings)

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
        ``.attrs["aiforge"]``. See ``aiforge.semantic.embed_column``::

            vectors = df.aiforge.embed("review", provider="openai")
        """
        return _embed(_text_column(self._data, column), agent, model, cache, concurrency, batch_size, settings)


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

        ``checkpoint=`` is a folder (a file per candidate): a second run asks only new candidates' rows. Without
        ``agents``, the grid runs on the agent the settings make (``provider=``, ``MODEL=``), as ``map``'s does;
        every candidate is checked before the first request.
        """
        from aiforge.evaluation.grid import evaluate

        return evaluate(
            self._data, prompts, agents, truth, labels=labels, output=output, metric=metric,
            concurrency=concurrency, checkpoint=checkpoint, **options,
        )

    def join(
        self,
        right: pd.DataFrame,
        prompt: str,
        how: str = "inner",
        *,
        suffixes: tuple[str | None, str | None] = ("_x", "_y"),
        strategy: str = "auto",
        candidates: int = DEFAULT_K,
        multiple: bool = True,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.DataFrame:
        """The row pairs the model says ``prompt`` holds for, merged as ``pd.merge`` does, without n x m calls.

        ``tickets.aiforge.join(products, "Does the ticket {left.text} concern {right.name}?", how="left")``: fields
        name a side and a column. Up to ``semantic.join.CLASSIFY_MAX_RIGHT`` distinct right rows, each left row is
        one classification over them (``strategy="classify"``); above, the ``candidates`` nearest right rows by
        embedding are each asked yes/no (``"candidates"``). ``how`` and ``suffixes`` are ``merge``'s; the index is a
        ``MultiIndex`` ``("left", "right")`` of both rows' labels. ``.attrs["aiforge"]`` is a ``JoinReport``
        (requests, cost, failures). See ``aiforge.semantic.join``.
        """
        if not isinstance(right, pd.DataFrame):
            hint = " (a Series: right.to_frame())" if isinstance(right, pd.Series) else ""
            raise UsageError(f"join: the right side is a DataFrame, got {type(right).__name__}{hint}.")
        return semantic_join(
            self._data, right, prompt, how=how, suffixes=suffixes, strategy=strategy, candidates=candidates,
            multiple=multiple, agent=agent, concurrency=concurrency, **settings,
        )


@pd.api.extensions.register_series_accessor(ATTRS_KEY)
class SeriesOperations(_Operations):
    """``s.aiforge.map / classify / filter / extract`` over the values; prompts say ``{value}``."""

    _data: pd.Series

    @with_options
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

    def dedup(
        self,
        threshold: float | None = None,
        *,
        confirm: bool | tuple[float, float] = False,
        prompt: str | None = None,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.Series:
        """``duplicate_of`` of each value: the index label of its near-duplicate group's first row; see
        ``df.aiforge.dedup``::

            ids = df["ticket"].aiforge.dedup(0.9)
        """
        return self._dedup(self._data, threshold, confirm, prompt, agent, concurrency, settings)

    def cluster(self, n_clusters: int, *, seed: int = 0, agent: ChatAgent | None = None, **settings: Any) -> pd.Series:
        """Each value's topic cluster; see ``df.aiforge.cluster``::

            topics = df["ticket"].aiforge.cluster(8)
        """
        return self._cluster(self._data, n_clusters, seed, agent, settings)

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
        return _embed(self._data, agent, model, cache, concurrency, batch_size, settings)


def _text_column(data: pd.DataFrame, column: Any) -> pd.Series:
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


def _embed(
    values: pd.Series,
    agent: ChatAgent | None,
    model: str | None,
    cache: Any,
    concurrency: int,
    batch_size: int | None,
    settings: dict[str, Any],
) -> pd.Series:
    from aiforge.semantic.embed_column import embedding_series, refuse_batch_options

    refuse_batch_options(settings)
    return embedding_series(
        values, operation_agent(agent, settings), model=model, cache=cache, concurrency=concurrency,
        batch_size=batch_size,
    )


class GroupByOperations:
    """``df.groupby(keys).aiforge`` and ``s.groupby(keys).aiforge``: ``agg`` per group.

    pandas registers no accessors on groupby objects, so importing this module sets an ``aiforge`` property on
    pandas' ``DataFrameGroupBy`` and ``SeriesGroupBy`` (unless they have one already).
    """

    def __init__(self, grouped: Any) -> None:
        self._grouped = grouped

    def agg(
        self,
        prompt: str,
        output: Any = None,
        *,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.Series:
        """One answer per group, a Series on the groupby's keys (a MultiIndex for several), ``dropna`` and
        ``observed`` as pandas applies them: ``df.groupby("product").aiforge.agg("Top complaint in {review}")``."""
        from aiforge.semantic.agg.frames import agg_groups

        return agg_groups(self._grouped, prompt, output, agent, concurrency, settings)


def _install_groupby_accessor() -> None:
    from pandas.api.typing import DataFrameGroupBy, SeriesGroupBy

    for grouped in (DataFrameGroupBy, SeriesGroupBy):
        if not hasattr(grouped, ATTRS_KEY):
            setattr(grouped, ATTRS_KEY, property(GroupByOperations, doc=GroupByOperations.__doc__))


_install_groupby_accessor()


def _check_column(column: Any, columns: pd.Index, operation: str = "extract") -> None:
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


def extraction_prompt(output: Any) -> str:
    """The row template ``extract`` asks with: what to extract, then the text as ``{value}``."""
    spec = OutputSpec.of(output)
    if spec.is_object:
        fields = list(spec.schema["properties"])
        wanted = fields[0] if len(fields) == 1 else f"{', '.join(fields[:-1])} and {fields[-1]}"
        what = f"Extract the {wanted} from the text below. Use null for a field the text does not give."
    else:
        what = f"Extract the {spec.name} from the text below."
    return f"{what}\n\nText:\n{{{VALUE_FIELD}}}"




def _batch(
    items: Any,
    prompt: str,
    output: Any,
    agent: ChatAgent | None,
    concurrency: int,
    settings: dict[str, Any],
) -> BatchResult:
    # run_batch's own options (OPERATION_OPTIONS: checkpoint=, restart=, max_cost=, cache=, ...) pass through; the
    # rest are settings.
    options = batch_options(settings)
    if agent is None and not settings:
        agent = _cascade_agent(options.get("cascade"))
    agent = operation_agent(agent, settings)
    # A DataFrame operation covers the whole frame: run_batch's max_batch guards lists built by hand.
    result: BatchResult = agent.run_batch(
        items, concurrency, max(len(items), 1), output=output, prompt=prompt, **options
    )
    return result


def _cascade_agent(cascade: Any) -> ChatAgent | None:
    """A cascade's strong agent, which runs the batch when none is given: none is built only to be passed over."""
    from aiforge.chat.agent import ChatAgent

    then = cascade.then if isinstance(cascade, Cascade) else None
    return then if isinstance(then, ChatAgent) else None


def _columns(batch: BatchResult) -> pd.DataFrame:
    """The new columns of ``batch`` on the input's index: the output's fields, or the text replies."""
    values: list[Any] = [None] * len(batch)
    for position, result in zip(batch.indices, batch.results, strict=True):
        values[position] = result.output if batch.output is not None else result.message
    if batch.output is not None:
        return output_columns(values, batch.output, batch.index)
    return pd.DataFrame({RESPONSE_COLUMN: pd.array(values, dtype="string")}, index=batch.index)


_Data = TypeVar("_Data", bound="pd.DataFrame | pd.Series[Any]")
_Answer = TypeVar("_Answer")


def _attach(data: _Data, report: OperationReport) -> _Data:
    """``data`` with ``report`` in its ``.attrs["aiforge"]``: where every operation's result is put together.

    Every ``report`` is an ``OperationReport`` (``core.report``: ``total_cost``, ``total_tokens``, ``requests``,
    ``failed``), finished before it is attached and never changed after: pandas' deep copy of ``.attrs`` shares it.

    A result with failed rows says so here, once per call (``FailedRowsWarning``): a failed row is never a silent
    null. A ``BatchResult``'s failures are rows; a ``DedupReport``'s, the confirmation's pairs, which count as not
    duplicates. (``topk``, ``agg`` and ``embed`` raise rather than return with a failure; ``join`` warns of its own.)
    """
    from aiforge.core.failed_rows import warn_failed_rows
    from aiforge.semantic.near_duplicates import DedupReport

    data.attrs[ATTRS_KEY] = report
    if isinstance(report, BatchResult):
        warn_failed_rows(report.failed, len(report))
    elif isinstance(report, DedupReport) and report.confirmation is not None:
        warn_failed_rows(
            report.confirmation.failed, len(report.confirmation), what="pairs asked",
            where="result.attrs['aiforge'].confirmation.failed (each counts as not a duplicate)",
        )
    return data


def _semantic_agent(agent: ChatAgent | None, settings: dict[str, Any]) -> tuple[ChatAgent, dict[str, Any]]:
    """The agent a semantic operation embeds and asks with, and ``run_batch``'s options taken out of ``settings``."""
    options = batch_options(settings)
    return operation_agent(agent, settings), options


