"""Throughput: ``run_batch`` against raw ``AsyncOpenAI`` under a semaphore, in the same run.

1 000 items at concurrency 20 and 100, against a zero-latency and a 100 ms server (in a child
process, so the client measured has the GIL to itself). Target: aiforge's wall time at most
1.10 x the raw client's in every cell; at zero latency the wall time is the client's CPU per item,
so each side's CPU per item (this process's CPU time) is shown too.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bench import peers
from bench.batch import raw_async_batch
from bench.common import Row, ServerProcess, median

GROUP = "throughput"
ITEMS = 1000
LIMIT = 1.10


def _items(n: int) -> list[str]:
    return [f"Question {i}: what is {i} squared?" for i in range(n)]


def _aiforge(base_url: str, concurrency: int) -> Callable[[list[str]], int]:
    agent = peers.aiforge_agent(base_url)

    def run(inputs: list[str]) -> int:
        result = agent.run_batch(inputs, concurrency=concurrency, max_batch=len(inputs))
        if result.failed:
            raise RuntimeError(f"{len(result.failed)} items failed, e.g. {result.failed[0]!r}")
        return len(result.results)

    return run


def _raw(base_url: str, concurrency: int) -> Callable[[list[str]], int]:
    return raw_async_batch(base_url, concurrency)


def _walls(
    contenders: dict[str, Callable[[list[str]], int]], inputs: list[str], repeats: int
) -> tuple[dict[str, float], dict[str, float]]:
    """The median wall time and CPU time (this process: the client's) of each contender."""
    walls: dict[str, list[float]] = {name: [] for name in contenders}
    cpus: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeats):  # interleaved, so a load change hits both
        for name, run in contenders.items():
            started, cpu = time.perf_counter(), time.process_time()
            run(inputs)
            walls[name].append(time.perf_counter() - started)
            cpus[name].append(time.process_time() - cpu)
    return (
        {name: median(values) for name, values in walls.items()},
        {name: median(values) for name, values in cpus.items()},
    )


def run(quick: bool) -> list[Row]:
    repeats = 1 if quick else 3
    inputs = _items(ITEMS)
    rows: list[Row] = []
    for latency in (0.0, 0.1):
        with ServerProcess(latency=latency) as server:
            url = server.openai_base_url
            for concurrency in (20, 100):
                contenders = {"raw": _raw(url, concurrency), "aiforge": _aiforge(url, concurrency)}
                for run_once in contenders.values():  # warm-up: connections, imports, graph compile
                    run_once(inputs[:50])
                wall, cpu = _walls(contenders, inputs, repeats)
                ratio = wall["aiforge"] / wall["raw"]
                per_item = {name: f"{cpu[name] / ITEMS * 1000:.1f} ms CPU/item" for name in cpu}
                rows.append(
                    Row(
                        GROUP,
                        f"{ITEMS} items, concurrency {concurrency}, {latency * 1000:.0f} ms server",
                        f"{wall['aiforge']:.2f} s ({ITEMS / wall['aiforge']:.0f} items/s, {per_item['aiforge']})",
                        f"raw AsyncOpenAI + semaphore: {wall['raw']:.2f} s ({per_item['raw']})",
                        ratio,
                        f"<= {LIMIT:.2f}x",
                        ratio <= LIMIT,
                    )
                )
    return rows
