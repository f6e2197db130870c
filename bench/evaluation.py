"""Evaluation grids (issue 26): what ``df.aiforge.evaluate`` asks and how long it takes, and that a re-run asks
only the new candidates' rows.

500 generated labelled reviews (three labels, seed 26) and a 2 prompts x 2 models grid, through the real openai
SDK against fakellm in this process (10 ms a request, concurrency 20): gpt-4o answers each review's label,
gpt-4o-mini says "negative" to every one. The grid checkpoints to one file (each candidate a part of it). Rows: the
first run (requests and seconds), the same grid again (no request: every candidate read back), one more model
(requests only for its two candidates), the accuracies found (gpt-4o 1.0, gpt-4o-mini the share of "negative"),
and the time ``.summary`` takes over the rows (scoring, Wilson, kappa, F1, percentiles).
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from typing import Any

from bench.common import API_KEY, Row

GROUP = "evaluation"
LABELS = ["positive", "negative", "neutral"]
PROMPTS = {
    "terse": "Sentiment (positive, negative or neutral) of: {review}",
    "polite": "Please read this customer review and give its sentiment: {review}",
}
LATENCY_S = 0.01
CONCURRENCY = 20


def reviews(count: int, seed: int = 26) -> Any:
    """``count`` distinct reviews with a label each: 30 % positive, 50 % negative, 20 % neutral."""
    import pandas as pd

    rng = random.Random(seed)
    labels = rng.choices(LABELS, weights=[3, 5, 2], k=count)
    return pd.DataFrame({"review": [f"review {n}: {rng.random():.6f}" for n in range(count)], "label": labels})


def _server(frame: Any) -> Any:
    from fakellm import LLMServer, Reply

    truth = dict(zip(frame["review"], frame["label"], strict=True))

    def answer(request: Any) -> Reply:
        text = request.messages[-1]["content"]
        review = text[text.rindex("review "):]
        return Reply(output={"value": truth[review] if request.model == "gpt-4o" else "negative"})

    return LLMServer(latency=LATENCY_S, default=answer)


def _agent(server: Any, model: str) -> Any:
    from aiforge import ChatAgent

    return ChatAgent(
        provider="openai", OPENAI_API_KEY=API_KEY, OPENAI_BASE_URL=server.openai_base_url, MODEL=model,
        PROGRESS_BAR=False, CACHE=False, MAX_RETRIES=0, memory="none",
    )


def _grid(frame: Any, agents: dict[str, Any], folder: str) -> tuple[Any, float]:
    checkpoint = os.path.join(folder, "grid.sqlite")
    started = time.perf_counter()
    result = frame.aiforge.evaluate(
        prompts=PROMPTS, agents=agents, truth="label", labels=LABELS, checkpoint=checkpoint, concurrency=CONCURRENCY
    )
    return result, time.perf_counter() - started


def run(quick: bool) -> list[Row]:
    """The grid's requests and seconds, a re-run's, one more model's, and the accuracies it found."""
    import aiforge  # noqa: F401 - registers the accessor

    count = 100 if quick else 500
    frame = reviews(count)
    with _server(frame) as server, tempfile.TemporaryDirectory() as folder:
        agents = {"4o": _agent(server, "gpt-4o"), "mini": _agent(server, "gpt-4o-mini")}
        first, first_s = _grid(frame, agents, folder)
        asked_first = server.request_count
        again, again_s = _grid(frame, agents, folder)
        asked_again = server.request_count - asked_first
        more, more_s = _grid(frame, {**agents, "4.1": _agent(server, "gpt-4.1")}, folder)
        asked_more = server.request_count - asked_first - asked_again
    started = time.perf_counter()
    summary = more.rescore(lambda prediction, truth: prediction == truth).summary
    summary_s = time.perf_counter() - started
    grid = f"2 prompts x 2 models, {count} rows"
    negative = (frame["label"] == "negative").mean()
    mini = summary.loc["terse/mini", "accuracy"]
    return [
        Row(GROUP, f"{grid}: first run", f"{asked_first:,} requests, {first_s:.1f} s",
            target=f"= {4 * count:,} requests", passed=asked_first == 4 * count),
        Row(GROUP, f"{grid}: the same grid again (checkpoint file)", f"{asked_again} requests, {again_s:.2f} s",
            target="0 requests", passed=asked_again == 0),
        Row(GROUP, f"{grid}: one more model (2 new candidates)", f"{asked_more:,} requests, {more_s:.1f} s",
            target=f"= {2 * count:,} requests", passed=asked_more == 2 * count),
        Row(GROUP, f"{grid}: accuracy found", f"gpt-4o {summary.loc['terse/4o', 'accuracy']:.3f}, "
            f"gpt-4o-mini {mini:.3f} (share of negative {negative:.3f})",
            target="1.0 and the share", passed=summary.loc["terse/4o", "accuracy"] == 1.0 and mini == negative),
        Row(GROUP, f"summary of 6 candidates x {count} rows (rescored)", f"{summary_s * 1000:.0f} ms",
            note=f"first run's summary: {len(first.summary)} candidates; re-run read {len(again.rows):,} rows back"),
    ]


if __name__ == "__main__":
    for row in run(quick=False):
        print(f"{row.benchmark}: {row.aiforge}  [{row.target}] {row.verdict}")
