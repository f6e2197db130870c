"""run_batch(cascade=...) (issue 24): a cheap model keeps the label rows it is confident on, a calibrated threshold
sends the rest to the strong model, and the agreement of the kept rows meets the target on rows it never saw."""

from __future__ import annotations

import dataclasses
import enum
import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import pytest

import aiforge
from aiforge import Cascade, ChatAgent
from aiforge.batch.cascade import CascadeReport
from aiforge.core.errors import FailedRowsWarning
from aiforge.core.pricing import lookup_price
from aiforge.core.types import Message, Usage, UsageError
from aiforge.providers.scripted import ScriptedProvider, structured
from fakellm import LLMServer, RecordedRequest, Reply

LABELS = ["pos", "neg"]


def reviews(n: int = 600, seed: int = 24, easy_share: float = 0.6) -> pd.DataFrame:
    """Rows whose text carries what the scripted models need: its number, easy or hard, and the true label."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        label, kind = rng.choice(LABELS), "easy" if rng.random() < easy_share else "hard"
        rows.append({"review": f"review {i} ({kind}) truth={label}", "label": label})
    return pd.DataFrame(rows, index=[f"r{i}" for i in range(n)])


def parts(text: str) -> tuple[int, str, str]:
    number, kind, truth = text.removeprefix("review ").split()
    return int(number), kind.strip("()"), truth.removeprefix("truth=")


def other(label: str) -> str:
    return "neg" if label == "pos" else "pos"


def strong_label(text: str) -> str:
    """The strong model: right on every easy row, on 85 % of the hard ones."""
    number, kind, truth = parts(text)
    return truth if kind == "easy" or random.Random(f"strong {number}").random() < 0.85 else other(truth)


def cheap_scores(messages: list[Message]) -> dict[str, float]:
    """The cheap model: confident and right on 99.5 % of easy rows; unsure, and right one time in two, on hard ones."""
    number, kind, truth = parts(messages[-1]["content"])
    rng = random.Random(f"cheap {number}")
    if kind == "easy":
        answer, confidence = (truth if rng.random() < 0.995 else other(truth)), rng.uniform(0.9, 0.99)
    else:
        answer, confidence = (truth if rng.random() < 0.5 else other(truth)), rng.uniform(0.5, 0.85)
    return {answer: confidence, other(answer): 1 - confidence}


def strong_reply(messages: list[Message]) -> Any:
    return structured(strong_label(messages[-1]["content"]))


def strong_provider() -> ScriptedProvider:
    return ScriptedProvider(default=strong_reply)


@pytest.fixture
def strong() -> ScriptedProvider:
    return strong_provider()


def cheap_agent() -> ChatAgent:
    return ChatAgent(provider=ScriptedProvider(scores=cheap_scores), memory="none")


def held_out_agreement(frame: pd.DataFrame, labels: pd.Series, report: CascadeReport) -> float:
    """How often the cheap answers kept on rows outside the sample agree with what the strong model says."""
    sampled = {frame.index[i] for i in report.sampled}
    kept = [name for name in frame.index[frame["answered_by"] == "first"] if name not in sampled]
    return sum(labels[name] == strong_label(frame.at[name, "input"]) for name in kept) / len(kept)


def test_the_kept_cheap_answers_meet_the_target_on_held_out_rows_with_fewer_strong_calls(
    strong: ScriptedProvider,
) -> None:
    df = reviews()
    cascade = Cascade(first=cheap_agent(), then=ChatAgent(provider=strong), target=0.9, confidence=0.95)
    labels = df.aiforge.classify("{review}", labels=LABELS, cascade=cascade)
    report = labels.attrs["aiforge"].cascade
    frame = labels.attrs["aiforge"].to_dataframe()
    assert report.by_first > 200 and report.by_first + report.by_then == len(df)
    assert len(strong.calls) == report.by_then < len(df)  # strong-only asks it 600 times
    assert held_out_agreement(frame, labels, report) >= 0.9
    assert report.lower_bound >= 0.9 and report.agreement >= report.lower_bound


def test_sample_rows_are_answered_by_the_strong_model_once(strong: ScriptedProvider) -> None:
    df = reviews(300)
    cascade = Cascade(first=cheap_agent(), sample=120)  # then=None: the agent run_batch is called on
    batch = ChatAgent(provider=strong).run_batch(
        df["review"], max_batch=300, output=Literal["pos", "neg"], cascade=cascade
    )
    asked = [call.last_user_message for call in strong.calls]
    assert len(asked) == len(set(asked)) == batch.cascade.by_then
    assert len(batch.cascade.sampled) == 120 == batch.cascade.calibrated_on
    assert all(batch.cascade.answered_by[i] == "then" for i in batch.cascade.sampled)


def test_rows_keep_their_index_labels_and_say_which_model_answered(strong: ScriptedProvider) -> None:
    df = reviews(300)
    labels = df.aiforge.classify(
        "{review}", labels=LABELS, cascade=Cascade(first=cheap_agent(), then=ChatAgent(provider=strong))
    )
    frame = labels.attrs["aiforge"].to_dataframe()
    assert list(labels.index) == list(df.index) == list(frame.index)
    assert set(frame["answered_by"]) == {"first", "then"}
    assert (frame.loc[frame["answered_by"] == "first", "model"] == "scripted-model").all()
    first = frame.index[frame["answered_by"] == "first"][0]
    assert labels[first] == max(cheap_scores([{"role": "user", "content": df.at[first, "review"]}]).items(),
                                key=lambda kv: kv[1])[0]


def test_a_row_with_a_missing_value_fails_without_a_call_to_either_model(strong: ScriptedProvider) -> None:
    df = reviews(300)
    df.loc["r7", "review"] = None
    scorer = ScriptedProvider(scores=cheap_scores)
    cascade = Cascade(first=ChatAgent(provider=scorer), then=ChatAgent(provider=strong))
    with pytest.warns(FailedRowsWarning, match=r"^1 of 300 rows failed \(first: MissingValueError: missing value"):
        labels = df.aiforge.classify("{review}", labels=LABELS, cascade=cascade)
    batch = labels.attrs["aiforge"]
    assert [f.index for f in batch.failed] == ["r7"] and pd.isna(labels["r7"])
    assert len(scorer.calls) == 299 and len(strong.calls) == batch.cascade.by_then
    assert batch.cascade.answered_by[7] is None and pd.isna(batch.to_dataframe().at["r7", "answered_by"])


def test_a_row_the_strong_model_fails_on_is_failed_once_and_the_rest_still_calibrate() -> None:
    from aiforge.core.types import ProviderError

    def flaky(messages: list[Message]) -> Any:
        if parts(messages[-1]["content"])[0] % 25 == 0:
            raise ProviderError("upstream 500", provider="scripted")
        return strong_reply(messages)

    strong = ScriptedProvider(default=flaky)
    df = reviews(300)
    cascade = Cascade(first=cheap_agent(), then=ChatAgent(provider=strong, MAX_RETRIES=0))
    with pytest.warns(FailedRowsWarning, match=r"rows failed \(first: ProviderError: upstream 500"):
        batch = df.aiforge.classify("{review}", labels=LABELS, cascade=cascade).attrs["aiforge"]
    asked = [call.last_user_message for call in strong.calls]
    failed = {f.input for f in batch.failed}
    assert failed and all(parts(text)[0] % 25 == 0 for text in failed) and len(asked) == len(set(asked))
    assert all(isinstance(f.error, ProviderError) for f in batch.failed)
    report = batch.cascade
    failed_in_sample = [i for i in report.sampled if parts(df["review"].iloc[i])[0] % 25 == 0]
    assert report.calibrated_on == 200 - len(failed_in_sample)  # calibrated on the answers it has
    assert report.by_first > 0 and len(batch.results) == 300 - len(failed)
    # A row the strong model failed on keeps the cheap answer when that is confident enough, like any other.
    assert {report.answered_by[i] for i in failed_in_sample} == {None, "first"}


def test_a_sample_where_no_threshold_passes_sends_every_row_to_the_strong_model(strong: ScriptedProvider) -> None:
    coin = ScriptedProvider(scores=lambda messages: {"pos": 0.6, "neg": 0.4})  # "pos" always: wrong half the time
    df = reviews(200)
    cascade = Cascade(first=ChatAgent(provider=coin), then=ChatAgent(provider=strong), sample=60)
    batch = df.aiforge.classify("{review}", labels=LABELS, cascade=cascade).attrs["aiforge"]
    assert batch.cascade.threshold == math.inf and batch.cascade.by_first == 0
    assert len(strong.calls) == 200 and "no threshold reached the target" in str(batch.cascade)


def test_a_truth_column_calibrates_without_asking_the_strong_model_about_the_sample(strong: ScriptedProvider) -> None:
    df = reviews()
    cascade = Cascade(first=cheap_agent(), then=ChatAgent(provider=strong), truth="label")
    batch = df.aiforge.classify("{review}", labels=LABELS, cascade=cascade).attrs["aiforge"]
    assert batch.cascade.reference == "truth:label" and batch.cascade.calibrated_on == 200
    assert len(strong.calls) == batch.cascade.by_then < len(df) - 200
    assert batch.cascade.lower_bound >= 0.9


def test_the_same_seed_draws_the_same_sample_and_another_seed_another(strong: ScriptedProvider) -> None:
    df = reviews(300)
    runs = [
        df.aiforge.classify(
            "{review}", labels=LABELS, cascade=Cascade(first=cheap_agent(), then=ChatAgent(provider=strong), seed=seed)
        ).attrs["aiforge"].cascade
        for seed in (1, 1, 2)
    ]
    assert runs[0].sampled == runs[1].sampled != runs[2].sampled
    assert runs[0].threshold == runs[1].threshold


def test_filter_cascades_on_true_and_false(strong: ScriptedProvider) -> None:
    def says_yes(messages: list[Message]) -> dict[str, float]:
        scores = cheap_scores(messages)
        return {"true": scores["pos"], "false": scores["neg"]}

    yes = ScriptedProvider(default=lambda messages: structured(strong_label(messages[-1]["content"]) == "pos"))
    df = reviews(400)
    kept = df.aiforge.filter(
        "{review}",
        cascade=Cascade(first=ChatAgent(provider=ScriptedProvider(scores=says_yes)), then=ChatAgent(provider=yes)),
    )
    report = kept.attrs["aiforge"].cascade
    assert report.by_first > 0 and len(yes.calls) == report.by_then
    assert 0 < len(kept) < len(df) and set(kept.index) <= set(df.index)


class Mood(enum.Enum):
    POSITIVE = "pos"
    NEGATIVE = "neg"


def test_map_with_an_enum_output_cascades_on_its_values(strong: ScriptedProvider) -> None:
    df = reviews(300)
    out = df.aiforge.map("{review}", output=Mood, cascade=Cascade(first=cheap_agent(), then=ChatAgent(provider=strong)))
    assert out.attrs["aiforge"].cascade.by_first > 0
    assert set(out["output"].dropna()) == {"pos", "neg"}


def test_the_report_prices_what_the_cascade_saved_against_the_strong_model_alone() -> None:
    billed = ScriptedProvider(default=strong_reply, model="gpt-4o")
    scorer = ScriptedProvider(scores=cheap_scores, model="gpt-4o-mini")
    billed.free = scorer.free = False
    df = reviews(300)
    cheap = ChatAgent(provider=scorer)
    batch = df.aiforge.classify(
        "{review}", labels=LABELS, cascade=Cascade(first=cheap, then=ChatAgent(provider=billed))
    ).attrs["aiforge"]
    report = batch.cascade
    strong_rows = [r for r in batch.results if r.model == "gpt-4o"]
    per_row = sum(r.cost for r in strong_rows) / len(strong_rows)
    assert report.then_cost_per_row == pytest.approx(per_row)
    assert report.first_cost == pytest.approx(cheap.cost_tracker.session_total)  # every row scored, kept or not
    assert report.first_cost > 0
    assert cheap.cost_tracker.calls == 300
    assert len(scorer.calls) == 300
    assert report.saved == pytest.approx(per_row * report.by_first - report.first_cost) and report.saved > 0
    assert batch.total_cost == pytest.approx(report.then_cost + report.first_cost)
    assert batch.total_tokens == cheap.cost_tracker.total_tokens + sum(
        r.input_tokens + r.output_tokens for r in strong_rows
    )
    assert f"saved ${report.saved:.4f} against gpt-4o on every row" in str(report)
    assert "<b>Cascade</b>" in batch._repr_html_()
    cascade_saving = batch.saved.by_source["cascade"]  # BatchResult.saved counts what the cascade kept from gpt-4o
    assert cascade_saving.requests == report.by_first and cascade_saving.dollars == pytest.approx(report.saved)


@pytest.fixture
def srv() -> Iterator[LLMServer]:
    def answer(request: RecordedRequest) -> Reply:
        text = request.messages[-1]["content"]
        return Reply(text=f'{{"value": "{strong_label(text)}"}}', usage={"input_tokens": 200, "output_tokens": 5})

    with LLMServer(default=answer) as server:
        yield server


def test_the_strong_model_over_http_is_asked_only_the_rows_the_cheap_one_did_not_keep(srv: LLMServer) -> None:
    strong = ChatAgent(
        provider="openai", MODEL="gpt-4o", OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=srv.openai_base_url,
        MAX_RETRIES=0, memory="none",
    )
    df = reviews(300, easy_share=0.7)
    cascade = Cascade(first=cheap_agent(), then=strong, sample=100)
    labels = df.aiforge.classify("{review}", labels=LABELS, cascade=cascade)
    report = labels.attrs["aiforge"].cascade
    assert srv.request_count == report.by_then < 300 and report.by_first > 100
    price = lookup_price("gpt-4o")
    assert price is not None and report.then_cost_per_row == pytest.approx(price.cost_of(Usage(200, 5)))
    assert labels.isna().sum() == 0


def test_a_cheap_model_that_cannot_score_labels_is_a_usage_error_naming_those_that_can(srv: LLMServer) -> None:
    claude = ChatAgent(provider="anthropic", ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=srv.anthropic_base_url)
    with pytest.raises(UsageError, match=r"the anthropic provider cannot score labels.*local.*openai.*scripted"):
        reviews(20).aiforge.classify("{review}", labels=LABELS, cascade=Cascade(first=claude, then=cheap_agent()))
    assert srv.request_count == 0


@pytest.mark.parametrize("output", [None, str, dict[str, int]])
def test_a_cascade_needs_a_label_output(strong: ScriptedProvider, output: Any) -> None:
    with pytest.raises(UsageError, match="cascade= answers labels"):
        ChatAgent(provider=strong).run_batch(["a", "b"], output=output, cascade=Cascade(first=cheap_agent()))
    assert strong.calls == []


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"target": 1.0}, r"target=\.\.\.\) must be a number strictly between 0 and 1"),
        ({"target": 0}, "target"),
        ({"confidence": 1.5}, "confidence"),
        ({"confidence": True}, "confidence"),
        ({"sample": 5}, r"sample=\.\.\.\) must be an integer >= 10"),
        ({"first": "gpt-4o-mini"}, r'first=\.\.\.\) takes an agent \(a ChatAgent\), "local" or "proxy"'),
        ({"then": "gpt-4o"}, r"then=\.\.\.\) takes an agent"),
    ],
)
def test_bad_cascade_arguments_are_usage_errors_naming_them(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        Cascade(**{"first": cheap_agent(), **arguments})


def test_a_checkpoint_with_a_cascade_is_a_usage_error(strong: ScriptedProvider, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cascade= does not combine with checkpoint="):
        ChatAgent(provider=strong).run_batch(
            ["a"], output=bool, checkpoint=tmp_path / "c.sqlite", cascade=Cascade(first=cheap_agent())
        )


def test_a_truth_column_must_exist_and_hold_the_labels(strong: ScriptedProvider) -> None:
    df = reviews(30).assign(label=lambda d: d["label"].replace({"pos": "great"}))
    cascade = Cascade(first=cheap_agent(), then=ChatAgent(provider=strong), truth="label")
    with pytest.raises(UsageError, match=r"has the label 'great', which is not one of \['pos', 'neg'\]"):
        df.aiforge.classify("{review}", labels=LABELS, cascade=cascade)
    with pytest.raises(UsageError, match="the DataFrame has no such column"):
        df.aiforge.classify("{review}", labels=LABELS, cascade=dataclasses.replace(cascade, truth="gold"))


def test_cascade_is_exported_and_not_a_run_batch_typo() -> None:
    assert aiforge.Cascade is Cascade
    with pytest.raises(UsageError, match="cascade= takes an aiforge.Cascade"):
        options: dict[str, Any] = {"cascade": "cheap"}
        ChatAgent(provider=ScriptedProvider()).run_batch(["a"], output=bool, **options)


def test_scripted_score_labels_gives_the_next_reply_its_confidence() -> None:
    import asyncio

    from aiforge.core.types import CallParams

    fake = ScriptedProvider(["neg", structured("pos")], confidence=0.8)
    messages: list[Message] = [{"role": "user", "content": "x"}]
    first = asyncio.run(fake.score_labels(messages, ["pos", "neg", "meh"], CallParams(model="m")))
    second = asyncio.run(fake.score_labels(messages, ["pos", "neg", "meh"], CallParams(model="m")))
    assert first.answer == "neg" and first.confidence == pytest.approx(0.8)
    assert first.probabilities["pos"] == pytest.approx(0.1) and second.answer == "pos"
    assert len(fake.calls) == 2 and fake.scores_labels


def test_a_repeated_review_gets_one_label_and_is_scored_and_asked_once(strong: ScriptedProvider) -> None:
    # Each text three times: a copy of a sampled review once kept the cheap answer while the sample row had the
    # strong one (two labels for one review), and the cheap pass paid every copy.
    base = reviews(200)
    df = pd.concat([base, base, base])
    df.index = [f"{name}-{copy}" for copy in range(3) for name in base.index]
    scorer = ScriptedProvider(scores=cheap_scores)
    labels = df.aiforge.classify(
        "{review}", labels=LABELS,
        cascade=Cascade(first=ChatAgent(provider=scorer, memory="none"), then=ChatAgent(provider=strong), sample=100),
    )
    assert len(scorer.calls) == 200  # every distinct review scored once
    assert len(strong.calls) <= 200  # every distinct review asked at most once
    by_text = pd.DataFrame({"text": df["review"], "label": labels}).groupby("text")["label"].nunique()
    assert (by_text == 1).all()
    report = labels.attrs["aiforge"].cascade
    assert report.by_first + report.by_then == 600


def test_a_strong_model_that_fails_every_row_leaves_failed_rows_not_a_nan_error() -> None:
    # Every strong answer failed: the report's cost per strong row was nan, and saved= turned it into
    # "UsageError: Savings.dollars must be a number of USD >= 0, got nan" after the whole run.
    broken = ScriptedProvider(default="not a label at all")
    with pytest.warns(FailedRowsWarning, match=r"of 60 rows failed \(first: OutputValidationError"):
        batch = reviews(60).aiforge.classify(
            "{review}", labels=LABELS,
            cascade=Cascade(first=cheap_agent(), then=ChatAgent(provider=broken, output_retries=0), sample=58),
        ).attrs["aiforge"]
    report = batch.cascade
    assert all("OutputValidationError" in type(f.error).__name__ for f in batch.failed)
    assert len(batch.failed) + report.by_first == 60 and not math.isnan(batch.saved.dollars)


def test_the_guarantee_is_over_rows_a_confidently_wrong_text_repeated_on_half_the_rows_is_not_kept() -> None:
    # Sampling distinct texts weighed "good spam" (scored 0.99, wrong, on 400 of 800 rows) as one sample row: most
    # seeds kept it, and the kept rows agreed 0.43 with the strong model under a reported bound of 0.97.
    def label(text: str) -> str:
        return "pos" if "good" in text else "neg"

    def scores(messages: list[Message]) -> dict[str, float]:
        text = str(messages[-1]["content"])
        if text == "good spam":
            return {"neg": 0.99, "pos": 0.01}
        return {label(text): 0.95, ("neg" if label(text) == "pos" else "pos"): 0.05}

    texts = [f"{'good' if i % 2 else 'bad'} {i}" for i in range(400)] + ["good spam"] * 400
    strong = ScriptedProvider(default=lambda messages: structured(label(str(messages[-1]["content"]))))
    for seed in range(4):
        batch = ChatAgent(provider=strong, memory="none").run_batch(
            texts, output=Literal["pos", "neg"], max_batch=800,
            cascade=Cascade(first=ChatAgent(provider=ScriptedProvider(scores=scores)), sample=100, seed=seed),
        )
        frame = batch.to_dataframe()
        kept = frame[frame["answered_by"] == "first"]
        assert kept.empty or (kept["output"] == kept["input"].map(label)).mean() >= 0.9


def test_dedup_false_scores_and_asks_every_row() -> None:
    scorer = ScriptedProvider(scores=cheap_scores)
    df = pd.concat([reviews(40), reviews(40)])
    df.index = range(80)
    df.aiforge.classify(
        "{review}", labels=LABELS, dedup=False,
        cascade=Cascade(first=ChatAgent(provider=scorer, memory="none"), then=ChatAgent(provider=strong_provider()),
                        sample=58),
    )
    assert len(scorer.calls) == 80


def test_a_sample_too_small_for_any_threshold_to_pass_is_a_usage_error_before_anything_is_paid() -> None:
    # target 0.99 at 95 % needs 299 agreeing rows for the bound to reach it; the first threshold keeps twice that.
    with pytest.raises(UsageError, match=r"Cascade\(sample=200\) can never keep a row.*needs 598 sample rows"):
        Cascade(first=cheap_agent(), target=0.99)


def test_the_cheap_pass_draws_a_bar_over_the_distinct_rows_it_scores(
    strong: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cheap pass was silent: about 50 s of nothing on the embedded model in tutorial 13.
    from tests.support.bars import record_bars

    bars = record_bars(monkeypatch)
    df = reviews(100)
    cascade = Cascade(first=cheap_agent(), then=ChatAgent(provider=strong))
    df.aiforge.classify("{review}", labels=LABELS, cascade=cascade)
    assert (bars[0].total, bars[0].counted) == (100, 100)  # then the strong model's own bars


def test_requests_are_what_both_models_were_sent_once_per_distinct_prompt(strong: ScriptedProvider) -> None:
    """A kept row is not a strong request; the cheap model scores each distinct prompt once (rows repeat here)."""
    df = pd.concat([reviews(300), reviews(300)], ignore_index=True)
    cheap = cheap_agent()
    cascade = Cascade(first=cheap, then=ChatAgent(provider=strong), target=0.9, confidence=0.95)
    batch = df.aiforge.classify("{review}", labels=LABELS, cascade=cascade, cache=False).attrs["aiforge"]
    scored = len(cheap.provider.calls)
    assert scored == df["review"].nunique() == 300
    assert batch.requests == scored + len(strong.calls) < len(df)
