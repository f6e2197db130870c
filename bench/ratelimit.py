"""Rate limits: a batch of 10 x N items against a server allowing N requests per window.

The server's bucket starts full, so the limit allows the batch 9 windows; target: the batch
finishes within 1.15 x that with at most 2 % of its requests answered 429. The window is shrunk
to 1 s on both sides (``pacing.WINDOW`` and the server's ``rate_window``): the same code path.
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


def run(quick: bool) -> list[Row]:
    from aiforge.providers import pacing

    saved = pacing.WINDOW
    try:
        return [_cell("openai", N), _cell("anthropic", N), _cell("openai", None)]
    finally:
        pacing.WINDOW = saved
