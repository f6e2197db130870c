"""Cost group measure: the plans an estimate compares (issue 24's cost planner), in dollars per plan.

``plans_table``: 1 000 generated reviews of which 35 % repeat another row (``bench.cost_reviews.reviews``, seed 24), the
dedup measure's prompt, classified into three labels on gpt-4o-mini; ``agent.estimate_batch`` lists each plan
before any request (the fake server is only the endpoint the agent is built on: it receives nothing). Input
tokens are counted as the estimate counts them (tiktoken when its encoding file is on the machine, else about 4
characters a token); output tokens are ``MAX_TOKENS`` per request, set to ``OUTPUT_TOKENS`` (a JSON label answer
is about 8). Each plan row checks one relation the planner promises: deduped below as is, the Batch API (each
distinct prompt once) half of deduped, packed below deduped. Flex has no price on gpt-4o-mini; one more row shows it on
gpt-5-mini (half of deduped).
"""

from __future__ import annotations

from typing import Any, Literal

from bench.common import API_KEY, OPENAI_MODEL, Row

GROUP = "cost"
OUTPUT_TOKENS = 16
FLEX_MODEL = "gpt-5-mini"


def _estimate(server: Any, model: str, frame: Any, prompt: str) -> Any:
    from aiforge import ChatAgent

    agent = ChatAgent(
        provider="openai", OPENAI_API_KEY=API_KEY, OPENAI_BASE_URL=server.openai_base_url, MODEL=model,
        MAX_TOKENS=OUTPUT_TOKENS, PROGRESS_BAR=False, CACHE=False, memory="none",
    )
    return agent.estimate_batch(frame, prompt=prompt, output=Literal["positive", "negative", "neutral"], concurrency=20)


def plans_table(quick: bool) -> list[Row]:
    """The plans of 1 000 reviews (35 % repeats) on gpt-4o-mini, one row each, dollars against "as is"."""
    import pandas as pd

    from bench.cost_reviews import PROMPT, REVIEWS, reviews
    from fakellm import LLMServer

    count = 200 if quick else REVIEWS
    frame = pd.DataFrame({"review": reviews(count)})
    with LLMServer() as server:
        estimate = _estimate(server, OPENAI_MODEL, frame, PROMPT)
        flex_estimate = _estimate(server, FLEX_MODEL, frame, PROMPT)
        sent = server.request_count
    plans = {plan.name: plan for plan in estimate.plans}
    as_is, deduped = plans["as_is"].dollars or 0.0, plans["deduped"].dollars or 0.0
    checks = {
        "as_is": ("", None),
        "deduped": ("< as is", plans["deduped"].dollars is not None and plans["deduped"].dollars < as_is),
        "flex": ("n/a on gpt-4o-mini", not plans["flex"].available),
        "batch_api": ("= deduped / 2", abs((plans["batch_api"].dollars or 0.0) - deduped / 2) < 1e-12),
        "packed": ("< deduped", (plans["packed"].dollars or 0.0) < deduped),
    }
    rows = []
    for name, (target, passed) in checks.items():
        plan = plans[name]
        rows.append(Row(
            GROUP, f"plans, {count:,} reviews (35% repeats) on {OPENAI_MODEL}: {plan.label}"
            + (" (cheapest)" if plan.cheapest else ""),
            f"{plan.dollars_text()}, {plan.requests:,} requests, {plan.time_text()}" if plan.available else plan.note,
            f"as is: ${as_is:.4f}", None if plan.dollars is None or not as_is else plan.dollars / as_is,
            target, passed and sent == 0 if passed is not None else None, note=plan.note,
        ))
    flex = {plan.name: plan for plan in flex_estimate.plans}
    deduped_flex, flex_dollars = flex["deduped"].dollars or 0.0, flex["flex"].dollars or 0.0
    rows.append(Row(
        GROUP, f"plans, {count:,} reviews on {FLEX_MODEL}: flex vs deduped", flex["flex"].dollars_text(),
        f"deduped: {flex['deduped'].dollars_text()}", flex_dollars / deduped_flex if deduped_flex else None,
        "= deduped / 2", abs(flex_dollars - deduped_flex / 2) < 1e-12,
        note=f"{estimate.counting}; {OUTPUT_TOKENS} output tokens per request assumed; the fake server received {sent} "
        "requests (an estimate sends none)",
    ))
    return rows
