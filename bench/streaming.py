"""Streaming: time to first chunk and total time against raw SDK streaming, then chunk-by-chunk delivery.

1. A zero-latency server streams a 200-character answer in 4-character deltas (50 chunks).
2. A server that waits ``CHUNK_DELAY`` between SSE events: every chunk must reach the caller
   when the raw SDK sees it, not later in a batch. For chunk i, lag_i = (arrival through
   aiforge) - (arrival through the raw SDK), both from the start of the call; the worst
   chunk's median lag must stay under half a chunk interval, and aiforge must hand over as
   many chunks as the raw SDK.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass

from bench import peers
from bench.common import (
    OPENAI_MODEL,
    PROMPT,
    SYSTEM,
    Contender,
    Row,
    ServerProcess,
    Stat,
    error_rows,
    failing,
    first_error,
    info_row,
    interleave,
    median,
    stat_text,
)

GROUP = "streaming"
ANSWER = ("Streaming keeps the reader busy while the model writes. " * 4)[:200]
DELAYED_ANSWER = ANSWER[:80]
CHUNK_DELAY = 0.02
FIRST_CHUNK_BUDGET = 0.002


@dataclass
class Streamed:
    """One streamed turn as the caller saw it: arrival time of every text chunk since the call began."""

    times: list[float]
    text: str

    @property
    def first(self) -> float:
        return self.times[0] if self.times else float("nan")


def collect(pieces: Iterable[str], started: float) -> Streamed:
    times, parts = [], []
    for piece in pieces:
        times.append(time.perf_counter() - started)
        parts.append(piece)
    return Streamed(times, "".join(parts))


async def acollect(pieces: AsyncIterator[str], started: float) -> Streamed:
    times, parts = [], []
    async for piece in pieces:
        times.append(time.perf_counter() - started)
        parts.append(piece)
    return Streamed(times, "".join(parts))


def _request() -> dict:
    return {
        "model": OPENAI_MODEL,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}],
        "stream": True,
        "stream_options": {"include_usage": True},  # as aiforge asks, for the turn's cost
    }


def raw_stream(base_url: str) -> Callable[[], Streamed]:
    client = peers.raw_openai(base_url)

    def deltas() -> Iterable[str]:
        with client.chat.completions.create(**_request()) as stream:  # closes the response, as documented
            for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    yield chunk.choices[0].delta.content

    return lambda: collect(deltas(), time.perf_counter())


def raw_async_stream(base_url: str) -> Callable[[], Streamed]:
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key=peers.API_KEY, max_retries=0)
    loop = peers.persistent_loop()

    async def deltas() -> AsyncIterator[str]:
        async with await client.chat.completions.create(**_request()) as stream:
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    yield chunk.choices[0].delta.content

    return lambda: loop.run_until_complete(acollect(deltas(), time.perf_counter()))


def contenders(server: ServerProcess, expected: str, *, with_async: bool) -> list[Contender]:
    url = server.openai_base_url

    def check(result: Streamed) -> bool:
        return result.text == expected

    def first(result: Streamed) -> dict[str, float]:
        return {"first": result.first}

    out = [Contender("raw openai", raw_stream(url), check=check, metrics=first)]
    if with_async:
        out.append(Contender("raw openai async", raw_async_stream(url), check=check, metrics=first))
    try:
        agent = peers.aiforge_agent(url)
    except Exception as exc:  # noqa: BLE001 - aiforge not ready: the peers are still measured
        return [*out, Contender("aiforge", failing(exc))]
    out.append(
        Contender(
            "aiforge",
            lambda: collect(agent.run_stream(PROMPT), time.perf_counter()),
            before=agent.reset,
            check=check,
            metrics=first,
        )
    )
    if with_async:
        loop = peers.persistent_loop()
        out.append(
            Contender(
                "aiforge async",
                lambda: loop.run_until_complete(acollect(agent.chat_stream(PROMPT), time.perf_counter())),
                before=agent.reset,
                check=check,
                metrics=first,
            )
        )
    return out


def first_chunk_rows(quick: bool) -> list[Row]:
    with ServerProcess(reply=ANSWER) as server:
        t = interleave(contenders(server, ANSWER, with_async=True), rounds=3 if quick else 12, calls=8 if quick else 15)
    g = GROUP
    label = "time to first chunk, minus raw SDK's (run_stream)"
    budget = f"<= {FIRST_CHUNK_BUDGET * 1e3:.1f} ms"
    if t.ok("aiforge:first", "raw openai:first"):
        extra = t.diff("aiforge:first", "raw openai:first")
        first = Row(
            g,
            label,
            extra.fmt(),
            f"raw SDK first chunk: {stat_text(t, 'raw openai:first')}",
            extra.median / FIRST_CHUNK_BUDGET,
            budget,
            extra.median <= FIRST_CHUNK_BUDGET,
        )
    else:
        first = Row(g, label, f"error: {first_error(t, 'aiforge', 'raw openai')}", target=budget, passed=False)
    total = Row(g, "total time of a 50-chunk stream", stat_text(t, "aiforge"), f"raw SDK: {stat_text(t, 'raw openai')}")
    if t.ok("aiforge", "raw openai"):
        total.ratio = t.stat("aiforge").median / t.stat("raw openai").median
    return [
        first,
        total,
        info_row(
            t,
            g,
            "async: first chunk minus AsyncOpenAI's (chat_stream)",
            "aiforge async:first",
            "raw openai async:first",
            peer=f"AsyncOpenAI first chunk: {stat_text(t, 'raw openai async:first')}",
        ),
        *error_rows(t, g),
    ]


def delivery_rows(quick: bool) -> list[Row]:
    rounds = 3 if quick else 8
    with ServerProcess(reply=DELAYED_ANSWER, chunk_delay=CHUNK_DELAY) as server:
        built = {c.name: c for c in contenders(server, DELAYED_ANSWER, with_async=False)}
        runs: dict[str, list[Streamed]] = {name: [] for name in built}
        errors: dict[str, str] = {}
        for r in range(rounds + 1):  # round 0 warms up connections and imports
            for name, c in built.items():
                if name in errors:
                    continue
                try:
                    if c.before:
                        c.before()
                    result = c.call()
                    if r and c.check and not c.check(result):
                        raise AssertionError(f"unexpected stream text {result.text!r}")
                except Exception as exc:  # noqa: BLE001
                    errors[name] = f"{type(exc).__name__}: {exc}"[:300]
                    continue
                if r:
                    runs[name].append(result)
    label = f"chunks delivered as they arrive ({CHUNK_DELAY * 1e3:.0f} ms apart): worst chunk's lag"
    budget = CHUNK_DELAY / 2
    target = f"<= {budget * 1e3:.0f} ms"
    if errors or not runs.get("aiforge") or not runs.get("raw openai"):
        return [Row(GROUP, label, f"error: {errors.get('aiforge') or errors}", target=target, passed=False)]
    ours, raw = runs["aiforge"], runs["raw openai"]
    counts, raw_counts = {len(s.times) for s in ours}, {len(s.times) for s in raw}
    n = min(min(counts), min(raw_counts))
    lags = [median([a.times[i] - b.times[i] for a, b in zip(ours, raw, strict=False)]) for i in range(n)]
    worst = max(lags)
    gaps = [b - a for s in ours for a, b in zip(s.times, s.times[1:], strict=False)]
    same_count = counts == raw_counts
    note = (
        f"aiforge delivered {sorted(counts)} chunks per stream, the raw SDK {sorted(raw_counts)}; "
        f"per-chunk median lag first/last: {lags[0] * 1e3:.2f}/{lags[-1] * 1e3:.2f} ms; "
        f"aiforge inter-chunk gap {Stat.of(gaps).fmt()} (server: {CHUNK_DELAY * 1e3:.0f} ms)"
    )
    return [
        Row(
            GROUP,
            label,
            f"{worst * 1e3:.2f} ms ({n} chunks, {len(ours)} streams)",
            f"raw SDK chunks per stream: {sorted(raw_counts)}",
            worst / budget,
            target,
            same_count and worst <= budget,
            note,
        )
    ]


def run(quick: bool) -> list[Row]:
    return first_chunk_rows(quick) + delivery_rows(quick)
