"""Label batches on a provider that classifies by scoring (issue 24): each row answered by ``score_labels``, not
generated, with the generated path's columns and a confidence; ``LABELS_BY`` turns it off.

The scripted provider opts in with ``classifies_by_scoring=True``; its ``scores=`` answers "pos" at 0.8 while its
generated answer (the default reply, a structured "neg") would say "neg": a row reading "pos" was scored.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import pytest
from pydantic import BaseModel

import aiforge  # noqa: F401 - registers the .aiforge accessor
from aiforge import ChatAgent
from aiforge.chat.response import BATCH_COLUMNS
from aiforge.core.types import ConfigError, Message, UsageError
from aiforge.providers.function import FunctionProvider
from aiforge.providers.scripted import ScriptedProvider, structured

LABELS = ["pos", "neg"]
REVIEWS = pd.DataFrame({"review": ["Loved it", "Broke at once", "Fine", "Loved it"]}, index=[10, 11, 12, 13])
PROMPT = "Review: {review}"


def scores(messages: list[Message]) -> dict[str, float]:
    return {"pos": 0.8, "neg": 0.2}


def scripted(*, scoring: bool = True, answer: Any = "neg") -> ScriptedProvider:
    """Scores "pos" at 0.8; generates ``answer``."""
    return ScriptedProvider(
        default=lambda messages: structured(answer), scores=scores, classifies_by_scoring=scoring
    )


def agent_on(provider: ScriptedProvider, **settings: Any) -> ChatAgent:
    return ChatAgent(provider=provider, PROGRESS_BAR=False, **settings)


def test_classify_scores_each_row_and_gives_its_confidence() -> None:
    labels = REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(scripted()))
    assert labels.tolist() == ["pos"] * 4
    frame = labels.attrs["aiforge"].to_dataframe()
    assert str(frame["confidence"].dtype) == "Float64"
    assert frame["confidence"].tolist() == [0.8] * 4


def test_a_scored_row_is_one_score_labels_request_with_the_generated_turns_messages() -> None:
    generating, scoring = scripted(scoring=False), scripted()
    REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(generating))
    batch = REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(scoring)).attrs["aiforge"]
    assert [call.messages for call in scoring.calls] == [call.messages for call in generating.calls]
    assert len(scoring.calls) == 3  # the repeated review is served from its twin
    [record] = [r for r in batch.results[0].trace if r["step"] != "wait"]  # a busy machine: a wait for a worker
    assert (record["step"], record["name"]) == ("model", "score_labels")
    assert record["probabilities"] == {"pos": 0.8, "neg": 0.2}


def test_the_columns_and_their_dtypes_are_the_generated_paths() -> None:
    generated = REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(scripted(scoring=False)))
    scored = REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(scripted()))
    assert scored.dtype == generated.dtype and list(scored.cat.categories) == LABELS
    generated_frame, scored_frame = (s.attrs["aiforge"].to_dataframe() for s in (generated, scored))
    assert list(scored_frame.columns) == list(generated_frame.columns) == ["input", "output", *BATCH_COLUMNS[1:]]
    assert scored_frame.dtypes.equals(generated_frame.dtypes)
    assert generated_frame["confidence"].isna().all()  # a generated answer has none
    response = scored.attrs["aiforge"].results[0]
    assert (response.output, response.message, response.cost) == ("pos", '{"value":"pos"}', 0.0)
    assert response.input_tokens > 0 and response.output_tokens == 1  # the scripted scores' usage


def test_filter_scores_true_or_false() -> None:
    provider = ScriptedProvider(
        default=lambda m: structured(False), scores=lambda m: {"true": 0.7, "false": 0.3}, classifies_by_scoring=True
    )
    kept = REVIEWS.aiforge.filter("Happy? {review}", agent=agent_on(provider))
    assert list(kept.index) == [10, 11, 12, 13]
    assert kept.attrs["aiforge"].to_dataframe()["confidence"].tolist() == [0.7] * 4


class Mood(enum.Enum):
    POS = "pos"
    NEG = "neg"


def test_run_batch_with_an_enum_output_gives_the_member() -> None:
    batch = agent_on(scripted()).run_batch(["Loved it", "Broke"], output=Mood)
    assert [r.output for r in batch.results] == [Mood.POS, Mood.POS]
    assert [r.confidence for r in batch.results] == [0.8, 0.8]


def test_labels_by_generation_turns_scoring_off() -> None:
    labels = REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(scripted(), LABELS_BY="generation"))
    assert labels.tolist() == ["neg"] * 4
    assert labels.attrs["aiforge"].to_dataframe()["confidence"].isna().all()


def test_labels_by_scoring_scores_on_a_provider_that_does_not_classify_by_scoring_by_default() -> None:
    labels = REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(scripted(scoring=False), LABELS_BY="scoring"))
    assert labels.tolist() == ["pos"] * 4


def test_labels_by_scoring_on_a_provider_that_cannot_score_is_a_usage_error_before_any_call() -> None:
    calls: list[Any] = []
    agent = ChatAgent(provider=FunctionProvider(lambda messages, **_: calls.append(1) or '"neg"'), LABELS_BY="scoring")
    with pytest.raises(UsageError, match="LABELS_BY=scoring, but the function provider cannot score labels"):
        agent.run_batch(["Loved it"], output=Literal["pos", "neg"])
    assert calls == []


class Rating(BaseModel):
    stars: int


def test_outputs_that_are_no_labels_are_generated() -> None:
    provider = ScriptedProvider(default=lambda m: structured({"stars": 4}), scores=scores, classifies_by_scoring=True)
    batch = agent_on(provider).run_batch(["Loved it"], output=Rating)
    assert batch.results[0].output == Rating(stars=4) and batch.results[0].confidence is None


def test_an_agent_with_tools_generates_its_labels() -> None:
    def lookup(name: str) -> str:
        """Look a product up."""
        return name

    agent = ChatAgent(provider=scripted(), tools=[lookup], PROGRESS_BAR=False)
    assert REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent).tolist() == ["neg"] * 4


def test_scored_rows_are_kept_by_the_response_cache_with_their_confidence(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache.sqlite")
    REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(scripted(), CACHE=cache))
    again = scripted()
    cached = REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(again, CACHE=cache))
    frame = cached.attrs["aiforge"].to_dataframe()
    assert again.calls == [] and frame["cached"].all()
    assert cached.tolist() == ["pos"] * 4 and frame["confidence"].tolist() == [0.8] * 4
    assert cached.attrs["aiforge"].results[0].label_probabilities == {"pos": 0.8, "neg": 0.2}


def test_a_generated_answer_in_the_cache_is_not_served_to_a_scored_batch(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache.sqlite")
    REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(scripted(), CACHE=cache, LABELS_BY="generation"))
    scoring = scripted()
    labels = REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(scoring, CACHE=cache))
    assert labels.tolist() == ["pos"] * 4 and len(scoring.calls) == 3


def test_a_checkpoint_keeps_scored_rows_with_their_confidence(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(scripted()), checkpoint=path)
    again = scripted()
    labels = REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(again), checkpoint=path)
    assert again.calls == [] and labels.tolist() == ["pos"] * 4
    assert labels.attrs["aiforge"].to_dataframe()["confidence"].tolist() == [0.8] * 4


def test_a_cascades_cheap_rows_fill_the_confidence_column() -> None:
    rows = pd.Series([f"review {i}" for i in range(40)])
    cheap = ChatAgent(provider=ScriptedProvider(scores=scores), memory="none")
    strong = ChatAgent(provider=ScriptedProvider(default=lambda messages: structured("pos")))
    cascade = aiforge.Cascade(first=cheap, then=strong, target=0.5, confidence=0.5, sample=20)
    frame = rows.aiforge.classify("{value}", LABELS, cascade=cascade).attrs["aiforge"].to_dataframe()
    first = frame["answered_by"] == "first"
    assert first.any() and frame.loc[first, "confidence"].tolist() == [0.8] * int(first.sum())
    assert frame.loc[~first, "confidence"].isna().all()  # the strong model generated its rows


def test_labels_by_is_read_from_the_environment_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIFORGE_LABELS_BY", "generation")
    assert REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(scripted())).tolist() == ["neg"] * 4
    with pytest.raises(ConfigError, match="LABELS_BY"):
        ChatAgent(provider=scripted(), LABELS_BY="sometimes")


def test_pack_on_scored_rows_is_not_used_and_says_so_in_one_warning() -> None:
    # Packed requests are generated: pack= under LABELS_BY=auto once mixed generated rows (no confidence) with
    # scored rows asked again alone in one column.
    provider = scripted()
    with pytest.warns(UserWarning, match="pack=4 is not used: this provider scores label rows one by one"):
        labels = REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(provider), pack=4)
    frame = labels.attrs["aiforge"].to_dataframe()
    assert frame["confidence"].notna().all() and not frame["packed"].any()


def test_pack_under_labels_by_scoring_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="LABELS_BY=scoring answers each row by itself and does not combine with pack"):
        REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(scripted(), LABELS_BY="scoring"), pack=4)


def test_plan_cheapest_runs_scored_rows_live_and_after_a_checkpointed_run_attaches_to_no_job(tmp_path: Path) -> None:
    # The planner built the batch's identity without scored=: a scored batch's checkpoint then raised
    # CheckpointMismatchError under plan="cheapest"; and the Batch API plan would have generated scored rows.
    provider = scripted()
    checkpoint = tmp_path / "labels.sqlite"
    first = REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(provider), checkpoint=checkpoint)
    again = REVIEWS.aiforge.classify(PROMPT, LABELS, agent=agent_on(provider), checkpoint=checkpoint,
                                     plan="cheapest", deadline="7d")
    batch = again.attrs["aiforge"]
    assert batch.plan != "batch_api" and batch.to_dataframe()["confidence"].notna().all()
    assert again.tolist() == first.tolist()
