"""Batch: 200 and 1 000 items at concurrency 20 against a server that takes 100 ms per request.

The ideal wall time is items / concurrency x latency (1.0 s and 5.0 s): what is left above
it is the library's own time. Peers: LangChain's ``ChatOpenAI.batch(max_concurrency=20)``, and
raw ``AsyncOpenAI`` under a semaphore of 20 (what the hardware allows).

Cache hits: the same 1 000 items again with a response cache in a SQLite file (every item a hit, no
request): items per second through ``run_batch``, target >= 5 000.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import peers
from bench.common import OPENAI_MODEL, SYSTEM, Row, ServerProcess, Stat

GROUP = "batch"
LATENCY = 0.1
CONCURRENCY = 20
LIMIT = 1.10
CACHE_HITS_PER_S = 5000


def items(n: int) -> list[str]:
    return [f"Question {i}: what is {i} squared?" for i in range(n)]


def aiforge_batch(base_url: str) -> Callable[[list[str]], int]:
    agent = peers.aiforge_agent(base_url)

    def run(inputs: list[str]) -> int:
        result = agent.run_batch(inputs, concurrency=CONCURRENCY, max_batch=len(inputs))
        if result.failed:
            raise RuntimeError(f"{len(result.failed)} items failed, e.g. {result.failed[0]!r}")
        return len(result.results)

    return run


def langchain_batch(base_url: str) -> Callable[[list[str]], int]:
    llm = peers.chat_openai(base_url)

    def run(inputs: list[str]) -> int:
        out = llm.batch([[("system", SYSTEM), ("human", q)] for q in inputs], config={"max_concurrency": CONCURRENCY})
        return len(out)

    return run


def raw_async_batch(base_url: str, concurrency: int = CONCURRENCY) -> Callable[[list[str]], int]:
    """Raw ``AsyncOpenAI`` under a semaphore of ``concurrency``: what the hardware allows."""
    import openai

    loop = peers.persistent_loop()
    client = openai.AsyncOpenAI(base_url=base_url, api_key=peers.API_KEY, max_retries=0)

    async def gather(inputs: list[str]) -> int:
        limit = asyncio.Semaphore(concurrency)

        async def one(q: str) -> Any:
            async with limit:
                messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}]
                return await client.chat.completions.create(model=OPENAI_MODEL, messages=messages)

        return len(await asyncio.gather(*(one(q) for q in inputs)))

    return lambda inputs: loop.run_until_complete(gather(inputs))


def run(quick: bool) -> list[Row]:
    repeats = 1 if quick else 3
    rows: list[Row] = []
    with ServerProcess(latency=LATENCY) as server:
        url = server.openai_base_url
        contenders: dict[str, Callable[[list[str]], int]] = {
            "raw AsyncOpenAI": raw_async_batch(url),
            "langchain": langchain_batch(url),
        }
        errors: dict[str, str] = {}
        try:
            contenders["aiforge"] = aiforge_batch(url)
        except Exception as exc:  # noqa: BLE001
            errors["aiforge"] = f"{type(exc).__name__}: {exc}"
        for name, batch in contenders.items():  # warm connections and imports
            try:
                batch(items(CONCURRENCY))
            except Exception as exc:  # noqa: BLE001
                errors[name] = f"{type(exc).__name__}: {exc}"[:300]
        for n in (200, 1000):
            inputs = items(n)
            ideal = n / CONCURRENCY * LATENCY
            walls: dict[str, list[float]] = {name: [] for name in contenders if name not in errors}
            for r in range(repeats):
                names = list(walls)
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    if name in errors:
                        continue
                    try:
                        t0 = time.perf_counter()
                        done = contenders[name](inputs)
                        walls[name].append(time.perf_counter() - t0)
                    except Exception as exc:  # noqa: BLE001
                        errors[name] = f"{type(exc).__name__}: {exc}"[:300]
                        continue
                    if done != n:
                        errors[name] = f"{done} of {n} results"
            rows.append(_row(n, ideal, walls, errors))
            rows.append(
                Row(
                    GROUP,
                    f"{n} items: raw AsyncOpenAI + semaphore (what the machine allows)",
                    _wall(walls.get("raw AsyncOpenAI"), ideal),
                    f"ideal: {ideal:.2f} s",
                )
            )
        rows.append(cache_hits(url, repeats))
    return rows


def cache_hits(base_url: str, repeats: int) -> Row:
    """1 000 items answered from a response cache file: run_batch's own cost per item, no request made."""
    label = "1000 items, all cache hits (SQLite file): items/s through run_batch"
    target = f">= {CACHE_HITS_PER_S}"
    with tempfile.TemporaryDirectory() as folder:
        agent = peers.aiforge_agent(base_url, CACHE=str(Path(folder) / "cache.sqlite"))
        inputs = items(1000)
        try:
            agent.run_batch(inputs, concurrency=100, max_batch=len(inputs))  # fills the cache
            rates = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                result = agent.run_batch(inputs, concurrency=CONCURRENCY, max_batch=len(inputs))
                rates.append(len(inputs) / (time.perf_counter() - t0))
                if result.cached != len(inputs):
                    raise RuntimeError(f"{result.cached} of {len(inputs)} were hits")
        except Exception as exc:  # noqa: BLE001
            return Row(GROUP, label, f"error: {type(exc).__name__}: {exc}"[:300], target=target, passed=False)
    rate = Stat.of(rates).median
    return Row(GROUP, label, f"{rate:,.0f} items/s", target=target, passed=rate >= CACHE_HITS_PER_S)


def _wall(samples: list[float] | None, ideal: float) -> str:
    if not samples:
        return "n/a"
    s = Stat.of(samples)
    return f"{s.fmt('s', 1, 3)} = {s.median / ideal:.2f}x ideal"


def _row(n: int, ideal: float, walls: dict[str, list[float]], errors: dict[str, str]) -> Row:
    label = f"{n} items, concurrency {CONCURRENCY}, {LATENCY * 1e3:.0f} ms latency: wall / ideal"
    target = f"<= {LIMIT:.2f}x"
    if "aiforge" in errors or not walls.get("aiforge"):
        return Row(GROUP, label, f"error: {errors.get('aiforge', 'not measured')}", target=target, passed=False)
    ours = Stat.of(walls["aiforge"]).median / ideal
    peer = (
        f"langchain .batch: {_wall(walls.get('langchain'), ideal)}"
        if "langchain" not in errors
        else (f"langchain error: {errors['langchain']}")
    )
    return Row(GROUP, label, _wall(walls["aiforge"], ideal), peer, ours, target, ours <= LIMIT)
