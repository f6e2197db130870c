"""PromptedTools: the prompted-JSON tool protocol as a provider wrapper that looks native."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Literal

from pydantic import BaseModel

import aiforge
from aiforge.core.output import OutputSpec
from aiforge.core.settings import load_settings
from aiforge.core.types import CallParams, Completion, new_tool_call
from aiforge.providers import create_provider
from aiforge.providers.prompted import PromptedTools, parse_prompted_tool_calls
from aiforge.providers.scripted import ScriptedProvider

PARAMS = CallParams(model="m")
CALC = {
    "name": "calculator",
    "description": "Evaluate math",
    "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}},
}
CONTEXT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "6*7?"}]


def streamed(provider: PromptedTools, tools=None) -> tuple[list[str], Completion]:
    async def collect() -> list:
        return [event async for event in provider.stream(CONTEXT, tools, PARAMS)]

    events = asyncio.run(collect())
    assert isinstance(events[-1], Completion) and all(isinstance(e, str) for e in events[:-1])
    return events[:-1], events[-1]


def test_parse_prompted_tool_calls_ignores_plain_text() -> None:
    assert parse_prompted_tool_calls("The answer is 4.") == []
    assert parse_prompted_tool_calls("{not json") == []
    assert [c["name"] for c in parse_prompted_tool_calls('{"tool": "weather", "input": {"city": "NYC"}}')] == [
        "weather"
    ]


def test_a_fenced_list_of_calls_is_parsed_into_one_call_each() -> None:
    text = '```json\n[{"tool": "a", "input": {"x": 1}}, {"tool": "b"}]\n```'

    calls = parse_prompted_tool_calls(text)

    assert [(c["name"], c["arguments"]) for c in calls] == [("a", {"x": 1}), ("b", {})]


def test_a_json_reply_naming_a_tool_comes_back_as_a_native_tool_call() -> None:
    inner = ScriptedProvider(['{"tool": "calculator", "input": {"expression": "6*7"}}'])

    completion = asyncio.run(PromptedTools(inner).complete(CONTEXT, [CALC], PARAMS))

    assert completion.text == ""
    assert [(c["name"], c["arguments"]) for c in completion.tool_calls] == [("calculator", {"expression": "6*7"})]


def test_instructions_go_into_the_system_prompt_and_no_tools_reach_the_inner_provider() -> None:
    inner = ScriptedProvider(["42"])

    asyncio.run(PromptedTools(inner).complete(CONTEXT, [CALC], PARAMS))

    sent = inner.calls[0]
    assert sent.tools is None
    assert sent.messages[0]["content"].startswith("Be brief.\n\nYou can use these tools:\n- calculator: Evaluate math")
    assert sent.messages[1:] == CONTEXT[1:]


def test_tool_calls_and_results_in_the_history_are_sent_as_plain_text() -> None:
    inner = ScriptedProvider(["It is 42."])
    call = new_tool_call("calculator", {"expression": "6*7"}, "call_1")
    history = [
        *CONTEXT,
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "name": "calculator", "content": "42"},
    ]

    asyncio.run(PromptedTools(inner).complete(history, [CALC], PARAMS))

    assert inner.calls[0].messages[2:] == [
        {"role": "assistant", "content": '{"tool": "calculator", "input": {"expression": "6*7"}}'},
        {"role": "user", "content": "Tool result (calculator): 42"},
    ]


def test_without_tools_every_call_passes_through_unchanged() -> None:
    inner = ScriptedProvider(['{"tool": "calculator", "input": {}}'])

    completion = asyncio.run(PromptedTools(inner).complete(CONTEXT, None, PARAMS))

    assert inner.calls[0].messages == CONTEXT
    assert completion.tool_calls == [] and completion.text.startswith('{"tool"')


def test_a_streamed_tool_call_never_shows_its_json() -> None:
    inner = ScriptedProvider(['{"tool": "calculator", "input": {"expression": "6*7"}}'], chunk_size=1)

    chunks, completion = streamed(PromptedTools(inner), [CALC])

    assert chunks == []
    assert completion.tool_calls[0]["name"] == "calculator"


def test_a_streamed_plain_answer_arrives_in_chunks() -> None:
    inner = ScriptedProvider(["Six times seven is 42."], chunk_size=1)

    chunks, completion = streamed(PromptedTools(inner), [CALC])

    assert len(chunks) > 1 and "".join(chunks) == "Six times seven is 42." == completion.text


def test_a_streamed_json_answer_that_calls_no_tool_is_shown_once_complete() -> None:
    inner = ScriptedProvider(['{"answer": 42}'], chunk_size=1)

    chunks, completion = streamed(PromptedTools(inner), [CALC])

    assert chunks == ['{"answer": 42}'] and completion.tool_calls == []


# --- structured answers (params.output) through a real function provider ------------------------------------------


class Review(BaseModel):
    sentiment: Literal["pos", "neg"]
    rating: int


STRUCTURED = dataclasses.replace(PARAMS, output=OutputSpec.of(Review))


def function_provider(*replies: str) -> tuple[PromptedTools, list[list[dict[str, str]]]]:
    """A registered plain function answering ``replies`` in turn, wrapped as the agent wraps it; and what it got."""
    received: list[list[dict[str, str]]] = []
    answers = iter(replies)

    def model(messages: list[dict[str, str]], **params: object) -> str:
        received.append(messages)
        return next(answers)

    aiforge.register_provider("structured-fn", model)
    return PromptedTools(create_provider(load_settings(PROVIDER="structured-fn"))), received


def stream_structured(provider: PromptedTools, tools=None) -> tuple[list[str], Completion]:
    async def collect() -> list:
        return [event async for event in provider.stream(CONTEXT, tools, STRUCTURED)]

    *chunks, final = asyncio.run(collect())
    return chunks, final


def test_without_tools_the_output_schema_is_added_to_the_system_message() -> None:
    provider, received = function_provider('{"sentiment": "pos", "rating": 5}')

    completion = asyncio.run(provider.complete(CONTEXT, None, STRUCTURED))

    [system, user] = received[0]
    assert system["content"] == "Be brief.\n\n" + OutputSpec.of(Review).instructions()
    assert user == CONTEXT[1]
    assert completion.text == '{"sentiment": "pos", "rating": 5}'


def test_a_json_fence_is_stripped_from_the_structured_answer() -> None:
    provider, _ = function_provider('```json\n{"sentiment": "neg", "rating": 1}\n```\n')

    completion = asyncio.run(provider.complete(CONTEXT, None, STRUCTURED))

    assert completion.text == '{"sentiment": "neg", "rating": 1}'
    assert OutputSpec.of(Review).validate(completion.text) == Review(sentiment="neg", rating=1)


def test_with_tools_the_answer_is_asked_for_as_json_instead_of_plain_text() -> None:
    provider, received = function_provider('{"sentiment": "pos", "rating": 4}')

    completion = asyncio.run(provider.complete(CONTEXT, [CALC], STRUCTURED))

    system = received[0][0]["content"]
    assert "- calculator: Evaluate math" in system and "without JSON" not in system
    assert system.endswith(OutputSpec.of(Review).instructions())
    assert completion.tool_calls == [] and completion.text == '{"sentiment": "pos", "rating": 4}'


def test_with_tools_and_output_a_tool_call_is_still_a_native_call() -> None:
    provider, _ = function_provider('{"tool": "calculator", "input": {"expression": "6*7"}}')

    completion = asyncio.run(provider.complete(CONTEXT, [CALC], STRUCTURED))

    assert completion.text == "" and completion.tool_calls[0]["arguments"] == {"expression": "6*7"}


def test_a_streamed_structured_answer_arrives_unfenced() -> None:
    provider, _ = function_provider('```json\n{"sentiment": "pos", "rating": 5}\n```')

    chunks, final = stream_structured(provider)

    assert "".join(chunks) == final.text == '{"sentiment": "pos", "rating": 5}'


def test_a_streamed_structured_answer_from_a_streaming_provider_comes_in_pieces_without_its_fence() -> None:
    text = '```json\n{"sentiment": "pos", "rating": 5, "note": "a `b` c"}\n```'
    provider = PromptedTools(ScriptedProvider([text], chunk_size=1))

    chunks, final = stream_structured(provider)

    assert len(chunks) > 2
    assert "".join(chunks) == final.text == '{"sentiment": "pos", "rating": 5, "note": "a `b` c"}'
    assert not any("```" in chunk for chunk in chunks)


def test_with_tools_a_streamed_tool_call_never_shows_its_json_also_with_output() -> None:
    inner = ScriptedProvider(['{"tool": "calculator", "input": {"expression": "6*7"}}'], chunk_size=1)

    chunks, final = stream_structured(PromptedTools(inner), [CALC])

    assert chunks == [] and final.tool_calls[0]["name"] == "calculator"


def test_with_tools_a_streamed_structured_answer_is_shown_once_complete_and_unfenced() -> None:
    inner = ScriptedProvider(['```json\n{"sentiment": "neg", "rating": 2}\n```'], chunk_size=1)

    chunks, final = stream_structured(PromptedTools(inner), [CALC])

    assert chunks == ['{"sentiment": "neg", "rating": 2}'] == [final.text]


def test_a_chat_agent_wraps_a_function_provider_without_tools_so_output_works() -> None:
    provider_name = "structured-agent-fn"
    received: list[list[dict[str, str]]] = []

    def model(messages: list[dict[str, str]], **params: object) -> str:
        received.append(messages)
        return '```json\n{"sentiment": "pos", "rating": 5}\n```'

    aiforge.register_provider(provider_name, model)
    response = aiforge.ChatAgent(provider=provider_name).chat("Great kettle!", output=Review)

    assert response.output == Review(sentiment="pos", rating=5)
    assert response.message == '{"sentiment": "pos", "rating": 5}'
    assert received[0][0]["content"].endswith(OutputSpec.of(Review).instructions())


def test_the_instructions_show_each_call_with_real_values() -> None:
    # Issue 22: a small model copied the instructions' placeholders into its reply as they were.
    inner = ScriptedProvider(["42"])
    order_status = {
        "name": "order_status",
        "description": "Look up the shipping status of an order.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string", "description": "The order's id, like A-1001."}},
        },
    }

    asyncio.run(PromptedTools(inner).complete(CONTEXT, [CALC, order_status], PARAMS))

    system = inner.calls[0].messages[0]["content"]
    assert 'For example: {"tool": "order_status", "input": {"order_id": "A-1001"}}' in system
    assert 'For example: {"tool": "calculator", "input": {"expression": "example"}}' in system
