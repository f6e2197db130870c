"""Batches (aiforge.batch) and BatchResult: order, partial failure, exact concurrency bound, inputs, rows, views."""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd
import pytest
from pydantic import BaseModel, Field

from aiforge.batch.options import BatchOptions
from aiforge.batch.orchestrator import run_items_sync
from aiforge.batch.owner import RequestContext
from aiforge.chat.agent import ChatAgent
from aiforge.chat.response import BATCH_COLUMNS
from aiforge.chat.setup import AgentSetup
from aiforge.core.costs import CostTracker
from aiforge.core.errors import MissingValueError
from aiforge.core.types import CallParams, ProviderError, RateLimitError, UsageError
from aiforge.modules.base import BaseModule, BatchResult
from aiforge.providers.scripted import ScriptedProvider
from tests.support.bars import record_bars


class CountingProvider(ScriptedProvider):
    """Scripted replies that track how many calls are in flight at once."""

    def __init__(self, fail_on: set[str] = frozenset(), delay: float = 0.01) -> None:
        super().__init__(default=lambda messages: f"answer to {messages[-1]['content']}")
        self.fail_on = fail_on
        self.in_flight = 0
        self.max_in_flight = 0
        self.pause = delay

    async def complete(self, messages, tools, params):
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            # Later items finish first, so ordering is really tested.
            await asyncio.sleep(self.pause / (1 + len(messages[-1]["content"]) % 5))
            if messages[-1]["content"] in self.fail_on:
                raise RateLimitError("slow down", provider="counting", status_code=429)
            return await super().complete(messages, tools, params)
        finally:
            self.in_flight -= 1


def test_batch_results_come_back_in_input_order() -> None:
    agent = ChatAgent(provider=CountingProvider())
    items = [f"q{i}" * (i % 4 + 1) for i in range(25)]
    batch = agent.run_batch(items, concurrency=6)
    assert [r.message for r in batch.results] == [f"answer to {q}" for q in items]
    assert batch.indices == list(range(25))


def test_failed_items_are_reported_and_never_lose_the_others() -> None:
    agent = ChatAgent(provider=CountingProvider(fail_on={"b", "d"}))
    batch = agent.run_batch(["a", "b", "c", "d", "e"], concurrency=2)
    assert [r.message for r in batch.results] == ["answer to a", "answer to c", "answer to e"]
    assert [(f.index, f.input, type(f.error)) for f in batch.failed] == [
        (1, "b", RateLimitError),
        (3, "d", RateLimitError),
    ]
    frame = batch.to_dataframe()
    assert list(frame["input"]) == ["a", "b", "c", "d", "e"]
    assert frame["error"].notna().tolist() == [False, True, False, True, False]


@pytest.mark.parametrize("concurrency", [1, 3, 10])
def test_concurrency_is_bounded_exactly(concurrency: int) -> None:
    provider = CountingProvider()
    ChatAgent(provider=provider).run_batch([f"item {i}" for i in range(30)], concurrency=concurrency)
    assert provider.max_in_flight == concurrency


def test_batch_items_do_not_share_memory_or_the_agent_history() -> None:
    provider = CountingProvider()
    agent = ChatAgent(provider=provider)
    agent.run_batch(["one", "two"], concurrency=1)
    assert all(len(call.messages) == 2 for call in provider.calls)  # system + the item only
    assert agent.history == []


def test_batch_totals_add_up() -> None:
    batch = ChatAgent(provider=CountingProvider()).run_batch(["a", "bb", "ccc"])
    assert batch.total_tokens == sum(r.input_tokens + r.output_tokens for r in batch.results) > 0
    assert batch.total_cost == 0.0


def test_batch_accepts_a_pandas_series() -> None:
    import pandas as pd

    batch = ChatAgent(provider=CountingProvider()).run_batch(pd.Series(["x", "y"]))
    assert [r.message for r in batch.results] == ["answer to x", "answer to y"]


def test_more_items_than_max_batch_is_an_error_not_a_truncation() -> None:
    agent = ChatAgent(provider=CountingProvider())
    with pytest.raises(ValueError, match="max_batch=2"):
        agent.run_batch(["a", "b", "c"], max_batch=2)


@pytest.mark.parametrize("items", ["just a string", [1, 2], None])
def test_bad_batch_inputs_are_value_errors(items: object) -> None:
    with pytest.raises(ValueError):
        ChatAgent(provider=CountingProvider()).run_batch(items)  # type: ignore[arg-type]


@pytest.mark.parametrize("concurrency", [0, -1, 1.5, True])
def test_bad_concurrency_is_a_value_error(concurrency: object) -> None:
    with pytest.raises(ValueError, match="concurrency"):
        ChatAgent(provider=CountingProvider()).run_batch(["a"], concurrency=concurrency)  # type: ignore[arg-type]


def test_run_batch_works_inside_a_running_loop() -> None:
    async def cell() -> list[str]:
        batch = ChatAgent(provider=CountingProvider()).run_batch(["a", "b"])
        return [r.message for r in batch.results]

    assert asyncio.run(cell()) == ["answer to a", "answer to b"]


def test_empty_batch_is_fine() -> None:
    batch = ChatAgent(provider=CountingProvider()).run_batch([])
    assert (batch.results, batch.failed, len(batch.to_dataframe())) == ([], [], 0)


def agent_with(*replies: Any, **kwargs: Any) -> ChatAgent:
    return ChatAgent(provider=ScriptedProvider(replies), **kwargs)


# --- BatchResult -----------------------------------------------------------------------------------------------------


@pytest.fixture
def batch() -> BatchResult:
    agent = agent_with("A", ProviderError("overloaded", provider="openai", status_code=529), "C")
    return agent.run_batch(["first", "second", "third"], concurrency=1)


def test_batch_dataframe_has_one_row_per_input_in_input_order(batch: BatchResult) -> None:
    frame = batch.to_dataframe()
    assert (
        list(frame.columns)
        == BATCH_COLUMNS
        == [
            "input",
            "message",
            "model",
            "input_tokens",
            "output_tokens",
            "cached_tokens",
            "cost",
            "priced",
            "latency_ms",
            "iterations",
            "tool_calls",
            "error",
            "trace_id",
            "cached",
            "truncated",
            "packed",
            "confidence",
        ]
    )
    assert str(frame["cached_tokens"].dtype) == "Int64"  # nothing read from a prompt cache: 0, a failed row too
    assert list(frame["cached_tokens"]) == [0, 0, 0]
    assert str(frame["confidence"].dtype) == "Float64" and frame["confidence"].isna().all()  # generated, not scored
    assert list(frame["input"]) == ["first", "second", "third"]
    assert frame["message"][0] == "A" and pd.isna(frame["message"][1]) and frame["message"][2] == "C"
    assert frame["error"][1].startswith("ProviderError: overloaded")
    assert pd.isna(frame["error"][0]) and pd.isna(frame["error"][2])
    assert frame["trace_id"][0] and frame["trace_id"][0] != frame["trace_id"][2]


def test_batch_markdown_and_repr_summarise_it(batch: BatchResult) -> None:
    assert batch._repr_markdown_().startswith("**Batch** · 2/3 ok · 1 failed · ")
    assert repr(batch).startswith("BatchResult(items=3, ok=2, requests=3, failed=1, total_tokens=")


def test_batch_has_an_html_repr(batch: BatchResult) -> None:
    assert "2/3" in batch._repr_html_()


def test_batch_progress_bar_follows_the_setting_and_tqdm_disable(monkeypatch: pytest.MonkeyPatch) -> None:
    bars = record_bars(monkeypatch)
    agent_with().run_batch(["a", "b"])
    assert [bar.total for bar in bars] == [2]
    agent_with(PROGRESS_BAR=False).run_batch(["a", "b"])
    monkeypatch.setenv("TQDM_DISABLE", "1")
    agent_with().run_batch(["a", "b"])
    assert [bar.total for bar in bars] == [2]


def test_a_resumed_batch_bar_starts_at_the_rows_it_already_has(monkeypatch: pytest.MonkeyPatch) -> None:
    bars = record_bars(monkeypatch)
    frame = pd.DataFrame({"review": ["good", None, "bad", None]})
    agent_with().run_batch(frame, prompt="Review: {review}")
    # The two missing-value rows fail without a call: shown from the first frame, then the two that ran.
    assert [(bar.initial, bar.counted) for bar in bars] == [(2, 4)]


# --- BatchResult of another module -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Length:
    """A result that is not a ChatResponse: the rows of its batches are its own."""

    chars: int
    cost: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0

    def to_row(self) -> dict[str, Any]:
        return {"chars": self.chars, "error": None}

    @classmethod
    def failed_row(cls, error: str) -> dict[str, Any]:
        return {"chars": None, "error": error}


class Measure:
    """A module of its own: a class with what ``aiforge.batch`` needs of its owner (``BatchOwner``) runs batches."""

    response_cache = None

    def __init__(self, provider: str) -> None:
        setup = AgentSetup.of(quality=None, provider=provider, cache=None, overrides={})
        self.settings, self.provider, self.provider_name, self.model = (
            setup.settings, setup.provider, setup.provider_name, setup.model
        )
        self.cost_tracker = CostTracker()

    def result_type(self) -> type:
        return Length

    @property
    def request_context(self) -> RequestContext:
        return RequestContext(
            self.provider, self.provider_name, self.model, self.settings, "", (), CallParams(model=self.model)
        )

    async def arun_batch_item(self, text: str, *, output: Any = None, cache: Any = None) -> Length:
        if text == "boom":
            raise ValueError("no length")
        return Length(len(text), input_tokens=len(text))

    def run_batch(self, items: list[str]) -> BatchResult:
        return run_items_sync(self, items, BatchOptions())


def test_a_batch_shows_the_rows_its_result_type_gives() -> None:
    batch = Measure(provider="scripted").run_batch(["ab", "boom", "abcd"])
    frame = batch.to_dataframe()
    assert list(frame.columns) == ["input", "chars", "error"]
    assert list(frame["chars"][[0, 2]]) == [2, 4] and pd.isna(frame["chars"][1])
    assert frame["error"][1] == "ValueError: no length"
    assert batch.total_tokens == 6


def test_a_module_whose_result_type_lays_out_no_row_cannot_batch() -> None:
    class Untyped(Measure):
        def result_type(self) -> type:
            return str

    with pytest.raises(TypeError, match=r"Untyped.result_type\(\) must return a type with to_row\(\)"):
        Untyped(provider="scripted").run_batch(["a"])


def test_chat_agent_offers_the_base_module_interface() -> None:
    assert isinstance(ChatAgent(provider="scripted"), BaseModule)
    assert not isinstance(Measure(provider="scripted"), BaseModule)  # no run/arun/streams: batches only


# --- batches over DataFrame rows -------------------------------------------------------------------------------------


def last_user_text(messages: list[dict[str, Any]]) -> str:
    return next(m["content"] for m in reversed(messages) if m["role"] == "user")


class Stars(BaseModel):
    sentiment: Literal["pos", "neg"]
    stars: int
    error: str | None = None


REVIEWS = pd.DataFrame(
    {"review": ["Great kettle", "Broke in a week", "Fine", "Lovely"], "product": ["kettle", "toaster", "mug", "pan"]},
    index=pd.Index([101, 102, 103, 104], name="id"),
)


def stars_reply(messages: list[dict[str, Any]]) -> str:
    """A structured answer per row: bad reviews are negative, "Fine" gets JSON of the wrong shape."""
    text = last_user_text(messages)
    if "Fine" in text:
        return '{"sentiment": "meh"}'
    negative = "Broke" in text
    return json.dumps({"sentiment": "neg" if negative else "pos", "stars": 1 if negative else 5})


def test_a_prompt_template_is_filled_from_each_dataframe_row() -> None:
    provider = ScriptedProvider(default=lambda m: last_user_text(m).upper())
    batch = ChatAgent(provider=provider).run_batch(REVIEWS, prompt="Review of the {product}: {review}")
    assert sorted(call.last_user_message for call in provider.calls) == sorted(
        f"Review of the {p}: {r}" for r, p in zip(REVIEWS["review"], REVIEWS["product"], strict=True)
    )
    assert [r.message for r in batch.results][0] == "REVIEW OF THE KETTLE: GREAT KETTLE"


def test_an_unknown_template_column_is_a_value_error_before_any_call() -> None:
    provider = ScriptedProvider()
    with pytest.raises(ValueError, match="'stars'") as info:
        ChatAgent(provider=provider).run_batch(REVIEWS, prompt="{review} ({stars} stars)")
    assert "Columns: review, product" in str(info.value)
    assert provider.calls == []


def test_a_template_that_names_no_column_is_refused() -> None:
    with pytest.raises(ValueError, match="names no column"):
        ChatAgent(provider=ScriptedProvider()).run_batch(REVIEWS, prompt="Classify it")


def test_several_columns_without_a_prompt_is_a_value_error_naming_them_and_both_ways() -> None:
    provider = ScriptedProvider()
    with pytest.raises(ValueError) as info:
        ChatAgent(provider=provider).run_batch(REVIEWS)
    message = str(info.value)
    assert "Columns: review, product" in message and "prompt='Classify: {review}'" in message
    assert "df['review']" in message
    assert provider.calls == []


def test_a_one_column_dataframe_needs_no_prompt() -> None:
    batch = agent_with().run_batch(REVIEWS[["review"]])
    assert [r.message for r in batch.results] == [f"You said: {r}" for r in REVIEWS["review"]]


def test_series_values_are_value_and_the_series_name() -> None:
    provider = ScriptedProvider()
    agent = ChatAgent(provider=provider)
    agent.run_batch(REVIEWS["review"].head(1), prompt="{value} / {review}")
    agent.run_batch(["a"], prompt="<{value}>")
    assert [call.last_user_message for call in provider.calls] == ["Great kettle / Great kettle", "<a>"]


def test_values_other_than_strings_need_a_template() -> None:
    numbers = pd.Series([3, 4])
    with pytest.raises(ValueError, match=r"item 0 is int.*\{value\}"):
        agent_with().run_batch(numbers)
    batch = agent_with().run_batch(numbers, prompt="Square {value}")
    assert [r.message for r in batch.results] == ["You said: Square 3", "You said: Square 4"]


def test_missing_values_fail_their_row_without_a_call_and_the_others_run() -> None:
    provider = ScriptedProvider()
    frame = pd.DataFrame(
        {"review": ["ok", None, math.nan, "good"], "product": ["mug", "pan", "cup", pd.NA]},
        index=["a", "b", "c", "d"],
    ).astype({"product": "string"})
    batch = ChatAgent(provider=provider).run_batch(frame, prompt="{review} {product}")
    assert [call.last_user_message for call in provider.calls] == ["ok mug"]
    assert [(f.index, f.position, str(f.error)) for f in batch.failed] == [  # labels, as to_dataframe() shows
        ("b", 1, "missing value: review"),
        ("c", 2, "missing value: review"),
        ("d", 3, "missing value: product"),
    ]
    assert all(isinstance(f.error, MissingValueError) for f in batch.failed)
    errors = batch.to_dataframe()["error"]
    assert errors["b"] == "MissingValueError: missing value: review" and pd.isna(errors["a"])


@pytest.mark.parametrize(
    ("items", "column"),
    [
        (["a", None, "c"], "value"),
        (pd.Series(["a", pd.NA, "c"], name="text"), "text"),
        ([" a", math.nan, "c"], "value"),
    ],
)
def test_a_missing_item_fails_with_its_column(items: Any, column: str) -> None:
    provider = ScriptedProvider()
    batch = ChatAgent(provider=provider).run_batch(items)
    assert len(provider.calls) == 2
    assert [(f.index, str(f.error)) for f in batch.failed] == [(1, f"missing value: {column}")]


def test_the_dataframe_keeps_the_input_index_also_after_filtering() -> None:
    subset = REVIEWS[REVIEWS["product"] != "toaster"]
    frame = agent_with().run_batch(subset, prompt="{review}").to_dataframe()
    assert list(frame.index) == [101, 103, 104] and frame.index.name == "id"
    assert list(frame.columns) == BATCH_COLUMNS
    joined = subset.join(frame[["message"]])
    assert joined.loc[103, "message"] == "You said: Fine"


def test_output_adds_one_typed_column_per_field_and_failed_rows_are_null() -> None:
    agent = ChatAgent(provider=ScriptedProvider(default=stars_reply), output_retries=0)
    batch = agent.run_batch(REVIEWS, prompt="{review}", output=Stars)
    frame = batch.to_dataframe()
    assert list(frame.columns) == [
        "input",
        "sentiment",
        "stars",
        "error",
        *BATCH_COLUMNS[1:11],
        "batch_error",
        "trace_id",
        "cached",
        "truncated",
        "packed",
        "confidence",
    ]
    assert frame.dtypes[["sentiment", "stars", "error"]].astype(str).tolist() == ["category", "Int64", "string"]
    assert frame["sentiment"].cat.categories.tolist() == ["pos", "neg"]
    assert frame.loc[102, "sentiment"] == "neg" and frame.loc[102, "stars"] == 1
    assert frame.loc[103, ["sentiment", "stars", "error"]].isna().all()
    assert frame.loc[103, "batch_error"].startswith("OutputValidationError")
    assert [(f.index, f.position) for f in batch.failed] == [(103, 2)]  # the label the frame shows the error at
    assert type(batch.failed[0].index) is int and repr(batch.failed[0]).startswith("BatchFailure(index=103,")
    assert "#103: OutputValidationError" in batch._repr_html_()


def test_a_scalar_output_is_one_output_column() -> None:
    agent = ChatAgent(provider=ScriptedProvider(default=lambda m: json.dumps("Broke" not in last_user_text(m))))
    frame = agent.run_batch(REVIEWS["review"], output=bool).to_dataframe()
    assert list(frame.columns[:2]) == ["input", "output"] and str(frame["output"].dtype) == "boolean"
    assert frame["output"].tolist() == [True, False, True, True]
    assert [r.output for r in agent.run_batch(["Broke"], output=bool).results] == [False]


class _Impossible(BaseModel):
    rating: int = Field(ge=5, le=1)


class _Review(BaseModel):
    sentiment: str


@pytest.mark.parametrize(
    ("output", "says"),
    [
        ("int", "got the str 'int'"),
        (3, "got a int value"),
        (_Impossible, "no integer is >= 5 and <= 1"),
        (_Review(sentiment="pos"), "pass the class _Review, not an instance"),
    ],
)
def test_a_bad_output_fails_the_batch_once_before_any_request(output: object, says: str) -> None:
    from aiforge.core.types import UsageError

    provider = ScriptedProvider()
    agent = ChatAgent(provider=provider)
    with pytest.raises(UsageError, match=says):
        agent.run_batch(["a", "b", "c"], output=output)
    with pytest.raises(UsageError, match=says):
        pd.DataFrame({"review": ["a", "b"]}).aiforge.map("{review}", output=output, provider=provider)
    with pytest.raises(UsageError, match=says):
        agent.chat("a", output=output)
    with pytest.raises(UsageError, match=says):
        agent.stream_turn("a", output=output)
    assert provider.calls == [] and agent.history == []


def test_an_unknown_run_batch_option_is_one_usage_error_naming_the_option_meant() -> None:
    agent = ChatAgent(provider="scripted", memory="none")
    with pytest.raises(UsageError, match=r"unknown option max_costs=; did you mean max_cost=\?"):
        agent.run_batch(["a"], max_costs=1)  # type: ignore[call-arg]


def test_an_unknown_run_batch_option_is_named_without_its_value_which_may_be_a_key() -> None:
    agent = ChatAgent(provider="scripted", memory="none")
    with pytest.raises(UsageError, match="unknown option OPENAI_API_KEY=") as raised:
        agent.run_batch(["a"], OPENAI_API_KEY="sk-proj-SECRETSECRET")  # type: ignore[call-arg]
    assert "SECRET" not in str(raised.value)
