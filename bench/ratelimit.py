"""Rate limits: a batch of 10 x N items against a server allowing N requests per window.

The server's bucket starts full, so the limit allows the batch 9 windows; target: the batch
finishes within 1.15 x that with at most 2 % of its requests answered 429. The window is shrunk
to 1 s on both sides (``pacing.WINDOW`` and the server's ``rate_window``): the same code path.

And a server that smooths its limit: 600 a minute but only 10 at once (``burst=10``), 300 rows at concurrency 20
on a real minute (the burst is in seconds, so the window is not shrunk: about 30 s a cell). Targets: at most 2 %
429s with ``RPM=600`` and 5 % with the limit learned from headers, at >= 90 % of the limit's rows a minute.
"""

from __future__ import annotations

from bench.common import Row
from fakellm import LLMServer

GROUP = "ratelimit"
N = 40
WINDOW = 1.0
LIMIT = 1.15


def _cell(protocol: str, rpm_setting: int | None) -> Row:
    from aiforge import ChatAgent
    from aiforge.providers import pacing

    pacing.WINDOW = WINDOW
    prefix = protocol.upper()

    def make(url: str) -> ChatAgent:
        return ChatAgent(PROVIDER=protocol, **{f"{prefix}_API_KEY": "sk-bench", f"{prefix}_BASE_URL": url},
                         RPM=rpm_setting, PROGRESS_BAR=False)

    # The SDK's import and first client (1.5 s for anthropic, cold) are not the limit's time: warm up on
    # another server (another endpoint: its own pacer, and the limited server's bucket stays full).
    with LLMServer(record=False) as warm:
        make(warm.openai_base_url if protocol == "openai" else warm.anthropic_base_url).chat("warm up")
    with LLMServer(rpm=N, rate_window=WINDOW, record=False) as server:
        agent = make(server.openai_base_url if protocol == "openai" else server.anthropic_base_url)
        result = agent.run_batch([f"item {i}" for i in range(10 * N)], concurrency=20, max_batch=10 * N)
        allowed = 9 * WINDOW
        ratio = result.wall_time_s / allowed
        share = server.rate_limited / max(server.request_count, 1)
    how = f"RPM={rpm_setting}" if rpm_setting else "RPM unset (headers only)"
    return Row(
        GROUP,
        f"{protocol}: {10 * N} items at {N}/window, {how}",
        f"{result.wall_time_s:.2f} s, {server.rate_limited} x 429 ({share:.1%}), {len(result.failed)} failed",
        f"limit allows {allowed:.1f} s",
        ratio,
        f"<= {LIMIT:.2f}x, <= 2 % 429",
        ratio <= LIMIT and share <= 0.02 and not result.failed,
    )


SMOOTHED_RPM = 600
SMOOTHED_BURST = 10
SMOOTHED_ROWS = 300


def _smoothed_cell(rpm_setting: int | None) -> Row:
    import time

    from aiforge import ChatAgent
    from aiforge.providers import pacing

    pacing.WINDOW = 60.0

    def make(url: str) -> ChatAgent:
        return ChatAgent(PROVIDER="openai", OPENAI_API_KEY="sk-bench", OPENAI_BASE_URL=url, RPM=rpm_setting,
                         PROGRESS_BAR=False)

    with LLMServer(record=False) as warm:
        make(warm.openai_base_url).chat("warm up")
    with LLMServer(rpm=SMOOTHED_RPM, burst=SMOOTHED_BURST, rate_window=60.0, record=False) as server:
        started = time.perf_counter()
        result = make(server.openai_base_url).run_batch(
            [f"item {i}" for i in range(SMOOTHED_ROWS)], concurrency=20, max_batch=SMOOTHED_ROWS
        )
        wall = time.perf_counter() - started
        share = server.rate_limited / max(server.request_count, 1)
        refused = f"{server.rate_limited} of {server.request_count} requests 429 ({share:.1%})"
    per_minute = SMOOTHED_ROWS / wall * 60
    most = 0.02 if rpm_setting else 0.05
    how = f"RPM={rpm_setting}" if rpm_setting else "RPM unset (headers only)"
    return Row(
        GROUP,
        f"openai: {SMOOTHED_ROWS} rows at {SMOOTHED_RPM}/min, burst {SMOOTHED_BURST}, concurrency 20, {how}",
        f"{per_minute:.0f} rows/min, {refused}, {len(result.failed)} failed",
        f"limit {SMOOTHED_RPM}/min",
        per_minute / SMOOTHED_RPM,
        f">= 0.90x, <= {most:.0%} 429",
        per_minute >= 0.9 * SMOOTHED_RPM and share <= most and not result.failed,
    )


def run(quick: bool) -> list[Row]:
    from aiforge.providers import pacing

    saved = pacing.WINDOW
    try:
        rows = [_cell("openai", N), _cell("anthropic", N), _cell("openai", None)]
        if not quick:
            rows += [_smoothed_cell(SMOOTHED_RPM), _smoothed_cell(None)]
        return rows
    finally:
        pacing.WINDOW = saved
