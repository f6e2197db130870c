"""Structured output on the agent: ``output=``, validation with retries, refusals, streaming, history."""

from __future__ import annotations

import dataclasses
import json
from typing import Literal

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from aiforge import ChatAgent, OutputRefusedError, OutputValidationError
from aiforge.core.output import OutputSpec
from aiforge.providers.scripted import ScriptedProvider, refusal, structured, tool_call
from fakellm import LLMServer, Reply, ToolCallSpec
from tests.chat.checks import assert_valid_history
from tests.chat.conftest import WireAgent


class Review(BaseModel):
    sentiment: Literal["positive", "negative", "neutral"]
    rating: int


class Person(TypedDict):
    name: str
    age: int


@dataclasses.dataclass
class City:
    name: str
    country: str


class Opaque:
    """A class pydantic has no schema for."""


GOOD = '{"sentiment": "positive", "rating": 5}'
BAD = '{"sentiment": "great", "rating": "five"}'


def scripted(*replies: object, **kwargs: object) -> tuple[ChatAgent, ScriptedProvider]:
    fake = ScriptedProvider(replies)
    return ChatAgent(provider=fake, **kwargs), fake


# -- the output types ------------------------------------------------------------------


def test_a_model_output_is_validated_into_response_output() -> None:
    agent, fake = scripted(GOOD)

    response = agent.chat("Loved it, five stars.", output=Review)

    assert response.output == Review(sentiment="positive", rating=5)
    assert response.message == GOOD
    assert fake.calls[0].params.output is OutputSpec.of(Review)


@pytest.mark.parametrize(
    ("output", "reply", "expected"),
    [
        (int, '{"value": 3}', 3),
        (bool, "true", True),
        (Literal["pos", "neg"], '{"value": "neg"}', "neg"),
        (list[str], '{"value": ["a", "b"]}', ["a", "b"]),
        (Person, '{"name": "Ada", "age": 36}', {"name": "Ada", "age": 36}),
        (City, '{"name": "Paris", "country": "France"}', City("Paris", "France")),
    ],
)
def test_every_kind_of_output_type_is_validated(output: object, reply: str, expected: object) -> None:
    agent, _ = scripted(reply)

    assert agent.chat("go", output=output).output == expected


def test_without_output_nothing_changes() -> None:
    agent, fake = scripted("Paris.")

    response = agent.chat("Capital of France?")

    assert response.output is None
    assert response.message == "Paris."
    assert fake.calls[0].params.output is None
    assert [r["step"] for r in response.trace] == ["model"]


def test_output_applies_to_its_turn_only() -> None:
    agent, fake = scripted(GOOD, "Free text again.")

    agent.chat("Rate it", output=Review)
    response = agent.chat("And now in words?")

    assert response.output is None
    assert [c.params.output for c in fake.calls] == [OutputSpec.of(Review), None]


@pytest.mark.parametrize(("output", "named"), [("Review", "str"), (3, "int"), ({"a": 1}, "dict"), (Opaque, "Opaque")])
def test_an_output_that_is_not_a_type_is_a_value_error_naming_it(output: object, named: str) -> None:
    agent, fake = scripted(GOOD)

    with pytest.raises(ValueError, match=named):
        agent.chat("go", output=output)
    assert fake.calls == []


def test_system_prompt_and_output_go_together() -> None:
    agent, fake = scripted(GOOD)

    agent.chat("Loved it", system_prompt="You rate reviews.", output=Review)

    call = fake.calls[0]
    assert call.messages[0] == {"role": "system", "content": "You rate reviews."}
    assert call.params.output is OutputSpec.of(Review)


def test_run_and_arun_take_output() -> None:
    agent, _ = scripted(GOOD, GOOD)

    assert agent.run("go", output=Review).output.rating == 5


async def test_arun_takes_output() -> None:
    agent, _ = scripted(GOOD)

    assert (await agent.arun("go", output=Review)).output.rating == 5


# -- retries ---------------------------------------------------------------------------


def test_a_reply_that_does_not_validate_is_sent_back_and_the_retry_is_used() -> None:
    agent, fake = scripted(BAD, GOOD)

    response = agent.chat("Loved it", output=Review)

    assert response.output == Review(sentiment="positive", rating=5)
    retry = fake.calls[1].messages
    assert retry[-2] == {"role": "assistant", "content": BAD}
    assert retry[-1]["role"] == "user"
    assert "sentiment" in retry[-1]["content"] and "rating" in retry[-1]["content"]


def test_a_retry_is_counted_in_tokens_cost_and_trace() -> None:
    agent, _ = scripted(BAD, GOOD)

    response = agent.chat("Loved it", output=Review)

    models = [r for r in response.trace if r["step"] == "model"]
    checks = [r for r in response.trace if r["step"] == "validation"]
    assert len(models) == 2
    assert response.input_tokens == sum(r["input_tokens"] for r in models)
    assert response.output_tokens == sum(r["output_tokens"] for r in models)
    assert len(agent.cost_tracker.records) == 2
    assert [(c["attempt"], c["output"]) for c in checks] == [(1, BAD), (2, GOOD)]
    assert "does not match Review" in checks[0]["error"] and checks[1]["error"] is None
    assert {e["loc"] for e in checks[0]["errors"]} == {("sentiment",), ("rating",)}


def test_failed_attempts_and_feedback_stay_out_of_history() -> None:
    agent, _ = scripted(BAD, GOOD)

    agent.chat("Loved it", output=Review)

    assert agent.history == [
        {"role": "user", "content": "Loved it"},
        {"role": "assistant", "content": GOOD},
    ]


def test_after_the_retries_the_error_carries_the_raw_text_and_errors_and_history_is_untouched() -> None:
    agent, fake = scripted("Hi!", "Hello.", BAD, "not json", "{}")
    agent.chat("Hi")
    agent.chat("Hello")
    before = agent.history

    with pytest.raises(OutputValidationError, match="after 3 attempts") as caught:
        agent.chat("Loved it", output=Review)

    assert len(fake.calls) == 2 + 3
    assert caught.value.raw_text == "{}"
    assert {e["loc"] for e in caught.value.errors} == {("sentiment",), ("rating",)}
    assert agent.history == before
    assert agent.last_response is not None and agent.last_response.message == "Hello."


def test_invalid_json_is_a_validation_error_too() -> None:
    agent, _ = scripted("Sure! It is positive.", output_retries=0)

    with pytest.raises(OutputValidationError) as caught:
        agent.chat("Loved it", output=Review)

    assert caught.value.errors[0]["type"] == "json_invalid"


def test_output_retries_zero_makes_one_call() -> None:
    agent, fake = scripted(BAD, GOOD, output_retries=0)

    with pytest.raises(OutputValidationError, match="after 1 attempt\\)"):
        agent.chat("Loved it", output=Review)

    assert len(fake.calls) == 1


@pytest.mark.parametrize("retries", [-1, 1.5, True, "2"])
def test_output_retries_must_be_a_non_negative_integer(retries: object) -> None:
    with pytest.raises(ValueError, match="output_retries"):
        ChatAgent(provider=ScriptedProvider(), output_retries=retries)


def test_a_structured_reply_is_validated_into_its_type() -> None:
    agent, _ = scripted(structured(Review(sentiment="neutral", rating=3)))

    assert agent.chat("Meh.", output=Review).output == Review(sentiment="neutral", rating=3)


def test_a_refusal_raises_at_once_without_retry_and_leaves_history() -> None:
    agent, fake = scripted("Hi!", refusal("I can't rate that."), GOOD)
    agent.chat("Hi")

    with pytest.raises(OutputRefusedError) as caught:
        agent.chat("Rate this", output=Review)

    assert caught.value.refusal == "I can't rate that."
    assert len(fake.calls) == 2 and fake.pending == 1
    assert [m["content"] for m in agent.history] == ["Hi", "Hi!"]


async def test_a_streamed_refusal_raises_too() -> None:
    agent, _ = scripted(refusal(""))

    with pytest.raises(OutputRefusedError, match="refused"):
        [chunk async for chunk in agent.chat_stream("Rate this", output=Review)]
    assert agent.history == []


def test_a_refusal_after_a_failed_attempt_is_still_a_refusal() -> None:
    agent, fake = scripted(BAD, refusal("No."))

    with pytest.raises(OutputRefusedError):
        agent.chat("Rate this", output=Review)
    assert len(fake.calls) == 2


# -- tools and output in the same turn -------------------------------------------------


def test_tools_run_first_and_the_final_answer_is_structured(calc_tool: object) -> None:
    agent, fake = scripted(tool_call("calculator", expression="2+3"), '{"value": 5}', tools=[calc_tool])

    response = agent.chat("What is 2+3?", output=int)

    assert response.output == 5
    assert [tc.output for tc in response.tool_calls] == ["5"]
    assert all(c.params.output is OutputSpec.of(int) for c in fake.calls)
    assert [m["role"] for m in agent.history] == ["user", "assistant", "tool", "assistant"]
    assert_valid_history(agent.history)


def test_a_retry_after_tools_keeps_the_tool_units_and_drops_the_failed_reply(calc_tool: object) -> None:
    agent, _ = scripted(tool_call("calculator", expression="2+3"), "five", '{"value": 5}', tools=[calc_tool])

    response = agent.chat("What is 2+3?", output=int)

    assert response.output == 5 and response.iterations == 1
    assert [m["role"] for m in agent.history] == ["user", "assistant", "tool", "assistant"]
    assert agent.history[-1]["content"] == '{"value": 5}'


# -- batch items -----------------------------------------------------------------------


async def test_a_batch_item_with_output_is_a_fresh_structured_turn() -> None:
    agent, fake = scripted(GOOD)

    response = await agent.arun_batch_item("Loved it", output=Review)

    assert response.output.rating == 5
    assert fake.calls[0].messages[1:] == [{"role": "user", "content": "Loved it"}]
    assert agent.history == []


def test_run_batch_with_output_fails_only_the_item_that_never_validates() -> None:
    agent, _ = scripted(output_retries=0)
    agent.provider.default = lambda messages: GOOD if "good" in messages[-1]["content"] else "nope"

    batch = agent.run_batch(["good one", "bad one", "good two"], concurrency=1, output=Review)

    assert [r.output.rating for r in batch.results] == [5, 5]
    assert [(f.index, type(f.error).__name__) for f in batch.failed] == [(1, "OutputValidationError")]
    assert batch.failed[0].error.raw_text == "nope"
    assert agent.history == []


# -- streaming -------------------------------------------------------------------------


async def test_streaming_with_output_streams_the_json_and_the_final_response_has_the_object() -> None:
    agent, _ = scripted(GOOD)

    stream = agent.stream_turn("Loved it", output=Review)
    chunks = [chunk async for chunk in stream]

    assert len(chunks) > 1
    assert "".join(chunks) == GOOD
    assert stream.response is not None and stream.response.output == Review(sentiment="positive", rating=5)
    assert agent.last_response is stream.response


async def test_chat_stream_with_output_sets_last_response_output() -> None:
    agent, _ = scripted(GOOD)

    chunks = [chunk async for chunk in agent.chat_stream("Loved it", output=Review)]

    assert json.loads("".join(chunks)) == {"sentiment": "positive", "rating": 5}
    assert agent.last_response is not None and agent.last_response.output.rating == 5


async def test_a_streamed_retry_follows_after_a_blank_line() -> None:
    agent, _ = scripted(BAD, GOOD)

    chunks = [chunk async for chunk in agent.achat_stream("Loved it", output=Review)]

    assert "".join(chunks) == f"{BAD}\n\n{GOOD}"
    assert agent.last_response is not None and agent.last_response.message == GOOD


async def test_a_streamed_turn_that_never_validates_raises_and_leaves_history_as_it_was() -> None:
    agent, _ = scripted(BAD, output_retries=0)

    with pytest.raises(OutputValidationError):
        [chunk async for chunk in agent.chat_stream("Loved it", output=Review)]

    assert agent.history == []


def test_stream_turn_rejects_a_bad_output_type_before_streaming() -> None:
    agent, _ = scripted(GOOD)

    with pytest.raises(ValueError, match="str"):
        agent.stream_turn("go", output="Review")


# -- the response ----------------------------------------------------------------------


def test_the_response_shows_the_validated_object() -> None:
    agent, _ = scripted(GOOD)

    response = agent.chat("Loved it", output=Review)

    assert "output=Review(sentiment='positive', rating=5)" in repr(response)
    assert '"rating": 5' in response._repr_markdown_() and "**Review**" in response._repr_markdown_()
    assert "&quot;rating&quot;: 5" in response._repr_html_()
    assert response.to_row()["message"] == GOOD and "output" not in response.to_row()


def test_refusal_and_validation_errors_are_exported_from_aiforge() -> None:
    assert issubclass(OutputRefusedError, Exception) and issubclass(OutputValidationError, Exception)


# -- through the real SDKs, against the fake server ------------------------------------


def test_wire_retry_then_success_counts_both_calls(srv: LLMServer, wire_agent: WireAgent) -> None:
    srv.enqueue(Reply(output={"sentiment": "great", "rating": 5}), Reply(output={"sentiment": "positive", "rating": 5}))
    agent = wire_agent()

    response = agent.chat("Loved it", output=Review)

    assert response.output == Review(sentiment="positive", rating=5)
    first, second = srv.requests
    assert first.output_schema is not None and second.output_schema is not None
    assert len(agent.cost_tracker.records) == 2
    assert response.input_tokens == sum(r["input_tokens"] for r in response.trace if r["step"] == "model")
    assert agent.history == [
        {"role": "user", "content": "Loved it"},
        {"role": "assistant", "content": response.message},
    ]


def test_wire_refusal_raises_at_once_and_leaves_history(srv: LLMServer, wire_agent: WireAgent) -> None:
    srv.enqueue(Reply(refusal="I can't help with that."))
    agent = wire_agent()

    with pytest.raises(OutputRefusedError, match="can't help") as caught:
        agent.chat("Rate this", output=Review)

    assert caught.value.refusal == "I can't help with that."
    assert len(srv.requests) == 1
    assert agent.history == []


async def test_wire_streaming_with_output(srv: LLMServer, wire_agent: WireAgent) -> None:
    srv.enqueue(Reply(output={"sentiment": "negative", "rating": 1}))
    agent = wire_agent()

    stream = agent.stream_turn("Hated it", output=Review)
    text = "".join([chunk async for chunk in stream])

    assert json.loads(text) == {"sentiment": "negative", "rating": 1}
    assert stream.response is not None and stream.response.output == Review(sentiment="negative", rating=1)


async def test_wire_streamed_refusal_raises(srv: LLMServer, wire_agent: WireAgent) -> None:
    srv.enqueue(Reply(refusal="No."))
    agent = wire_agent()

    with pytest.raises(OutputRefusedError):
        [chunk async for chunk in agent.chat_stream("Rate this", output=Review)]
    assert agent.history == []


def test_wire_tools_then_structured_answer(srv: LLMServer, wire_agent: WireAgent, calc_tool: object) -> None:
    srv.enqueue(
        Reply(tool_calls=[ToolCallSpec("calculator", {"expression": "2+3"})]),
        Reply(output={"value": 5}),
    )
    agent = wire_agent(tools=[calc_tool])

    response = agent.chat("What is 2+3?", output=int)

    assert response.output == 5
    assert [tc.output for tc in response.tool_calls] == ["5"]
    assert all(r.output_schema is not None for r in srv.requests)
