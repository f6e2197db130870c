"""A cascade whose cheap pass is the embedded model (``first="local"``): every row scored by the real weights."""

from __future__ import annotations

import pandas as pd
import pytest

from aiforge import Cascade, ChatAgent
from aiforge.core.types import Message
from aiforge.providers.local import weights
from aiforge.providers.local.weights import find_default_weights
from aiforge.providers.scripted import ScriptedProvider, structured

if not weights.xllamacpp_installed() or find_default_weights() is None:
    pytest.skip(f"the embedded model is not installed: {weights.INSTALL_HINT}", allow_module_level=True)

pytestmark = pytest.mark.embedded

GOOD = ["I love it, best purchase ever.", "Works perfectly, great value.", "Fantastic quality, highly recommend."]
BAD = ["Broke after two days, awful.", "Terrible, a waste of money.", "Useless, it stopped working at once."]


def strong_label(messages: list[Message]) -> str:
    text = str(messages[-1]["content"])
    return structured({"value": "positive" if any(g in text for g in GOOD) else "negative"})


def test_first_local_scores_every_row_and_the_strong_model_answers_only_the_rest() -> None:
    strong = ScriptedProvider(default=strong_label)
    texts = [f"{text} Order {n}." for n, text in enumerate((GOOD + BAD) * 4)]  # distinct: no row deduplicated
    rows = pd.DataFrame({"review": texts}, index=pd.RangeIndex(500, 524, name="review_id"))
    labels = rows.aiforge.classify(
        "Review: {review}", labels=["positive", "negative"],
        cascade=Cascade(first="local", then=ChatAgent(provider=strong), sample=58, seed=3),
    )
    batch = labels.attrs["aiforge"]
    report = batch.cascade
    assert not batch.failed and labels.notna().all()
    assert report.first_model.startswith("SmolLM2") and report.first_cost == 0
    assert report.by_first + report.by_then == 24
    assert len(strong.calls) == report.by_then  # sample rows are asked once; the kept rows never
    frame = batch.to_dataframe()
    assert list(frame.index) == list(range(500, 524))
    assert set(frame["answered_by"]) <= {"first", "then"}
