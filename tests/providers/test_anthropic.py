"""The anthropic provider over real HTTP: the real ``anthropic`` SDK against the fake server on 127.0.0.1."""

from __future__ import annotations

import functools
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from aiforge import ChatAgent
from aiforge.core.types import (
    APITimeoutError,
    CallParams,
    Message,
    ProviderError,
)
from fakellm import LLMServer, Reply, ToolCallSpec
from tests.providers.conftest import ANTHROPIC, HELLO, SECRET, WEATHER_TOOL, WireProtocol

REPO_ROOT = Path(__file__).resolve().parents[2]

PARAMS = CallParams(model="claude-haiku-4-5")


@pytest.fixture
def protocol() -> WireProtocol:
    """Pins conftest's ``make_provider`` and ``collect`` to the anthropic provider."""
    return ANTHROPIC


# --- completions ------------------------------------------------------------------------------


async def test_complete_returns_text_usage_and_model(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(
        Reply(text="Paris.", usage={"input_tokens": 20, "output_tokens": 3}, cached_tokens=6, cache_creation_tokens=4)
    )
    completion = await make_provider(llm_server.anthropic_base_url).complete(HELLO, None, PARAMS)
    assert completion.text == "Paris."
    assert completion.model == "claude-haiku-4-5"
    assert completion.finish_reason == "end_turn"
    # The wire says input_tokens=10 (uncached) + 6 read + 4 written; aiforge's input is the total.
    assert completion.usage.input_tokens == 20
    assert completion.usage.cached_input_tokens == 6
    assert completion.usage.cache_write_tokens == 4
    assert completion.usage.output_tokens == 3


async def test_conversation_is_sent_as_alternating_turns_with_a_system_parameter(
    llm_server: LLMServer, make_provider: Any
) -> None:
    llm_server.strict = True  # rejects what the real API rejects: system roles, repeated roles, orphans
    llm_server.enqueue(Reply(text="ok"))
    messages: list[Message] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris"},
        {"role": "user", "content": "and Rome?"},
        {"role": "system", "content": "Use Celsius."},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {"id": "toolu_1", "name": "get_weather", "arguments": {"city": "Paris"}},
                {"id": "toolu_2", "name": "get_weather", "arguments": {"city": "Rome"}},
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_2", "content": "rainy"},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "sunny"},
    ]
    params = CallParams(model="claude-haiku-4-5", temperature=0.2)
    await make_provider(llm_server.anthropic_base_url).complete(messages, [WEATHER_TOOL], params)

    body = llm_server.requests[-1].body
    assert body["system"] == "Be brief.\n\nUse Celsius."
    assert body["max_tokens"] == 4096
    assert "temperature" not in body  # API version 2026-10-21 rejects sampling parameters
    assert body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "Weather in Paris"}, {"type": "text", "text": "and Rome?"}],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "rainy"},
            ],
        },
    ]
    assert body["tools"] == [
        {"name": "get_weather", "description": "Weather for a city", "input_schema": WEATHER_TOOL["parameters"]}
    ]


async def test_assistant_turn_with_only_tool_calls_has_no_empty_text_block(
    llm_server: LLMServer, make_provider: Any
) -> None:
    llm_server.strict = True
    llm_server.enqueue(Reply(text="ok"))
    messages: list[Message] = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "t1", "name": "get_weather", "arguments": {}}]},
        {"role": "tool", "tool_call_id": "t1", "content": "sunny"},
        {"role": "user", "content": "Thanks"},
    ]
    await make_provider(llm_server.anthropic_base_url).complete(messages, [WEATHER_TOOL], PARAMS)
    sent = llm_server.requests[-1].body["messages"]
    assert sent[1]["content"] == [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}}]
    assert sent[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "sunny"},
        {"type": "text", "text": "Thanks"},
    ]


async def test_max_tokens_comes_from_the_call_parameters(llm_server: LLMServer, make_provider: Any) -> None:
    await make_provider(llm_server.anthropic_base_url).complete(HELLO, None, CallParams(model="m", max_tokens=77))
    assert llm_server.requests[-1].body["max_tokens"] == 77


async def test_tool_use_blocks_become_tool_calls(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Reply(text="Let me check.", tool_calls=[ToolCallSpec("get_weather", {"city": "Oslo"}, "tu_1")]))
    completion = await make_provider(llm_server.anthropic_base_url).complete(HELLO, [WEATHER_TOOL], PARAMS)
    assert completion.text == "Let me check."
    assert completion.finish_reason == "tool_use"
    assert completion.tool_calls == [{"id": "tu_1", "name": "get_weather", "arguments": {"city": "Oslo"}}]


# --- streaming --------------------------------------------------------------------------------


async def test_stream_yields_text_deltas_then_a_completion_with_usage(
    llm_server: LLMServer, make_provider: Any, collect: Any
) -> None:
    llm_server.enqueue(Reply(text="The capital is Paris.", cached_tokens=5, cache_creation_tokens=1))
    deltas, final = await collect(make_provider(llm_server.anthropic_base_url))
    assert len(deltas) > 2
    assert "".join(deltas) == final.text == "The capital is Paris."
    assert final.usage.cached_input_tokens == 5 and final.usage.cache_write_tokens == 1
    assert final.usage.input_tokens >= 6 and final.usage.output_tokens > 0
    assert final.finish_reason == "end_turn" and final.model == "claude-haiku-4-5"


def _event(data: dict[str, Any]) -> str:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"


def _tool_start(index: int, call_id: str) -> str:
    block = {"type": "tool_use", "id": call_id, "name": "get_weather", "input": {}}
    return _event({"type": "content_block_start", "index": index, "content_block": block})


def _json_delta(index: int, partial: str) -> str:
    delta = {"type": "input_json_delta", "partial_json": partial}
    return _event({"type": "content_block_delta", "index": index, "delta": delta})


async def test_stream_accumulates_tool_input_per_block_index(canned_sse: Any, make_provider: Any, collect: Any) -> None:
    usage = {"input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    base_url = canned_sse(
        [
            _event({"type": "message_start", "message": message}),
            _tool_start(0, "toolu_a"),
            _tool_start(1, "toolu_b"),
            _json_delta(1, '{"city": '),
            _json_delta(0, '{"city": "Pa'),
            _json_delta(1, '"Rome"}'),
            _json_delta(0, 'ris"}'),
            _event({"type": "content_block_stop", "index": 0}),
            _event({"type": "content_block_stop", "index": 1}),
            _event(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                    "usage": {"output_tokens": 12},
                }
            ),
            _event({"type": "message_stop"}),
        ]
    )
    _, final = await collect(make_provider(base_url), tools=[WEATHER_TOOL])
    assert final.tool_calls == [
        {"id": "toolu_a", "name": "get_weather", "arguments": {"city": "Paris"}},
        {"id": "toolu_b", "name": "get_weather", "arguments": {"city": "Rome"}},
    ]
    assert (final.usage.input_tokens, final.usage.output_tokens) == (10, 12)


async def test_overloaded_event_midway_raises_529_with_partial_text(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Reply(text="Once upon a time", anthropic_error_after_chunks=4))
    received: list[str] = []
    with pytest.raises(ProviderError) as info:
        async for event in make_provider(llm_server.anthropic_base_url).stream(HELLO, None, PARAMS):
            received.append(event)
    assert info.value.status_code == 529
    assert info.value.partial_text == "".join(received) != ""
    assert info.value.request_id and info.value.request_id.startswith("req_")
    assert llm_server.request_count == 1  # text was delivered: a retry would repeat it


async def test_overloaded_event_before_any_text_is_retried(
    llm_server: LLMServer, make_provider: Any, collect: Any
) -> None:
    llm_server.enqueue(Reply(text="first", anthropic_error_after_chunks=1), Reply(text="second"))
    deltas, final = await collect(make_provider(llm_server.anthropic_base_url))
    assert "".join(deltas) == final.text == "second"
    assert llm_server.request_count == 2


async def test_stream_stalling_midway_times_out_with_partial_text(
    llm_server: LLMServer, make_provider: Any, collect: Any
) -> None:
    llm_server.enqueue(Reply(text="Once upon a time", hang_after_chunks=4))
    provider = make_provider(llm_server.anthropic_base_url, TIMEOUT=0.3)
    with pytest.raises(APITimeoutError) as info:
        await collect(provider)
    assert info.value.partial_text


# --- configuration and clients ----------------------------------------------------------------


# --- settings it cannot send ------------------------------------------------------------------


def claude_agent(server: LLMServer, **settings: Any) -> ChatAgent:
    return ChatAgent(
        provider="anthropic", ANTHROPIC_API_KEY=SECRET, ANTHROPIC_BASE_URL=server.anthropic_base_url, **settings
    )


def test_a_temperature_the_user_set_is_not_sent_and_the_agent_says_so_once(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # TEMPERATURE reached no Anthropic request (the Messages API rejects it) and nothing said so.
    monkeypatch.setattr("aiforge.providers.base._warned_unsent", set())  # "once" is per process

    agent = functools.partial(claude_agent, llm_server)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent()  # the default temperature: nothing was asked for, nothing to say
        told = agent(TEMPERATURE=0.2)
        agent(TEMPERATURE=0.5)
    told.chat("hi")

    assert "temperature" not in llm_server.requests[0].json
    said = [w for w in caught if "TEMPERATURE" in str(w.message)]
    assert [str(w.message) for w in said] == [
        "TEMPERATURE=0.2 is not sent to the anthropic provider: the Messages API (version 2026-10-21, the "
        "anthropic SDK's default) rejects temperature for every model."
    ]
    assert said[0].filename == __file__  # pointed at the user's line


def test_a_service_tier_the_user_set_is_not_sent_and_the_agent_says_so_once(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("aiforge.providers.base._warned_unsent", set())  # "once" is per process

    agent = functools.partial(claude_agent, llm_server)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent()
        told = agent(SERVICE_TIER="flex")
        agent(SERVICE_TIER="priority")
    told.chat("hi")

    assert "service_tier" not in llm_server.requests[0].json
    said = [str(w.message) for w in caught if "SERVICE_TIER" in str(w.message)]
    assert said == [
        "SERVICE_TIER=flex is not sent to the anthropic provider: the Messages API has no flex or priority tier to "
        "ask for per request (its service_tier is auto or standard_only)."
    ]
