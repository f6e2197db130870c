"""Cost: what a column costs through aiforge, against the naive run that asks every row once at full price.

Each row of the group is one small measure function in ``MEASURES`` (``quick -> list[Row]``): add yours to the
list. Requests and tokens are the fake server's own counts (``fakellm`` counts the characters it received, about
4 per token, and the reply's), dollars are aiforge's ``gpt-4o-mini`` price of them; nothing here is timed.

- dedup: 1 000 product reviews, 35 % of them repeats of another row (short reviews such as "Great product!"
  repeat most, as in real review exports), classified with ``df.aiforge.classify``. The naive run is the same
  rows split into batches that hold no repeat (each row asked once at full price), measured the same way; the
  row passes when ``BatchResult.saved`` equals naive minus paid, in requests, tokens and dollars.
- cascade: ``bench/cost_cascade.py``; the proxy cascade (``Cascade(first="proxy")``): ``bench/cost_proxy_cascade.py``.
- provider prompt caches: ``bench/cost_prompt_cache.py``.
- row packing: ``bench/cost_packing.py``.
- the embedded model's label scoring against constrained generation: ``bench/cost_label_scoring.py``.
- the plans an estimate compares (as is, deduped, flex, Batch API, packed): ``bench/cost_plans.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.common import OPENAI_MODEL, Row, run_measures
from bench.cost_cascade import cascade_rows
from bench.cost_label_scoring import classify_default_and_calibrated, label_scoring_vs_generation
from bench.cost_packing import packing_accuracy_embedded, packing_input_tokens
from bench.cost_plans import plans_table
from bench.cost_prompt_cache import prompt_cache_savings
from bench.cost_proxy_cascade import proxy_cascade_rows
from bench.cost_reviews import LABELS, PROMPT, REVIEWS, reviews

GROUP = "cost"


def _without_repeats(rows: list[str]) -> list[list[int]]:
    """Positions of ``rows`` in batches that hold no repeated text: the k-th occurrence of each text in batch k."""
    seen: dict[str, int] = {}
    layers: list[list[int]] = []
    for position, text in enumerate(rows):
        k = seen[text] = seen.get(text, -1) + 1
        if k == len(layers):
            layers.append([])
        layers[k].append(position)
    return layers


def _billed(server: Any, results: list[Any]) -> tuple[int, int, int, float]:
    """Requests the server answered since its last reset; the tokens and dollars of the ``results`` that made one
    (their usage is what the server reported on the wire)."""
    made = [r for r in results if not r.cached]
    tokens_in, tokens_out = sum(r.input_tokens for r in made), sum(r.output_tokens for r in made)
    return server.request_count, tokens_in, tokens_out, sum(r.cost for r in made)


def dedup_on_a_repeated_column(quick: bool) -> list[Row]:
    """1 000 reviews (35 % repeats) classified with in-batch dedup, against every row asked."""
    import pandas as pd

    from aiforge import ChatAgent
    from fakellm import LLMServer, Reply, sample_output

    count = 200 if quick else REVIEWS
    rows = reviews(count)
    frame = pd.DataFrame({"review": rows}, index=pd.RangeIndex(10_000, 10_000 + count, name="review_id"))
    with LLMServer(default=lambda req: Reply(output=sample_output(req.output_schema))) as server:
        agent = ChatAgent(
            provider="openai", OPENAI_API_KEY="sk-bench", OPENAI_BASE_URL=server.openai_base_url,
            MODEL=OPENAI_MODEL, MAX_RETRIES=0, PROGRESS_BAR=False, CACHE=False,
        )
        labels = frame.aiforge.classify(PROMPT, labels=LABELS, agent=agent, concurrency=20)
        batch = labels.attrs["aiforge"]
        paid = _billed(server, batch.results)
        server.reset()
        naive_results: list[Any] = []
        for layer in _without_repeats(rows):
            part = frame.iloc[layer].aiforge.classify(PROMPT, labels=LABELS, agent=agent, concurrency=20)
            naive_results += part.attrs["aiforge"].results
        naive = _billed(server, naive_results)
    saved = batch.saved
    paid_usd, naive_usd = paid[3], naive[3]
    agrees = (
        not batch.failed and saved.requests == naive[0] - paid[0]
        and saved.input_tokens == naive[1] - paid[1] and saved.output_tokens == naive[2] - paid[2]
        and abs(saved.dollars - (naive_usd - paid_usd)) < 1e-9 and abs(batch.total_cost - paid_usd) < 1e-9
    )
    unique = len(set(rows))
    return [
        Row(
            GROUP,
            f"{count:,} reviews, {count - unique:,} repeats: classify with in-batch dedup (paid)",
            f"{paid[0]:,} requests, {paid[1] + paid[2]:,} tokens, ${paid_usd:.4f}",
            f"naive (every row asked): {naive[0]:,} requests, {naive[1] + naive[2]:,} tokens, ${naive_usd:.4f}",
            ratio=paid_usd / naive_usd,
            target="saved = naive - paid",
            passed=agrees,
            note=f"BatchResult.saved: {saved}; {batch._summary().rsplit(' · ', 1)[0]}",
        )
    ]


MEASURES: list[Callable[[bool], list[Row]]] = [
    dedup_on_a_repeated_column, cascade_rows, prompt_cache_savings, packing_input_tokens, packing_accuracy_embedded,
    label_scoring_vs_generation, classify_default_and_calibrated, plans_table, proxy_cascade_rows,
]
"""The group's rows, one small function each (``quick -> rows``)."""


def run(quick: bool) -> list[Row]:
    return run_measures(GROUP, MEASURES, quick)
