"""Cost group measures: row packing (``pack=k``) against one row per request (issue 24).

``packing_input_tokens`` (issue 24's row packing): 300 labelled reviews classified with a ~150-token shared
instruction (the row template) and ~40-token rows, once one row per request and once with ``pack=6``, through the
real openai SDK against the in-process fake server. Input tokens are the server's own count (characters / 4 of
the messages, what it reports as usage and bills); the JSON schema of the structured output, which a real
provider also counts, is added separately with ``core.tokens.estimate_tokens``. The fake model answers every row
correctly, packed or not, so the accuracy is the same by construction: this measures tokens, not whether a model
answers as well with six rows at once (the paper reports a small loss on some tasks).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import API_KEY, OPENAI_MODEL, Row

GROUP = "cost"
DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
ROWS = 300
PACK = 6
WIDE_PACK = 10
"""A wider pack, for information: where the saving goes as more rows share one instruction."""
LABELS = ["pos", "neg", "neutral"]
INSTRUCTION = (
    "You are labelling customer reviews for the quality team of an online shop. Read the review and decide the "
    "overall sentiment of the customer towards the product itself. Answer pos when the customer is satisfied "
    "and would recommend or buy the product again, neg when the customer is disappointed, asks for a refund, or "
    "reports that the product broke, and neutral when the review is mixed, purely factual, or says the product "
    "is merely acceptable. Ignore remarks about delivery speed, packaging and price unless they are the only "
    "thing the review talks about. Do not guess from the star rating or the product category.\n\nReview: {review}"
)
CATEGORIES = ["kitchen", "audio", "sports", "garden", "toys", "office"]
_ITEM = re.compile(r"^\[(r\d+)\]\n(.*?)(?=\n\n\[r\d+\]|\n\nAnswer every item)", re.M | re.S)


def labelled_rows(count: int = ROWS) -> tuple[list[str], list[str]]:
    """``count`` review rows of about 40 tokens (the 60 of tests/data/reviews.csv with order details) and labels."""
    with (DATA / "reviews.csv").open(newline="") as f:
        reviews = list(csv.DictReader(f))
    texts, labels = [], []
    for n in range(count):
        row = reviews[n % len(reviews)]
        category = CATEGORIES[n % len(CATEGORIES)]
        texts.append(
            f"Order {1000 + n} ({category} department), verified purchase, delivered in {2 + n % 5} days, "
            f"not returned. Customer wrote: {row['review']}"
        )
        labels.append(row["sentiment"])
    return texts, labels


def _labeller(truth: dict[str, str]) -> Callable[[Any], Any]:
    """The fake model: the right label for each row, packed (``[rN]`` items) or alone."""
    from fakellm import Reply

    def reply(request: Any) -> Any:
        prompt = request.last_user_text
        items = _ITEM.findall(prompt)
        if items:
            return Reply(output={"answers": [{"id": i, "answer": truth[text]} for i, text in items]})
        return Reply(output={"value": truth[prompt.rsplit("Review: ", 1)[-1]]})

    return reply


def packing_input_tokens(quick: bool) -> list[Row]:
    """Input tokens of 300 rows one per request vs ``pack=6``; the same labels either way (see the module note)."""
    import pandas as pd

    from aiforge import ChatAgent
    from aiforge.chat.prompts import DEFAULT_SYSTEM_PROMPT
    from aiforge.core.tokens import estimate_tokens
    from fakellm import LLMServer

    texts, labels = labelled_rows(60 if quick else ROWS)
    frame = pd.DataFrame({"review": texts})
    measured: dict[int, dict[str, float]] = {}
    with LLMServer(strict=True, default=_labeller(dict(zip(texts, labels, strict=True)))) as server:
        for pack in (1, PACK, WIDE_PACK):
            server.reset()
            agent = ChatAgent(provider="openai", OPENAI_API_KEY=API_KEY, OPENAI_BASE_URL=server.openai_base_url,
                              MODEL=OPENAI_MODEL, MAX_RETRIES=0, memory="none")
            got = frame.aiforge.classify(INSTRUCTION, LABELS, agent=agent, concurrency=8, pack=pack)
            batch = got.attrs["aiforge"]
            schema = sum(estimate_tokens(json.dumps(r.output_schema, separators=(",", ":"))) for r in server.requests)
            measured[pack] = {
                "requests": server.request_count,
                "input": sum(r.input_tokens for r in batch.results),
                "schema": schema,
                "accuracy": sum(a == b for a, b in zip(got.tolist(), labels, strict=True)) / len(labels),
            }
    one, packed, wide = measured[1], measured[PACK], measured[WIDE_PACK]
    ratio = one["input"] / packed["input"]
    shared = estimate_tokens(INSTRUCTION.split("{")[0] + DEFAULT_SYSTEM_PROMPT)
    per_row = sum(map(estimate_tokens, texts)) / len(texts)
    bound = (shared + per_row) / (shared / PACK + per_row)  # no packing overhead at all
    with_schema = (one["input"] + one["schema"]) / (packed["input"] + packed["schema"])
    rows = len(texts)
    return [
        Row(GROUP, f"input tokens, {rows} rows, pack={PACK} vs 1 per row",
            f"{packed['input']:.0f} tokens, {packed['requests']:.0f} requests",
            f"{one['input']:.0f} tokens, {one['requests']:.0f} requests", ratio, ">= 3x fewer", ratio >= 3,
            note=f"~{shared} shared tokens (template and system prompt), ~{per_row:.0f} per row: sharing alone "
            f"can give at most {bound:.2f}x at pack={PACK} (the rows themselves are still sent); counted by the fake "
            f"server (chars / 4 of the messages); with the output schema counted too: {with_schema:.2f}x "
            f"({one['input'] + one['schema']:.0f} vs {packed['input'] + packed['schema']:.0f})"),
        Row(GROUP, f"input tokens, {rows} rows, pack={WIDE_PACK} vs 1 per row",
            f"{wide['input']:.0f} tokens, {wide['requests']:.0f} requests",
            f"{one['input']:.0f} tokens, {one['requests']:.0f} requests", one["input"] / wide["input"], "", None),
        Row(GROUP, f"accuracy, pack={PACK} vs 1 per row (fake model)", f"{packed['accuracy']:.0%}",
            f"{one['accuracy']:.0%}", None, "", None,
            note="the fake model labels every row correctly, packed or not: equal by construction, not a measure "
            "of a real model's accuracy with packed rows"),
    ]


EMBEDDED_ROWS = 24
EMBEDDED_PROMPT = "Is the sentiment of this product review pos, neg or neutral?\n\nReview: {review}"


def packing_accuracy_embedded(quick: bool) -> list[Row]:
    """Accuracy and input tokens of the real embedded model (SmolLM2-135M) on 24 labelled reviews, one per request
    vs ``pack=6``, at temperature 0. Skipped by ``--quick``; a minute or two a pass on a laptop core."""
    if quick:
        return []
    import warnings

    import pandas as pd

    from aiforge import ChatAgent
    from aiforge.core.errors import EmbeddedModelWarning

    with (DATA / "reviews.csv").open(newline="") as f:
        reviews = list(csv.DictReader(f))[:EMBEDDED_ROWS]
    frame, truth = pd.DataFrame({"review": [r["review"] for r in reviews]}), [r["sentiment"] for r in reviews]
    measured = {}
    for pack in (1, PACK):
        # Both generated: packed requests are (LABELS_BY would score the rows sent one at a time).
        agent = ChatAgent(provider="local", TEMPERATURE=0, memory="none", PROGRESS_BAR=False, LABELS_BY="generation")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EmbeddedModelWarning)  # known: this model's labels are weak
            got = frame.aiforge.classify(EMBEDDED_PROMPT, LABELS, agent=agent, pack=pack, concurrency=1)
        batch = got.attrs["aiforge"]
        measured[pack] = (
            sum(a == b for a, b in zip(got.tolist(), truth, strict=True)) / len(truth),
            sum(r.input_tokens for r in batch.results),
            0 if batch.packing is None else batch.packing.answered,
        )
    (one, one_tokens, _), (packed, packed_tokens, answered) = measured[1], measured[PACK]
    return [Row(
        GROUP, f"accuracy, pack={PACK} vs 1 per row (embedded SmolLM2-135M, {EMBEDDED_ROWS} reviews)",
        f"{packed:.0%}, {packed_tokens} input tokens", f"{one:.0%}, {one_tokens} input tokens",
        None, "", None,
        note=f"real model, temperature 0, 3 labels (chance 33%); {answered}/{EMBEDDED_ROWS} rows answered from a pack, "
        "the rest asked again alone. 24 rows on a 135M model whose labels swing with the prompt's form: this shows "
        "packing works on a grammar-constrained local model, not what it does to a capable model's accuracy",
    )]
