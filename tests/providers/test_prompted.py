"""PromptedTools: the prompted-JSON tool protocol as a provider wrapper that looks native."""

from __future__ import annotations

import asyncio

from aiforge.core.types import CallParams, Completion, new_tool_call
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
