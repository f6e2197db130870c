"""``ddf.aiforge``: map, classify, filter and extract on a Dask DataFrame, lazily, over ``partition_columns``;
``agg``, computed at once: each partition's partial answers, folded on the client (``_agg_job``).

Each operation is one ``map_partitions`` with the right ``meta``, so ``.compute()``, ``.persist()`` and
``.to_parquet()`` work and Dask's progress bar and dashboard show the partitions. It needs a
``distributed.Client`` (a ``LocalCluster`` or a real cluster): the job's limits and its summary live on
the scheduler. Nothing here runs a scheduler, queue or worker pool of its own.

- Keys: a key never travels in the graph (a spec with one is a ``ValueError``). Workers read
  ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` / ``AIFORGE_*`` from their own environment: a ``LocalCluster``
  inherits the client's; on a cluster set them where workers start (a Kubernetes secret, the job script).
- Global concurrency: one ``distributed.Semaphore`` of ``concurrency`` leases per job. A running partition
  holds one lease, plus as many more as are free up to its share (``concurrency`` / worker threads), and runs
  at most that many requests at once; so the requests in flight across the cluster never exceed ``concurrency``.
- RPM / TPM: pacing is per process (``providers/pacing.py``), so a job's ``RPM=`` / ``TPM=`` are divided
  among the worker processes at submission: the workers' ceilings add up to the limit. Each worker also
  follows the server's remaining-count headers, which count every worker's requests against the key.
- Faults: a worker killed mid-partition makes Dask run the partition again elsewhere; every row is in the
  output exactly once. With ``checkpoint=DIR`` (one file per partition, on a filesystem every worker sees)
  or a shared ``cache=``, the rows answered before the kill are not asked again.
- Summary: each partition sends its costs, tokens and failures to a ``distributed.Queue``; after
  ``compute()``, ``job_summary(result)`` gathers them into one ``JobSummary``, whose ``saved`` adds up the
  partitions' ``BatchResult.saved`` (rows are deduplicated within a partition, not across partitions).
- Progress: workers draw no bar (``partition.process_agent``): in JupyterLab a ``LocalCluster``'s workers write
  to the kernel's stderr, one box of stale bars per partition. ``compute(result)`` shows one bar on the client,
  over the partitions; ``distributed.progress(result.persist())`` and the dashboard work as usual.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import dask.dataframe as dd
import pandas as pd
from dask.dataframe.extensions import register_dataframe_accessor

from aiforge.batch.savings import Savings
from aiforge.chat.operation_agent import operation_agent
from aiforge.core.progress import progress_bar, progress_enabled
from aiforge.core.report import SharedOnDeepcopy
from aiforge.core.templates import no_such_column
from aiforge.core.types import UsageError
from aiforge.dataframes.accessor import ATTRS_KEY, LABEL_COLUMN, _attach
from aiforge.dataframes.partition import (
    KEEP_COLUMN,
    PartitionSpec,
    check_no_keys,
    partition_columns,
    partition_key,
    with_concurrency,
)

JOB_ATTRIBUTE = "_aiforge_job"
"""Where a result of ``ddf.aiforge`` keeps its ``DaskJob`` (read by ``job_summary``)."""
PACED_SETTINGS = ("RPM", "TPM")


@dataclass(frozen=True)
class DaskJob:
    """One accessor call on the cluster, picklable: its semaphore, its summary queue, each partition's share."""

    name: str
    concurrency: int
    share: int
    """The most leases one partition takes: ``concurrency`` split among the worker threads."""

    @property
    def semaphore(self) -> str:
        return f"{self.name}-in-flight"

    @property
    def queue(self) -> str:
        return f"{self.name}-summary"


@dataclass
class JobSummary(SharedOnDeepcopy):
    """The costs and failures of a whole Dask job, gathered from its partitions after ``compute()``: an
    ``OperationReport`` (``core.report``)."""

    partitions: int = 0
    rows: int = 0
    failed: list[tuple[Any, str]] = field(default_factory=list)
    """``(index label, "ErrorType: message")`` of every failed row."""
    total_cost: float = 0.0
    total_tokens: int = 0
    requests: int = 0
    """Requests the partitions sent (cache hits and repeated rows sent none)."""
    cached: int = 0
    """Rows answered by the response cache, an identical row of their partition (or a checkpoint), not a request."""
    saved: Savings = field(default_factory=Savings)
    """What the job did not spend against one request per row: the partitions' ``saved`` added up."""


@register_dataframe_accessor("aiforge")
class DaskOperations:
    """``ddf.aiforge.map / classify / filter / extract``: the pandas accessor's operations, per partition."""

    def __init__(self, data: dd.DataFrame) -> None:
        self._data = data

    def map(self, prompt: str, output: Any = None, concurrency: int = 10, **settings: Any) -> dd.DataFrame:
        """A lazy DataFrame on the input's index: ``response``, or the fields of ``output``."""
        return self._new_columns("map", concurrency, settings, prompt=prompt, output=output)

    def classify(self, prompt: str, labels: Sequence[str], concurrency: int = 10, **settings: Any) -> dd.Series:
        """A lazy categorical Series ``label`` of ``labels``."""
        result = self._new_columns("classify", concurrency, settings, prompt=prompt, labels=labels)
        return _keep_job(result[LABEL_COLUMN], result)

    def filter(self, prompt: str, concurrency: int = 10, **settings: Any) -> dd.DataFrame:
        """The rows for which the model answers true; failed rows are left out."""
        spec, job = self._job("filter", concurrency, settings, prompt=prompt)
        result: dd.DataFrame = self._data.map_partitions(_kept_rows, spec, job, meta=self._data._meta)
        setattr(result, JOB_ATTRIBUTE, job)
        return result

    def extract(self, column: str, output: Any, concurrency: int = 10, **settings: Any) -> dd.DataFrame:
        """The fields of ``output`` extracted from the text column ``column``."""
        if column not in self._data.columns:
            raise UsageError(no_such_column("extract", column, self._data.columns))
        return self._new_columns("extract", concurrency, settings, output=output, column=column)

    def agg(
        self, prompt: str, by: Any = None, output: Any = None, concurrency: int = 10, **settings: Any
    ) -> Any:
        """One answer for all the rows (with ``by``, a pandas Series by group), computed now, not lazily.

        Each partition reduces its rows to partial answers (one per group) with ``map_partitions``; the client
        folds them into the answer, as ``df.aiforge.agg`` does: every request, on a worker or the client, fits
        ``CONTEXT_WINDOW``. The answer's ``.attrs["aiforge"]`` is the ``AggReport`` of the fold, with the
        partitions' spend in ``.partitions``. Options as ``df.aiforge.agg``'s (``checkpoint=`` a directory every
        worker sees).
        """
        return _agg_job(self._data, prompt, by, output, concurrency, settings)

    def dedup(
        self,
        column: str,
        threshold: float | None = None,
        *,
        confirm: bool | tuple[float, float] = False,
        prompt: str | None = None,
        concurrency: int = 10,
        **settings: Any,
    ) -> pd.Series:
        """``duplicate_of`` of every row, computed now, as a pandas Series: see ``df.aiforge.dedup``.

        The embeddings are made per partition on the workers, the blocking (and the confirmation batch) on the
        client (``dataframes/dask_dedup.py``): a row's group depends on all rows. ``.attrs["aiforge"]`` holds the
        ``DedupReport``. Back on the frame: ``ddf.merge(ids.to_frame(), left_index=True, right_index=True)``.
        """
        from aiforge.batch.options import batch_options
        from aiforge.dataframes.dask_dedup import dask_duplicate_ids
        from aiforge.semantic.near_duplicates import DedupRequest, confirm_template, similarity_band

        if column not in self._data.columns:
            raise UsageError(no_such_column("dedup", column, self._data.columns))
        band = similarity_band(threshold, confirm)
        options = batch_options(settings)
        request = DedupRequest(band, confirm_template(prompt), concurrency, options)
        ids, report = dask_duplicate_ids(self._data[column], settings, request)
        return _attach(ids, report)

    def embed(self, column: str, concurrency: int = 10, **settings: Any) -> dd.Series:
        """A lazy Series ``<column>_embedding`` of float32 vectors (None for a missing value), per partition.

        The pandas accessor's ``embed`` on each partition with this process's agent (``partition.process_agent``);
        ``model=``, ``cache=`` and ``batch_size=`` are its options, the rest agent settings (never a key). At most
        ``concurrency`` embeddings requests are in flight across the cluster; ``job_summary`` gives the cost::

            vectors = ddf.aiforge.embed("review", provider="openai")
        """
        if column not in self._data.columns:
            raise UsageError(no_such_column("embed", column, self._data.columns))
        from aiforge.semantic.embed_column import embedding_name, refuse_batch_options

        check_no_keys(settings)
        refuse_batch_options(settings)
        options = {name: settings.pop(name) for name in ("model", "cache", "batch_size") if name in settings}
        job = _embedding_job(concurrency)
        meta = pd.Series([], dtype=object, name=embedding_name(column), index=self._data._meta.index)
        result: dd.Series = self._data.map_partitions(_embedded_partition, column, settings, options, job, meta=meta)
        setattr(result, JOB_ATTRIBUTE, job)
        return result

    def _new_columns(self, operation: str, concurrency: int, settings: dict[str, Any], **what: Any) -> dd.DataFrame:
        spec, job = self._job(operation, concurrency, settings, **what)
        meta = spec.empty_columns(self._data._meta.index)
        result: dd.DataFrame = self._data.map_partitions(_job_columns, spec, job, meta=meta)
        setattr(result, JOB_ATTRIBUTE, job)
        return result

    def _job(
        self, operation: Any, concurrency: int, settings: dict[str, Any], **what: Any
    ) -> tuple[PartitionSpec, DaskJob]:
        from distributed import Queue, Semaphore, get_client

        try:
            client = get_client()
        except ValueError:
            raise UsageError(
                "ddf.aiforge needs a distributed Client (Client() or Client(LocalCluster())): "
                "the job's concurrency limit and summary live on its scheduler."
            ) from None
        processes = max(len(client.scheduler_info()["workers"]), 1)
        threads = max(sum(client.nthreads().values()), 1)
        for name in list(settings):
            if name.upper() in PACED_SETTINGS and settings[name] is not None:
                settings[name] = max(settings[name] // processes, 1)
        spec = PartitionSpec.of(operation, concurrency=concurrency, **what, **settings)
        if operation != "map" or what.get("output") is not None:
            _warn_here_if_embedded(spec)
        job = DaskJob(f"aiforge-{uuid.uuid4().hex[:12]}", concurrency, max(concurrency // threads, 1))
        # Made here, so the scheduler knows the limit before any partition asks for a lease.
        Semaphore(max_leases=concurrency, name=job.semaphore)
        Queue(job.queue)
        return spec, job


def _embedding_job(concurrency: int) -> DaskJob:
    """An embed job's semaphore and summary queue on the scheduler; one lease a partition (one request at a time)."""
    from distributed import Queue, Semaphore, get_client

    try:
        get_client()
    except ValueError:
        raise UsageError(
            "ddf.aiforge needs a distributed Client (Client() or Client(LocalCluster())): "
            "the job's concurrency limit and summary live on its scheduler."
        ) from None
    job = DaskJob(f"aiforge-{uuid.uuid4().hex[:12]}", concurrency, 1)
    Semaphore(max_leases=concurrency, name=job.semaphore)
    Queue(job.queue)
    return job


def _embedded_partition(
    part: pd.DataFrame, column: str, settings: dict[str, Any], options: dict[str, Any], job: DaskJob
) -> pd.Series:
    from aiforge.dataframes.partition import process_agent
    from aiforge.semantic.embed_column import embedding_name, embedding_series

    if len(part) == 0:
        return pd.Series([], dtype=object, name=embedding_name(column), index=part.index)
    with _leases(job, 1):
        vectors = embedding_series(part[column], process_agent(settings), concurrency=1, **options)
    run = vectors.attrs.pop(ATTRS_KEY)
    report = {
        "partition": partition_key(part), "rows": len(part), "failed": [], "cost": run.total_cost,
        "tokens": run.total_tokens, "requests": run.requests, "cached": run.cached, "saved": _savings_report(Savings()),
    }
    from distributed import Queue

    Queue(job.queue).put(report)
    return vectors


def compute(result: Any, *, progress: bool = True) -> Any:
    """``result.compute()``, with one progress bar on the client over the partitions as they finish.

    The bar is every long run's (``core.progress``: a widget in a notebook that ends as one line);
    ``TQDM_DISABLE=1`` or ``progress=False`` turn it off.
    """
    if not progress_enabled(progress):
        return result.compute()
    from distributed import as_completed, futures_of, get_client

    persisted = get_client().persist(result)
    futures = futures_of(persisted)
    with progress_bar(len(futures), "aiforge partitions", unit="partition", leave=True) as bar:
        for _ in as_completed(futures):
            bar.update(1)
    return persisted.compute()


def job_summary(result: Any) -> JobSummary:
    """The costs and failures of every partition of ``result`` (an ``ddf.aiforge`` result), after it ran.

    Partitions that have not run yet are not counted; a partition Dask ran twice counts once.
    """
    from distributed import Queue

    job: DaskJob | None = getattr(result, JOB_ATTRIBUTE, None)
    if job is None:
        raise UsageError("job_summary: pass what ddf.aiforge.map / classify / filter / extract returned.")
    reports = _reports.setdefault(job.name, {})
    queue = Queue(job.queue)
    for report in queue.get(batch=True):
        reports[report["partition"]] = report
    summary = JobSummary(partitions=len(reports))
    for report in reports.values():
        summary.rows += report["rows"]
        summary.failed += [tuple(failure) for failure in report["failed"]]
        summary.total_cost += report["cost"]
        summary.total_tokens += report["tokens"]
        summary.requests += report["requests"]
        summary.cached += report["cached"]
        summary.saved += _savings_from_report(report["saved"])
    return summary


_reports: dict[str, dict[str, dict[str, Any]]] = {}
"""The partition reports read so far, by job: the queue hands each report out once."""


def _warn_here_if_embedded(spec: PartitionSpec) -> None:
    """A typed job on the embedded model warns once, on the client; its workers stay quiet (``_job_columns``)."""
    from aiforge.batch.embedded import warn_embedded_once
    from aiforge.core.settings import AIForgeSettings, load_settings
    from aiforge.providers import is_embedded, resolve_provider_name

    fields = AIForgeSettings.model_fields
    settings = load_settings(**{k.upper(): v for k, v in spec.settings.items() if k.upper() in fields})
    if is_embedded(resolve_provider_name(settings)):
        warn_embedded_once()


def _job_columns(part: pd.DataFrame, spec: PartitionSpec, job: DaskJob) -> pd.DataFrame:
    from aiforge.batch.embedded import stay_quiet

    stay_quiet()  # the client warned once for every worker
    if len(part) == 0:
        return spec.empty_columns(part.index)
    with _leases(job, len(part)) as held:
        columns = partition_columns(part, with_concurrency(spec, held))
    _report(part, columns, job)
    columns.attrs.pop(ATTRS_KEY, None)
    return columns


def _kept_rows(part: pd.DataFrame, spec: PartitionSpec, job: DaskJob) -> pd.DataFrame:
    return part[_job_columns(part, spec, job)[KEEP_COLUMN].to_numpy(dtype=bool)]


@contextmanager
def _leases(job: DaskJob, rows: int) -> Iterator[int]:
    """Holds one lease of the job's semaphore (waiting for it) and any free ones up to the share; yields how many."""
    from distributed import Semaphore

    semaphore = Semaphore(max_leases=job.concurrency, name=job.semaphore)
    semaphore.acquire()
    held = 1
    try:
        # Only free leases on top of the first: a partition never waits holding some, so none can deadlock.
        while held < min(job.share, rows) and semaphore.acquire(timeout=0):
            held += 1
        yield held
    finally:
        for _ in range(held):
            semaphore.release()


def _report(part: pd.DataFrame, columns: pd.DataFrame, job: DaskJob) -> None:
    from distributed import Queue

    batch = columns.attrs[ATTRS_KEY]
    failed = [(f.index, f"{type(f.error).__name__}: {f.error}") for f in batch.failed]  # f.index: the label
    report = {
        "partition": partition_key(part),
        "rows": len(part),
        "failed": failed,
        "cost": batch.total_cost,
        "tokens": batch.total_tokens,
        "requests": batch.requests,
        "cached": batch.cached,
        "saved": _savings_report(batch.saved),
    }
    Queue(job.queue).put(report)


def _savings_report(saved: Savings) -> list[Any]:
    """``saved`` as plain lists and dicts, which the scheduler's queue carries without pickling."""
    def numbers(part: Savings) -> list[Any]:
        return [part.requests, part.input_tokens, part.output_tokens, part.dollars]

    return [*numbers(saved), saved.naive_requests, {name: numbers(part) for name, part in saved.by_source.items()}]


def _savings_from_report(report: list[Any]) -> Savings:
    requests, input_tokens, output_tokens, dollars, naive, sources = report
    parts = {name: Savings(*part) for name, part in sources.items()}
    return Savings(requests, input_tokens, output_tokens, dollars, naive, parts)


def _keep_job(series: dd.Series, source: Any) -> dd.Series:
    setattr(series, JOB_ATTRIBUTE, getattr(source, JOB_ATTRIBUTE))
    return series


PARTIAL_COLUMN = "partial"
"""The column of a partition's partial answers (one row per group) in ``ddf.aiforge.agg``."""
_SPENT_COLUMNS = ("requests", "tokens", "cost", "largest_request")


@dataclass(frozen=True)
class AggPartitionSpec:
    """What each partition of ``ddf.aiforge.agg`` reduces its rows with, picklable (never a key)."""

    prompt: str
    by: tuple[Any, ...]
    settings: dict[str, Any]
    options: dict[str, Any]


def _agg_job(data: dd.DataFrame, prompt: str, by: Any, output: Any, concurrency: int, settings: dict[str, Any]) -> Any:
    from aiforge.semantic.agg.chunks import ANSWERS
    from aiforge.semantic.agg.frames import (
        AggText,
        by_groupby,
        checked_keys,
        grouped_texts,
        instruction_for,
    )
    from aiforge.semantic.agg.reduce import check_groups, reduce_groups
    from aiforge.semantic.agg.report import PartitionTotals

    instruction = instruction_for(data._meta, prompt)
    keys = () if by is None else tuple(checked_keys(data.columns, by))
    spec, job = _agg_spec(prompt, keys, concurrency, settings)
    meta = data._meta[list(keys)].iloc[:0].assign(**{PARTIAL_COLUMN: pd.Series([], dtype=object)})
    meta = meta.assign(**{name: pd.Series([], dtype=float) for name in _SPENT_COLUMNS})
    partials: pd.DataFrame = data.map_partitions(_partition_partials, spec, job, meta=meta).compute()
    totals = PartitionTotals(
        data.npartitions, int(partials["requests"].sum()), int(partials["tokens"].sum()),
        float(partials["cost"].sum()), int(partials["largest_request"].max()) if len(partials) else 0,
    )
    agent, options = operation_agent(None, dict(spec.settings)), spec.options
    texts = [None if pd.isna(text) else text for text in partials[PARTIAL_COLUMN].tolist()]
    if keys:
        groups = grouped_texts(by_groupby(partials, list(keys)), texts)
        check_groups(groups.texts)
        answers, report = reduce_groups(
            agent, instruction.text, groups.texts, kind=ANSWERS, output=output, concurrency=concurrency, options=options
        )
        result: Any = groups.series(answers, typed=output is not None)
    else:
        found = [text for text in texts if text is not None]
        check_groups([found])
        answers, report = reduce_groups(
            agent, instruction.text, [found], kind=ANSWERS, output=output, concurrency=concurrency, options=options
        )
        result = answers[0] if output is not None else AggText(answers[0])
    report.partitions = totals
    if isinstance(result, pd.Series | AggText):
        result.attrs = {ATTRS_KEY: report}
    return result


def _agg_spec(
    prompt: str, keys: tuple[Any, ...], concurrency: int, settings: dict[str, Any]
) -> tuple[AggPartitionSpec, DaskJob]:
    """The partitions' spec (settings checked for keys) and the job holding their concurrency semaphore."""
    from aiforge.semantic.agg.frames import split_settings

    check_no_keys(settings)
    agent_settings = dict(settings)
    options = split_settings(agent_settings)
    spec = AggPartitionSpec(prompt, keys, agent_settings, options)
    from distributed import Semaphore, get_client

    try:
        client = get_client()
    except ValueError:
        raise UsageError(
            "ddf.aiforge needs a distributed Client (Client() or Client(LocalCluster())): "
            "the job's concurrency limit lives on its scheduler."
        ) from None
    threads = max(sum(client.nthreads().values()), 1)
    job = DaskJob(f"aiforge-agg-{uuid.uuid4().hex[:12]}", concurrency, max(concurrency // threads, 1))
    Semaphore(max_leases=concurrency, name=job.semaphore)
    return spec, job


def _partition_partials(part: pd.DataFrame, spec: AggPartitionSpec, job: DaskJob) -> pd.DataFrame:
    """One partial answer per group of ``part`` (``final=False``: it is folded with the other partitions'),
    with what the partition spent on its first row."""
    from aiforge.batch.embedded import stay_quiet
    from aiforge.dataframes.partition import process_agent
    from aiforge.semantic.agg.frames import by_groupby, grouped_texts, instruction_for, row_texts
    from aiforge.semantic.agg.reduce import reduce_groups

    stay_quiet()
    instruction = instruction_for(part, spec.prompt)
    texts = row_texts(part, instruction)
    if spec.by:
        groups = grouped_texts(by_groupby(part, list(spec.by)), texts)
        keys = groups.index[groups.observed].to_frame(index=False)
        group_texts = groups.texts
    else:
        keys = pd.DataFrame(index=range(1))
        group_texts = [[text for text in texts if text is not None]]
    with _leases(job, sum(map(len, group_texts))) as held:
        answers, report = reduce_groups(
            process_agent(spec.settings), instruction.text, group_texts, final=False, concurrency=held,
            options=spec.options,
        )
    frame = keys.assign(**{PARTIAL_COLUMN: pd.Series(answers, index=keys.index, dtype=object)})
    spent = [report.requests, report.total_tokens, report.total_cost, report.largest_request]
    for name, value in zip(_SPENT_COLUMNS, spent, strict=True):
        frame[name] = [float(value)] + [0.0] * (len(frame) - 1)
    return frame
