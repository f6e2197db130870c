"""One ``ddf.aiforge`` call's job on the scheduler: its name, its concurrency semaphore, its leases, its summary queue.

It needs a ``distributed.Client`` (a ``LocalCluster`` or a real cluster): the job's limits and its summary live on
the scheduler. Nothing here runs a scheduler, queue or worker pool of its own.

- Global concurrency: one ``distributed.Semaphore`` of ``concurrency`` leases per job. A running partition holds
  one lease, plus as many more as are free up to its share (``concurrency`` / worker threads), and runs at most that
  many requests at once; so the requests in flight across the cluster never exceed ``concurrency``.
- RPM / TPM: pacing is per process (``providers/pacing.py``), so a job's ``RPM=`` / ``TPM=`` are divided among the
  worker processes at submission (``divide_paced``): the workers' ceilings add up to the limit. Each worker also
  follows the server's remaining-count headers, which count every worker's requests against the key.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from aiforge.core.types import UsageError

JOB_ATTRIBUTE = "_aiforge_job"
"""Where a result of ``ddf.aiforge`` keeps its ``DaskJob`` (read by ``job_summary``)."""
PACED_SETTINGS = ("RPM", "TPM")

_Result = TypeVar("_Result")


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


def scheduler_client(what_lives_there: str) -> Any:
    """The running ``distributed.Client``, or a UsageError saying ``what_lives_there`` on its scheduler."""
    from distributed import get_client

    try:
        return get_client()
    except ValueError:
        raise UsageError(
            "ddf.aiforge needs a distributed Client (Client() or Client(LocalCluster())): "
            f"the job's {what_lives_there} on its scheduler."
        ) from None


def worker_threads(client: Any) -> int:
    """The threads running partitions across the cluster (at least 1)."""
    threads: int = max(sum(client.nthreads().values()), 1)
    return threads


def divide_paced(settings: dict[str, Any], client: Any) -> None:
    """``RPM=`` / ``TPM=`` of ``settings`` divided among the worker processes, in place."""
    processes = max(len(client.scheduler_info()["workers"]), 1)
    for name in list(settings):
        if name.upper() in PACED_SETTINGS and settings[name] is not None:
            settings[name] = max(settings[name] // processes, 1)


def new_job(prefix: str, concurrency: int, share: int, *, summary: bool = True) -> DaskJob:
    """A job made on the scheduler now, so it knows the limit before any partition asks for a lease."""
    from distributed import Queue, Semaphore

    job = DaskJob(f"{prefix}-{uuid.uuid4().hex[:12]}", concurrency, share)
    Semaphore(max_leases=concurrency, name=job.semaphore)
    if summary:
        Queue(job.queue)
    return job


@contextmanager
def leases(job: DaskJob, rows: int) -> Iterator[int]:
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


def with_job(result: _Result, job: DaskJob) -> _Result:
    """``result`` (a lazy Dask collection) marked with its job, for ``job_summary``."""
    setattr(result, JOB_ATTRIBUTE, job)
    return result
