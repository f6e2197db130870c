"""The scripted provider: queued replies, tool calls, the echo default, streaming chunks and scripted failures."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import re
import threading
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from aiforge.core.errors import FailedRowsWarning
from aiforge.core.output import OutputSpec
from aiforge.core.settings import load_settings
from aiforge.core.types import CallParams, Completion, Message, ProviderError, ToolSpec, Usage
from aiforge.providers import create_provider
from aiforge.providers.scripted import ScriptedProvider, ScriptedReply, refusal, structured, tool_call, tool_calls

PARAMS = CallParams(model="")
WEATHER: ToolSpec = {"name": "weather", "description": "The weather in a city.", "parameters": {}}


def ask(question: str) -> list[Message]:
    return [{"role": "system", "content": "Be brief."}, {"role": "user", "content": question}]


def complete(provider: ScriptedProvider, messages: list[Message], params: CallParams = PARAMS) -> Completion:
    return asyncio.run(provider.complete(messages, None, params))


def stream(provider: ScriptedProvider, messages: list[Message]) -> list[Any]:
    async def events() -> list[Any]:
        return [event async for event in provider.stream(messages, None, PARAMS)]

    return asyncio.run(events())


# --- the script ----------------------------------------------------------------------------------------------------


def test_replies_come_in_the_order_they_were_queued() -> None:
    fake = ScriptedProvider(["first", "second"])

    assert complete(fake, ask("a")).text == "first"
    assert complete(fake, ask("b")).text == "second"


def test_a_single_string_is_a_script_of_one_reply() -> None:
    fake = ScriptedProvider("only")

    assert fake.pending == 1
    assert complete(fake, ask("a")).text == "only"


def test_enqueue_appends_to_the_script_and_chains() -> None:
    fake = ScriptedProvider(["first"])

    assert fake.enqueue("second", "third") is fake
    assert fake.pending == 3
    assert [complete(fake, ask("q")).text for _ in range(3)] == ["first", "second", "third"]


def test_pending_counts_the_replies_left() -> None:
    fake = ScriptedProvider(["a", "b"])
    complete(fake, ask("q"))

    assert fake.pending == 1


def test_with_an_empty_script_it_echoes_the_last_user_message() -> None:
    fake = ScriptedProvider()
    messages: list[Message] = [*ask("first question"), {"role": "assistant", "content": "x"}]
    messages.append({"role": "user", "content": "second question"})

    assert complete(fake, messages).text == "You said: second question"


def test_the_default_may_be_a_fixed_reply_or_a_function_of_the_messages() -> None:
    fixed = ScriptedProvider(default="I don't know.")
    counting = ScriptedProvider(default=lambda messages: f"{len(messages)} messages")

    assert complete(fixed, ask("q")).text == "I don't know."
    assert complete(counting, ask("q")).text == "2 messages"


def test_a_function_in_the_script_answers_from_the_messages() -> None:
    fake = ScriptedProvider([lambda messages: messages[-1]["content"].upper()])

    assert complete(fake, ask("shout")).text == "SHOUT"


def test_a_settings_object_is_not_a_script() -> None:
    fake = ScriptedProvider(load_settings())

    assert fake.pending == 0
    assert complete(fake, ask("hi")).text == "You said: hi"


def test_each_provider_made_by_name_has_its_own_script() -> None:
    settings = load_settings(PROVIDER="scripted")

    assert create_provider(settings) is not create_provider(settings)


# --- completions ---------------------------------------------------------------------------------------------------


def test_a_text_reply_stops_with_the_default_model_or_the_requested_one() -> None:
    fake = ScriptedProvider(["a", "b"], model="fake-1")

    first = complete(fake, ask("q"))
    second = complete(fake, ask("q"), CallParams(model="other-model"))

    assert (first.finish_reason, first.model, first.tool_calls) == ("stop", "fake-1", [])
    assert second.model == "other-model"


def test_usage_is_estimated_from_the_text_unless_scripted() -> None:
    fake = ScriptedProvider(["12345678", ScriptedReply(text="x", usage=Usage(input_tokens=7, output_tokens=3))])

    estimated = complete(fake, [{"role": "user", "content": "1234"}]).usage
    scripted = complete(fake, ask("q")).usage

    assert (estimated.input_tokens, estimated.output_tokens) == (2, 3)
    assert (scripted.input_tokens, scripted.output_tokens) == (7, 3)


def test_every_call_is_recorded_with_what_the_provider_received() -> None:
    fake = ScriptedProvider(["a"])
    messages = ask("what is the weather?")
    params = CallParams(model="m", temperature=0.5)

    asyncio.run(fake.complete(messages, [WEATHER], params))
    messages[1]["content"] = "changed afterwards"

    [call] = fake.calls
    assert call.last_user_message == "what is the weather?"
    assert call.tools == [WEATHER]
    assert call.params == params


# --- tool calls ----------------------------------------------------------------------------------------------------


def test_tool_call_builds_one_call_from_a_dict_and_keywords() -> None:
    reply = tool_call("weather", {"city": "NYC"}, unit="C")

    [call] = reply.tool_calls
    assert call["name"] == "weather"
    assert call["arguments"] == {"city": "NYC", "unit": "C"}
    assert re.fullmatch(r"call_\d{6}", call["id"])
    assert reply.text == ""


def test_tool_calls_builds_parallel_calls_with_distinct_ids() -> None:
    reply = tool_calls(("weather", {"city": "NYC"}), ("weather", {"city": "Paris"}))

    first, second = reply.tool_calls
    assert [first["arguments"], second["arguments"]] == [{"city": "NYC"}, {"city": "Paris"}]
    assert first["id"] != second["id"]
    assert all(re.fullmatch(r"call_\d{6}", c["id"]) for c in reply.tool_calls)


def test_every_scripted_tool_call_gets_a_new_id() -> None:
    ids = {tool_call("weather").tool_calls[0]["id"] for _ in range(3)}

    assert len(ids) == 3


def test_a_tool_call_reply_finishes_with_tool_calls() -> None:
    fake = ScriptedProvider([tool_call("weather", city="NYC")])

    completion = complete(fake, ask("weather?"))

    assert completion.finish_reason == "tool_calls"
    assert [(c["name"], c["arguments"]) for c in completion.tool_calls] == [("weather", {"city": "NYC"})]


def test_a_completion_carries_copies_of_the_scripted_calls() -> None:
    reply = tool_call("weather", city="NYC")
    fake = ScriptedProvider([reply])

    completion = complete(fake, ask("weather?"))
    completion.tool_calls[0]["name"] = "changed"

    assert reply.tool_calls[0]["name"] == "weather"


# --- streaming -----------------------------------------------------------------------------------------------------


def test_stream_yields_chunks_of_a_few_words_then_the_completion() -> None:
    fake = ScriptedProvider(["one two three four five"])

    *chunks, final = stream(fake, ask("q"))

    assert chunks == ["one two ", "three four ", "five"]
    assert isinstance(final, Completion)
    assert final.text == "one two three four five"


def test_chunk_size_sets_the_words_per_chunk() -> None:
    fake = ScriptedProvider(["one two three"], chunk_size=1)

    *chunks, _ = stream(fake, ask("q"))

    assert chunks == ["one ", "two ", "three"]


def test_a_streamed_tool_call_yields_only_the_completion() -> None:
    fake = ScriptedProvider([tool_call("weather", city="NYC")])

    [final] = stream(fake, ask("weather?"))

    assert final.tool_calls[0]["name"] == "weather"


def test_streaming_records_the_call_too() -> None:
    fake = ScriptedProvider(["a"])
    stream(fake, ask("q"))

    assert [call.last_user_message for call in fake.calls] == ["q"]


# --- scripted failures ---------------------------------------------------------------------------------------------


def test_a_scripted_exception_is_raised_and_the_script_goes_on() -> None:
    fake = ScriptedProvider([ProviderError("rate limited", provider="scripted", status_code=429), "recovered"])

    with pytest.raises(ProviderError, match="rate limited") as raised:
        complete(fake, ask("q"))

    assert raised.value.status_code == 429
    assert complete(fake, ask("q")).text == "recovered"


def test_a_scripted_exception_is_raised_by_stream() -> None:
    fake = ScriptedProvider([TimeoutError("slow")])

    with pytest.raises(TimeoutError, match="slow"):
        stream(fake, ask("q"))


# --- your functions run in a thread ------------------------------------------------------------------------------


@pytest.mark.parametrize("scripted", ["default", "queued", "streamed", "scores", "embeddings"])
async def test_your_functions_run_in_a_thread_so_the_event_loop_runs_on_while_they_wait(scripted: str) -> None:
    # Each function waits for the loop to run something else: on the loop itself it would wait in vain.
    loop_ran = threading.Event()

    def waited(messages: Any) -> str:
        return "the loop ran" if loop_ran.wait(10) else "the loop was blocked"

    fake = ScriptedProvider(
        [waited] if scripted in ("queued", "streamed") else [],
        default=waited if scripted == "default" else "unused",
        scores=lambda messages: waited(messages).split()[-1],
        embeddings=lambda text: [1.0, 0.0] if waited(text) == "the loop ran" else [0.0, 1.0],
    )

    async def ask_it() -> str:
        if scripted == "streamed":
            return [event async for event in fake.stream(ask("q"), None, PARAMS)][-1].text
        if scripted == "scores":
            label = (await fake.score_labels(ask("q"), ["blocked", "ran"], PARAMS)).answer
            return "the loop ran" if label == "ran" else "the loop was blocked"
        if scripted == "embeddings":
            vector = (await fake.embed(["q"])).vectors[0].tolist()
            return "the loop ran" if vector == [1.0, 0.0] else "the loop was blocked"
        return (await fake.complete(ask("q"), None, PARAMS)).text

    async def run_something_else() -> None:
        await asyncio.sleep(0)
        loop_ran.set()

    answer, _ = await asyncio.gather(ask_it(), run_something_else())
    assert answer == "the loop ran"


# --- structured answers and refusals -------------------------------------------------------------------------------


class Review(BaseModel):
    sentiment: Literal["pos", "neg"]
    rating: int


@dataclasses.dataclass
class Person:
    name: str
    born: datetime.date


STRUCTURED = CallParams(model="", output=OutputSpec.of(Review))


def test_a_structured_reply_is_the_json_of_a_pydantic_model() -> None:
    completion = complete(ScriptedProvider([structured(Review(sentiment="pos", rating=5))]), ask("?"), STRUCTURED)

    assert completion.text == '{"sentiment":"pos","rating":5}'
    assert OutputSpec.of(Review).validate(completion.text) == Review(sentiment="pos", rating=5)


@pytest.mark.parametrize(
    ("value", "output", "text"),
    [
        ({"sentiment": "neg", "rating": 1}, Review, '{"sentiment":"neg","rating":1}'),
        (Person("Ada", datetime.date(1815, 12, 10)), Person, '{"name":"Ada","born":"1815-12-10"}'),
        (True, bool, "true"),
        ("pos", Literal["pos", "neg"], '"pos"'),
        (["a", "b"], list[str], '["a","b"]'),
    ],
)
def test_structured_renders_dicts_dataclasses_and_bare_values_that_validate(value, output, text) -> None:
    fake = ScriptedProvider([structured(value)])

    completion = complete(fake, ask("?"), CallParams(model="", output=OutputSpec.of(output)))

    assert completion.text == text
    validated = OutputSpec.of(output).validate(completion.text)
    assert (validated.model_dump() if isinstance(validated, BaseModel) else validated) == value


def test_a_scripted_reply_may_carry_the_output_directly() -> None:
    reply = ScriptedReply(output={"sentiment": "pos", "rating": 4})

    assert complete(ScriptedProvider([reply]), ask("?"), STRUCTURED).text == '{"sentiment":"pos","rating":4}'


def test_a_text_reply_stays_as_written_when_output_is_asked_for() -> None:
    completion = complete(ScriptedProvider(["not json at all"]), ask("?"), STRUCTURED)

    assert completion.text == "not json at all" and completion.refusal is None


def test_a_refusal_sets_the_completion_refusal_with_no_text() -> None:
    completion = complete(ScriptedProvider([refusal("I can't rate that.")]), ask("?"), STRUCTURED)

    assert completion.refusal == "I can't rate that."
    assert completion.text == "" and completion.tool_calls == []


def test_a_refusal_may_give_no_explanation() -> None:
    assert complete(ScriptedProvider([refusal()]), ask("?"), STRUCTURED).refusal == ""


def test_a_streamed_structured_reply_arrives_as_json_chunks() -> None:
    fake = ScriptedProvider([structured({"sentiment": "pos", "rating": 5, "note": "very good indeed"})], chunk_size=1)

    async def events() -> list[Any]:
        return [event async for event in fake.stream(ask("?"), None, STRUCTURED)]

    *chunks, final = asyncio.run(events())

    assert len(chunks) > 1 and "".join(chunks) == final.text


def test_the_output_asked_for_is_recorded_with_each_call() -> None:
    fake = ScriptedProvider([structured(True), "plain"])

    complete(fake, ask("?"), STRUCTURED)
    complete(fake, ask("?"))

    assert fake.calls[0].params.output is OutputSpec.of(Review)
    assert fake.calls[1].params.output is None


def test_a_bare_label_reply_answers_a_label_batch_in_one_request_per_row() -> None:
    """``"positive"`` as written, not only ``json.dumps("positive")`` (issue 30 item 10: every row failed as "not
    valid JSON", three requests a row). Only an exact label is taken: other text still fails and is asked again."""
    import enum

    import pandas as pd

    from aiforge import ChatAgent
    from aiforge.core.errors import OutputValidationError

    reviews = pd.Series([f"review {i}" for i in range(20)])
    scripted = ScriptedProvider(default="positive")
    labels = reviews.aiforge.classify("{value}", ["positive", "negative"], agent=ChatAgent(provider=scripted))
    assert labels.tolist() == ["positive"] * 20 and len(scripted.calls) == 20
    assert not labels.attrs["aiforge"].failed

    class Mood(enum.Enum):
        HAPPY = "happy"
        SAD = "sad"

    assert OutputSpec.of(Mood).validate(" happy\n") is Mood.HAPPY
    assert OutputSpec.of(Literal["positive", "negative"]).validate("negative") == "negative"
    for text, output in (("Positive", Literal["positive", "negative"]), ("positive.", Literal["positive", "negative"]),
                         ("positive", str), ("positive", Review)):
        with pytest.raises(OutputValidationError, match="not valid JSON"):
            OutputSpec.of(output).validate(text)
    rows = ScriptedProvider(default="maybe")
    with pytest.warns(FailedRowsWarning, match="^2 of 2 rows failed"):
        failed = reviews[:2].aiforge.classify("{value}", ["positive", "negative"], agent=ChatAgent(provider=rows))
    assert len(failed.attrs["aiforge"].failed) == 2 and len(rows.calls) == 2 * 3  # not a label: asked again
