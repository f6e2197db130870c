"""Cascade(first="proxy") on the real all-MiniLM-L6-v2 weights (the ``[embeddings]`` extra), offline: the proxy learns
the themes of generated tickets from the strong model's sample, and what it keeps meets the target on held-out rows."""

from __future__ import annotations

import random
from typing import Any

import pandas as pd
import pytest

from aiforge import Cascade, ChatAgent
from aiforge.core.types import Message
from aiforge.providers.scripted import ScriptedProvider, structured
from aiforge.providers.sentence_vectors import EXTRA_HINT, bundled_model_zip, sentence_transformers_installed

if not sentence_transformers_installed() or bundled_model_zip() is None:
    pytest.skip(f"the [embeddings] extra is not installed: {EXTRA_HINT}", allow_module_level=True)

pytestmark = pytest.mark.embedded

PROBLEMS = {
    "billing": ["I was charged twice this month", "the invoice amount is wrong", "where is my refund"],
    "login": ["I can't log in", "the password reset email never arrives", "my account is locked"],
    "shipping": ["my parcel has not arrived", "the tracking number shows nothing", "the courier lost my package"],
    "bug": ["the app crashes on start", "the export button throws an error", "the page freezes"],
}
OPENINGS = ["Hi,", "Hello team,", "Urgent:", "", "Good morning,"]
CLOSINGS = ["", " Thanks.", " Please help.", " Any news?"]


def tickets(n: int) -> pd.DataFrame:
    rng = random.Random(32)
    rows = []
    for i in range(n):
        theme = rng.choice(list(PROBLEMS))
        text = f"{rng.choice(OPENINGS)} {rng.choice(PROBLEMS[theme])}.{rng.choice(CLOSINGS)} (#{i})".strip()
        rows.append({"ticket": text, "theme": theme})
    return pd.DataFrame(rows)


def test_the_proxy_on_minilm_vectors_keeps_most_rows_at_the_target() -> None:
    df = tickets(400)
    truth = dict(zip(df["ticket"], df["theme"], strict=True))

    def reply(messages: list[Message]) -> Any:
        return structured(truth[messages[-1]["content"]])

    strong = ScriptedProvider(default=reply, model="gpt-4o")
    agent = ChatAgent(provider=strong, EMBEDDING_PROVIDER="sentence-transformers", PROGRESS_BAR=False)
    labels = df.aiforge.classify("{ticket}", labels=list(PROBLEMS), agent=agent, cascade=Cascade(first="proxy"))
    report = labels.attrs["aiforge"].cascade
    kept = [i for i, by in enumerate(report.answered_by) if by == "first"]
    assert report.embedding_model == "all-MiniLM-L6-v2" and report.embedding_cost == 0.0
    assert len(kept) > 100 and len(strong.calls) == report.by_then == 400 - len(kept)
    assert sum(labels.iloc[i] == df["theme"].iloc[i] for i in kept) / len(kept) >= 0.9
