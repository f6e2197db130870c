"""Semantic group: ``df.aiforge.agg`` over 10 000 synthetic reviews, at three context windows (issue 25).

Through the real openai SDK against the in-process fake server, one ``agg`` call per ``CONTEXT_WINDOW`` (8 192,
32 000 and 128 000, gpt-4o-mini's): the chunks of each level, the requests and tokens (the server's own count,
characters / 4 of the messages, as it bills them) against the tokens of the rows alone, and the largest request
the server received (its input tokens plus the ``max_completion_tokens`` reserved for the answer) against the
window. The fake model answers every chunk with a partial answer of ~230 tokens (``MAX_TOKENS=300``) that counts
the rows it covers, so the final answer is right only if every row was read exactly once on the way up; what it
measures is the shape and the cost of the tree, not a model's summary.
"""

from __future__ import annotations

import re
from typing import Any

from bench.common import API_KEY, OPENAI_MODEL, Row

GROUP = "semantic"
ROWS = 10_000
QUICK_ROWS = 2_000
WINDOWS = (8_192, 32_000, 128_000)
MAX_TOKENS = 300
PROMPT = "What do customers complain about most in these {review}s, and how often?"
_PRODUCTS = ["kettle", "headphones", "tent", "lawn mower", "desk lamp", "blender", "backpack", "monitor"]
_COMPLAINTS = [
    "stopped working after a week", "arrived with a cracked case", "is louder than advertised",
    "has a battery that drains overnight", "came without the manual", "works as described, no complaints",
]
_FILLER = "Noted for the quality team; the customer may be contacted again. " * 13
"""Makes a partial answer ~230 tokens long, as a real summary of a few dozen reviews would be."""


def reviews(count: int) -> list[str]:
    """``count`` synthetic reviews of about 25 tokens each."""
    return [
        f"Order {10_000 + n}: the {_PRODUCTS[n % len(_PRODUCTS)]} {_COMPLAINTS[n * 7 % len(_COMPLAINTS)]}; "
        f"rated {1 + n % 5} of 5."
        for n in range(count)
    ]


def _answer(request: Any) -> Any:
    """A partial answer counting the rows its chunk covers (a fold: the sum of its parts' counts)."""
    from fakellm import Reply

    text = request.last_user_text
    if "Answer for part" in text:
        rows = sum(int(n) for n in re.findall(r"rows=(\d+)", text))
    else:
        rows = len(re.findall(r"^\[\d+\] ", text, flags=re.MULTILINE))
    return Reply(text=f"rows={rows}. Most common: stopped working, cracked cases, noise. {_FILLER}")


def agg_rows(quick: bool) -> list[Row]:
    """Requests, tokens and the largest request of one ``agg`` over 10 000 rows at each window."""
    import pandas as pd

    from aiforge.core.tokens import estimate_tokens
    from fakellm import LLMServer, estimate_input_tokens

    texts = reviews(QUICK_ROWS if quick else ROWS)
    frame = pd.DataFrame({"review": texts})
    rows_tokens = sum(map(estimate_tokens, texts))
    found = []
    with LLMServer(default=_answer) as server:
        for window in WINDOWS:
            server.reset()
            answer = frame.aiforge.agg(
                PROMPT, provider="openai", OPENAI_API_KEY=API_KEY, OPENAI_BASE_URL=server.openai_base_url,
                MODEL=OPENAI_MODEL, MAX_RETRIES=0, CONTEXT_WINDOW=window, MAX_TOKENS=MAX_TOKENS, PROGRESS_BAR=False,
                concurrency=16,
            )
            report = answer.attrs["aiforge"]
            sizes = [estimate_input_tokens(r.body) + r.body["max_completion_tokens"] for r in server.requests]
            found.append({
                "window": window,
                "right": answer.startswith(f"rows={len(texts)}."),
                "shape": " -> ".join(str(level.chunks) for level in report.levels),
                "requests": server.request_count,
                "input": sum(estimate_input_tokens(r.body) for r in server.requests),
                "largest": max(sizes),
                "cost": report.total_cost,
            })
    return [_row(measured, len(texts), rows_tokens) for measured in found]


def _row(measured: dict[str, Any], rows: int, rows_tokens: int) -> Row:
    window, largest = measured["window"], measured["largest"]
    overhead = measured["input"] / rows_tokens
    return Row(
        GROUP,
        f"agg over {rows:,} rows, CONTEXT_WINDOW={window:,}",
        f"{measured['requests']} requests (chunks by level {measured['shape']}), {measured['input']:,} input tokens",
        f"largest request {largest:,} tokens",
        largest / window,
        "every request <= window, answer counts every row",
        largest <= window and measured["right"],
        note=f"input tokens are {overhead:.2f}x the rows' own {rows_tokens:,} (instruction, framing, system prompt "
        f"per chunk, and the partial answers folded again); ${measured['cost']:.4f} at gpt-4o-mini prices; the "
        f"largest request counts the {MAX_TOKENS} answer tokens reserved; the window less the 20 % margin packs "
        "the chunks, so the ratio stays near 0.8",
    )
