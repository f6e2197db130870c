"""``ddf.aiforge``: the pandas accessor's operations on a Dask DataFrame (docs/guides/dask.md).

Importing this package registers ``ddf.aiforge`` (``dataframes/hook.py`` imports it when ``dask.dataframe`` is
imported; ``import aiforge`` never imports Dask). One idea a module:

- ``accessor.py``: the accessor class Dask registers, each method a signature and a call;
- ``rows.py``: what each partition runs for map, classify, filter, extract and embed (lazy ``map_partitions``);
- ``agg.py``: ``agg``, each partition's partial answers folded on the client, computed now;
- ``dedup.py``: ``dedup``, embeddings per partition, the blocking and confirmation on the client;
- ``job.py``: one call's job on the scheduler: its concurrency semaphore and leases, ``RPM=`` / ``TPM=`` divided;
- ``summary.py``: each partition's report to the job's queue, ``job_summary`` gathering them on the client;
- ``progress.py``: ``compute``, one progress bar on the client over the partitions.

The engine-neutral part, a pandas partition and a picklable spec in, its new columns out (what Ray Data and Spark
call too), is ``dataframes/partition.py``.
"""

from __future__ import annotations

from aiforge.dataframes.dask.accessor import DaskOperations
from aiforge.dataframes.dask.progress import compute
from aiforge.dataframes.dask.summary import JobSummary, job_summary

__all__ = ["DaskOperations", "JobSummary", "compute", "job_summary"]
