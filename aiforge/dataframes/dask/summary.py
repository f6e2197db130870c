"""A Dask job's summary: each partition sends its costs, tokens and failures to the job's ``distributed.Queue``;
after ``compute()``, ``job_summary(result)`` gathers them on the client into one ``JobSummary``, whose ``saved`` adds
up the partitions' ``BatchResult.saved`` (rows are deduplicated within a partition, not across partitions).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiforge.batch.savings import Savings
from aiforge.core.report import OperationReport
from aiforge.core.types import UsageError
from aiforge.dataframes.dask.job import JOB_ATTRIBUTE, DaskJob
from aiforge.dataframes.partition import partition_key

if TYPE_CHECKING:
    import pandas as pd

    from aiforge.batch.results import BatchResult
    from aiforge.semantic.embeddings import EmbeddingReport


@dataclass(repr=False)
class JobSummary(OperationReport):
    """The costs and failures of a whole Dask job, gathered from its partitions after ``compute()``: an
    ``OperationReport`` (``core.report``)."""

    title = "Dask job"

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
    saved: Savings = field(default_factory=Savings, repr=False)
    """What the job did not spend against one request per row: the partitions' ``saved`` added up."""


def report_batch(part: pd.DataFrame, batch: BatchResult, job: DaskJob) -> None:
    """On a worker: the partition's ``BatchResult`` to the job's queue."""
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
    _put(job, report)


def report_embeddings(part: pd.DataFrame, run: EmbeddingReport, job: DaskJob) -> None:
    """On a worker: the partition's ``EmbeddingReport`` to the job's queue."""
    report = {
        "partition": partition_key(part),
        "rows": len(part),
        "failed": [],
        "cost": run.total_cost,
        "tokens": run.total_tokens,
        "requests": run.requests,
        "cached": run.cached,
        "saved": _savings_report(Savings()),
    }
    _put(job, report)


def _put(job: DaskJob, report: dict[str, Any]) -> None:
    from distributed import Queue

    Queue(job.queue).put(report)


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


def _savings_report(saved: Savings) -> list[Any]:
    """``saved`` as plain lists and dicts, which the scheduler's queue carries without pickling."""

    def numbers(part: Savings) -> list[Any]:
        return [part.requests, part.input_tokens, part.output_tokens, part.dollars]

    return [*numbers(saved), saved.naive_requests, {name: numbers(part) for name, part in saved.by_source.items()}]


def _savings_from_report(report: list[Any]) -> Savings:
    requests, input_tokens, output_tokens, dollars, naive, sources = report
    parts = {name: Savings(*part) for name, part in sources.items()}
    return Savings(requests, input_tokens, output_tokens, dollars, naive, parts)
