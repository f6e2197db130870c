"""What each partition runs for ``ddf.aiforge``'s row operations (map, classify, filter, extract, embed), lazily.

Each operation is one ``map_partitions`` with the right ``meta``: a partition's rows go through
``partition_columns`` (``dataframes/partition.py``) under the job's leases, and its report goes to the job's queue.

- Keys: a key never travels in the graph (a spec with one is a ``ValueError``). Workers read ``OPENAI_API_KEY`` /
  ``ANTHROPIC_API_KEY`` / ``AIFORGE_*`` from their own environment: a ``LocalCluster`` inherits the client's; on a
  cluster set them where workers start (a Kubernetes secret, the job script).
- Faults: a worker killed mid-partition makes Dask run the partition again elsewhere; every row is in the output
  exactly once. With ``checkpoint=FILE`` (each partition in a file of its own beside it, on a filesystem every
  worker sees) or a shared ``cache=``, the rows answered before the kill are not asked again.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from aiforge.dataframes.accessor import ATTRS_KEY
from aiforge.dataframes.dask.job import DaskJob, divide_paced, leases, new_job, scheduler_client, worker_threads
from aiforge.dataframes.dask.summary import report_batch, report_embeddings
from aiforge.dataframes.partition import KEEP_COLUMN, PartitionSpec, partition_columns, with_concurrency

_LIMIT_AND_SUMMARY = "concurrency limit and summary live"


def row_job(operation: Any, concurrency: int, settings: dict[str, Any], **what: Any) -> tuple[PartitionSpec, DaskJob]:
    """The partitions' spec (``RPM=`` / ``TPM=`` divided among the workers) and the job on the scheduler."""
    client = scheduler_client(_LIMIT_AND_SUMMARY)
    threads = worker_threads(client)
    divide_paced(settings, client)
    spec = PartitionSpec.of(operation, concurrency=concurrency, **what, **settings)
    if operation != "map" or what.get("output") is not None:
        _warn_here_if_embedded(spec)
    return spec, new_job("aiforge", concurrency, max(concurrency // threads, 1))


def embedding_job(concurrency: int) -> DaskJob:
    """An embed job's semaphore and summary queue on the scheduler; one lease a partition (one request at a time)."""
    scheduler_client(_LIMIT_AND_SUMMARY)
    return new_job("aiforge", concurrency, 1)


def _warn_here_if_embedded(spec: PartitionSpec) -> None:
    """A typed job on the embedded model warns once, on the client; its workers stay quiet (``job_columns``)."""
    from aiforge.batch.embedded import warn_embedded_once
    from aiforge.core.settings import AIForgeSettings, load_settings
    from aiforge.providers.facts import provider_facts

    fields = AIForgeSettings.model_fields
    settings = load_settings(**{k.upper(): v for k, v in spec.settings.items() if k.upper() in fields})
    if provider_facts(settings).embedded:
        warn_embedded_once()


def job_columns(part: pd.DataFrame, spec: PartitionSpec, job: DaskJob) -> pd.DataFrame:
    """On a worker: the new columns of ``part`` under the job's leases; its report to the job's queue."""
    from aiforge.batch.embedded import stay_quiet

    stay_quiet()  # the client warned once for every worker
    if len(part) == 0:
        return spec.empty_columns(part.index)
    with leases(job, len(part)) as held:
        columns = partition_columns(part, with_concurrency(spec, held))
    report_batch(part, columns.attrs[ATTRS_KEY], job)
    columns.attrs.pop(ATTRS_KEY, None)
    return columns


def kept_rows(part: pd.DataFrame, spec: PartitionSpec, job: DaskJob) -> pd.DataFrame:
    """On a worker: the rows of ``part`` the model answered true for (``filter``)."""
    return part[job_columns(part, spec, job)[KEEP_COLUMN].to_numpy(dtype=bool)]


def embedded_partition(
    part: pd.DataFrame, column: str, settings: dict[str, Any], options: dict[str, Any], job: DaskJob
) -> pd.Series:
    """On a worker: the vectors of ``part[column]``, one request at a time under one lease; the cost to the queue."""
    from aiforge.dataframes.partition import process_agent
    from aiforge.semantic.embed_column import embedding_name, embedding_series

    if len(part) == 0:
        return pd.Series([], dtype=object, name=embedding_name(column), index=part.index)
    with leases(job, 1):
        vectors = embedding_series(part[column], process_agent(settings), concurrency=1, **options)
    report_embeddings(part, vectors.attrs.pop(ATTRS_KEY), job)
    return vectors
