"""Cost group measure: Anthropic prompt caching, from the usage the fake server reports and the real price table.

``prompt_cache_savings``: 200 rows with a 1,500-token shared system prompt on claude-sonnet-4-5 (its minimum
  cacheable prefix is 1,024 tokens), ``run_batch`` at concurrency 10 against a server taking 20 ms a request,
  with ``PROMPT_CACHE=auto`` and ``off``. The fake server bills cache writes and reads as the Messages API does
  (``fakellm.prompt_cache``): the first wave of concurrent requests all write the prefix (none of them can read
  what the others have not finished writing), the rest read it.
"""

from __future__ import annotations

from bench.common import Row
from fakellm import LLMServer, Reply

GROUP = "cost"

CACHE_MODEL = "claude-sonnet-4-5"
CACHE_ROWS = 200
CACHE_CONCURRENCY = 10
CACHE_LATENCY = 0.02
CACHE_RATIO_TARGET = 0.30
_RULES = (
    "Label the sentiment of one customer review of a kitchen appliance. ",
    "Answer with exactly one word: positive, negative or mixed. ",
    "A review that praises one part and blames another is mixed. ",
    "Delivery complaints count as negative only when the product itself is not described. ",
    "Sarcasm counts as negative. ",
)
SHARED_PROMPT = "".join(_RULES * 24)[:6_000]
"""1,500 tokens at core.tokens' 4 characters a token."""


def _batch_cost(server: LLMServer, prompt_cache: str) -> tuple[float, int, int]:
    """``(total cost, rows that wrote the cache, rows that read it)`` of the batch with ``PROMPT_CACHE``."""
    from aiforge import ChatAgent

    server.prompt_cache.clear()
    agent = ChatAgent(
        provider="anthropic", ANTHROPIC_API_KEY="sk-bench", ANTHROPIC_BASE_URL=server.anthropic_base_url,
        MODEL=CACHE_MODEL, PROMPT_CACHE=prompt_cache, PROGRESS_BAR=False, system_prompt=SHARED_PROMPT,
    )
    rows = [f"Review {i}: the kettle boils fast but the lid sticks." for i in range(CACHE_ROWS)]
    result = agent.run_batch(rows, concurrency=CACHE_CONCURRENCY, max_batch=CACHE_ROWS)
    if result.failed:
        raise RuntimeError(f"{len(result.failed)} rows failed, e.g. {result.failed[0]!r}")
    records = agent.cost_tracker.records
    writes = sum(1 for r in records if r.cache_write_tokens)
    reads = sum(1 for r in records if r.cached_input_tokens)
    return result.total_cost, writes, reads


def prompt_cache_savings(quick: bool) -> list[Row]:
    """Dollars for 200 rows sharing a 1,500-token system prompt, with Anthropic prompt caching and without."""
    with LLMServer(latency=CACHE_LATENCY, record=False, default=lambda _request: Reply(text="mixed")) as server:
        cached, writes, reads = _batch_cost(server, "auto")
        plain, _, _ = _batch_cost(server, "off")
    ratio = cached / plain
    return [
        Row(
            GROUP,
            f"{CACHE_ROWS} rows, 1,500-token shared system prompt, {CACHE_MODEL}: with prompt caching vs without",
            f"${cached:.4f} ({writes} cache writes, {reads} reads)",
            f"PROMPT_CACHE=off: ${plain:.4f}",
            ratio,
            f"<= {CACHE_RATIO_TARGET:.2f}x",
            ratio <= CACHE_RATIO_TARGET,
            note=(
                f"concurrency {CACHE_CONCURRENCY}, {CACHE_LATENCY * 1000:.0f} ms a request; list prices $3 input, "
                "$3.75 cache write, $0.30 cache read, $15 output per 1M tokens; one-word replies"
            ),
        )
    ]
