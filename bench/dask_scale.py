"""Dask: what going distributed buys (the embedded model on 2 workers) and what it costs (a fast server).

- Scaling: the same 200 rows through the embedded model on a LocalCluster of 1 worker process, then of 2
  (one llama.cpp thread each). On a 2-core machine 2x is the physical limit.
- Overhead: 10 000 rows in 20 partitions against the zero-latency fake server on 2 workers, against
  ``run_batch`` over the same rows in this process (both at concurrency 20): the cost of the scheduler,
  serialising partitions and the global semaphore.

Each cluster is warmed up first (imports, the model loaded on every worker), so only the batch is timed.
"""

from __future__ import annotations

import os
import time
from typing import Any

from bench.common import API_KEY, OPENAI_MODEL, Row, ServerProcess

GROUP = "dask"
CONCURRENCY = 20
EMBEDDED = {"provider": "local", "LOCAL_THREADS": 1, "MAX_TOKENS": 16, "cache": False}
SCALING_TARGET = 1.5


def frame(count: int) -> Any:
    import pandas as pd

    return pd.DataFrame({"topic": [f"item {i}: a fact about the number {i}" for i in range(count)]})


def cluster(workers: int) -> Any:
    from distributed import Client, LocalCluster

    local = LocalCluster(
        processes=True, n_workers=workers, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
    )
    return local, Client(local)


def timed_map(rows: Any, partitions: int, concurrency: int, **settings: Any) -> float:
    import dask.dataframe as dd

    import aiforge  # noqa: F401 - registers ddf.aiforge

    result = dd.from_pandas(rows, npartitions=partitions).aiforge.map(
        "One short sentence on {topic}.", concurrency=concurrency, **settings
    )
    started = time.perf_counter()
    computed = result.compute()
    wall = time.perf_counter() - started
    if computed["response"].isna().any():
        raise RuntimeError(f"{int(computed['response'].isna().sum())} rows failed")
    return wall


def scaling(quick: bool) -> Row:
    rows = frame(40 if quick else 200)
    walls = {}
    for workers in (1, 2):
        local, client = cluster(workers)
        try:
            timed_map(frame(2 * workers), 2 * workers, 2, **EMBEDDED)  # loads the model on every worker
            walls[workers] = timed_map(rows, 2 * workers * 2, 2, **EMBEDDED)
        finally:
            client.close()
            local.close()
    ratio = walls[1] / walls[2]
    return Row(
        GROUP,
        f"embedded model, {len(rows)} rows: 2 workers vs 1 (speed-up)",
        f"2 workers: {walls[2]:.1f} s",
        f"1 worker: {walls[1]:.1f} s",
        ratio,
        f">= {SCALING_TARGET}x (2 cores: 2x is the limit)",
        ratio >= SCALING_TARGET,
    )


def overhead(quick: bool) -> Row:
    from aiforge import ChatAgent

    count = 2000 if quick else 10_000
    rows = frame(count)
    settings = {"provider": "openai", "model": OPENAI_MODEL, "cache": False, "MAX_RETRIES": 0}
    with ServerProcess() as server:
        os.environ["OPENAI_API_KEY"] = API_KEY  # workers read the key from their environment
        os.environ["OPENAI_BASE_URL"] = server.openai_base_url
        agent = ChatAgent(memory="none", **{k: v for k, v in settings.items() if k != "cache"})
        agent.run_batch(rows.head(CONCURRENCY), CONCURRENCY, prompt="One short sentence on {topic}.", cache=False)
        started = time.perf_counter()
        agent.run_batch(rows, CONCURRENCY, count, prompt="One short sentence on {topic}.", cache=False)
        local_wall = time.perf_counter() - started
        local, client = cluster(2)
        try:
            timed_map(frame(40), 2, CONCURRENCY, **settings)
            cluster_wall = timed_map(rows, 20, CONCURRENCY, **settings)
        finally:
            client.close()
            local.close()
    return Row(
        GROUP,
        f"{count} rows, zero-latency server: 2 Dask workers vs run_batch in one process",
        f"{cluster_wall:.1f} s ({count / cluster_wall:.0f} rows/s)",
        f"{local_wall:.1f} s ({count / local_wall:.0f} rows/s)",
        cluster_wall / local_wall,
        note="the ratio is the cost of going distributed when the server is not the bottleneck",
    )


def run(quick: bool) -> list[Row]:
    return [scaling(quick), overhead(quick)]


if __name__ == "__main__":
    for row in run(quick=False):
        print(row)
