"""run_batch(calibrate=True) (issue 24): scored label rows answered after subtracting each label's mean
log-probability over the batch, so a model that leans to one label whatever the row still tells rows apart.

The scripted model leans to "pos": it gives a "good" review "pos" at 0.9 and a "bad" one "pos" at 0.6, so every
row's raw answer is "pos"; against the batch's mean the bad rows lean to "neg".
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import aiforge  # noqa: F401 - registers the .aiforge accessor
from aiforge import Cascade, ChatAgent
from aiforge.core.types import Message, UsageError
from aiforge.providers.scripted import ScriptedProvider, structured

LABELS = ["pos", "neg"]
REVIEWS = pd.DataFrame({"review": ["good", "bad", "good", "bad", "bad"]})
PROMPT = "Review: {review}"


def leaning(messages: list[Message]) -> dict[str, float]:
    pos = 0.9 if messages[-1]["content"].endswith("good") else 0.6
    return {"pos": pos, "neg": 1 - pos}


def agent_on(provider: ScriptedProvider | None = None, **settings: Any) -> ChatAgent:
    provider = provider or ScriptedProvider(scores=leaning, classifies_by_scoring=True)
    return ChatAgent(provider=provider, PROGRESS_BAR=False, **settings)


def calibrated_pos(pos: float, mean_log_pos: float, mean_log_neg: float) -> float:
    """The calibrated probability of "pos" for a row whose raw one is ``pos``."""
    shifted_pos, shifted_neg = math.log(pos) - mean_log_pos, math.log(1 - pos) - mean_log_neg
    return 1 / (1 + math.exp(shifted_neg - shifted_pos))


def test_calibrate_answers_each_row_by_its_lean_against_the_batch() -> None:
    raw = REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on())
    calibrated = REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(), calibrate=True)
    assert raw.tolist() == ["pos"] * 5
    assert calibrated.tolist() == ["pos", "neg", "pos", "neg", "neg"]
    mean_pos = (2 * math.log(0.9) + 3 * math.log(0.6)) / 5
    mean_neg = (2 * math.log(0.1) + 3 * math.log(0.4)) / 5
    good, bad = calibrated_pos(0.9, mean_pos, mean_neg), 1 - calibrated_pos(0.6, mean_pos, mean_neg)
    frame = calibrated.attrs["aiforge"].to_dataframe()
    assert frame["confidence"].tolist() == pytest.approx([good, bad, good, bad, bad])
    assert frame["message"][1] == '{"value":"neg"}'
    response = calibrated.attrs["aiforge"].results[1]
    assert response.label_probabilities == pytest.approx({"pos": 0.6, "neg": 0.4})  # the model's own, kept


def test_rows_resumed_from_a_checkpoint_take_part_in_the_calibration(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(), checkpoint=path, calibrate=True)
    again = ScriptedProvider(scores=leaning, classifies_by_scoring=True)
    resumed = REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(again), checkpoint=path, calibrate=True)
    assert again.calls == []
    assert resumed.tolist() == ["pos", "neg", "pos", "neg", "neg"]


def test_calibrate_on_a_generated_batch_is_a_usage_error_before_any_call() -> None:
    provider = ScriptedProvider(default=lambda m: structured("pos"))
    with pytest.raises(UsageError, match="calibrate=True calibrates scored labels"):
        REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(provider), calibrate=True)
    assert provider.calls == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"pack": 2}, "calibrate=True does not combine with pack="),
        ({"cascade": Cascade(first="local")}, "cascade= does not combine with calibrate=True"),
        ({"calibrate": "yes"}, "calibrate= is True"),
    ],
)
def test_calibrate_with_what_it_cannot_combine_with_is_a_usage_error(options: dict[str, Any], message: str) -> None:
    options = {"calibrate": True, **options}
    with pytest.raises(UsageError, match=message):
        agent_on().run_batch(REVIEWS, prompt=PROMPT, output=bool, **options)
