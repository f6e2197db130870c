"""The openai provider over real HTTP: the real ``openai`` SDK against the fake server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from aiforge.core.settings import load_settings
from aiforge.core.types import (
    CallParams,
    Message,
    ProviderError,
)
from aiforge.providers.openai import OpenAIProvider
from fakellm import LLMServer, Reply, ToolCallSpec
from tests.providers.conftest import HELLO, OPENAI, SECRET, WEATHER_TOOL, WireProtocol

PARAMS = CallParams(model="gpt-4o-mini")


@pytest.fixture
def protocol() -> WireProtocol:
    """Pins conftest's ``make_provider`` and ``collect`` to the openai provider."""
    return OPENAI


# --- completions ------------------------------------------------------------------------------


async def test_complete_returns_text_usage_and_model(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Reply(text="Paris.", usage={"prompt_tokens": 12, "completion_tokens": 3}, cached_tokens=4))
    completion = await make_provider(llm_server.openai_base_url).complete(HELLO, None, PARAMS)
    assert completion.text == "Paris."
    assert completion.model == "gpt-4o-mini"
    assert completion.finish_reason == "stop"
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (12, 3)
    assert completion.usage.cached_input_tokens == 4


async def test_messages_and_tools_are_sent_in_chat_completions_shape(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.strict = True
    llm_server.enqueue(Reply(text="ok"))
    messages: list[Message] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}},
                {"id": "call_2", "name": "get_weather", "arguments": {"city": "Rome"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_2", "content": "rainy"},
    ]
    params = CallParams(model="gpt-4o", temperature=0.2, max_tokens=50)
    await make_provider(llm_server.openai_base_url).complete(messages, [WEATHER_TOOL], params)

    body = llm_server.requests[-1].body
    assert body["model"] == "gpt-4o"
    assert body["temperature"] == 0.2
    assert body["max_completion_tokens"] == 50
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assistant = body["messages"][2]
    assert assistant["role"] == "assistant" and assistant["content"] is None
    assert assistant["tool_calls"][0] == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})},
    }
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city",
                "parameters": WEATHER_TOOL["parameters"],
            },
        }
    ]


async def test_tool_calls_are_returned_with_parsed_arguments(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Reply(tool_calls=[ToolCallSpec("get_weather", {"city": "Paris"}, id="call_9")]))
    completion = await make_provider(llm_server.openai_base_url).complete(HELLO, [WEATHER_TOOL], PARAMS)
    assert completion.text == ""
    assert completion.finish_reason == "tool_calls"
    assert completion.tool_calls == [{"id": "call_9", "name": "get_weather", "arguments": {"city": "Paris"}}]


@pytest.mark.parametrize("raw", ['{"city": "Par', "[1, 2]"])
async def test_arguments_that_are_not_a_json_object_are_kept_as_invalid_arguments(
    llm_server: LLMServer, raw: str, make_provider: Any
) -> None:
    llm_server.enqueue(Reply(tool_calls=[ToolCallSpec("get_weather", raw)]))
    completion = await make_provider(llm_server.openai_base_url).complete(HELLO, [WEATHER_TOOL], PARAMS)
    (call,) = completion.tool_calls
    assert call["arguments"] == {}
    assert call["invalid_arguments"] == raw


TOOL_HISTORY: list[Message] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
]


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
async def test_requests_match_what_the_sdk_create_method_sends(
    llm_server: LLMServer, make_provider: Any, collect: Any, stream: bool
) -> None:
    # aiforge posts its wire-shaped body with client.post, skipping create()'s request transform:
    # the server must see the very same request, headers included.
    provider = make_provider(llm_server.openai_base_url)
    params = CallParams(model="gpt-4o", temperature=0.2, max_tokens=50)
    if stream:
        await collect(provider, TOOL_HISTORY, [WEATHER_TOOL])
    else:
        await provider.complete(TOOL_HISTORY, [WEATHER_TOOL], params)
    ours = llm_server.requests[-1]
    request = provider._request(TOOL_HISTORY, [WEATHER_TOOL], PARAMS if stream else params)
    if stream:
        request.update(stream=True, stream_options={"include_usage": True})
    sdk_stream = await provider.client().chat.completions.create(**request)
    if stream:
        await sdk_stream.close()
    theirs = llm_server.requests[-1]
    assert ours.path == theirs.path
    assert ours.body == theirs.body
    assert ours.headers.keys() == theirs.headers.keys()
    assert {k: v for k, v in ours.headers.items() if k != "content-length"} == {
        k: v for k, v in theirs.headers.items() if k != "content-length"
    }


def test_the_sdk_request_transform_leaves_aiforge_requests_unchanged() -> None:
    # What makes posting the body as is safe: create() would send the same JSON.
    from openai._utils import maybe_transform
    from openai.types.chat import completion_create_params

    settings = load_settings(PROVIDER="openai", OPENAI_API_KEY=SECRET)
    request = OpenAIProvider(settings)._request(TOOL_HISTORY, [WEATHER_TOOL], CallParams("gpt-4o", 0.2, 50))
    assert maybe_transform(request, completion_create_params.CompletionCreateParamsNonStreaming) == request
    request.update(stream=True, stream_options={"include_usage": True})
    assert maybe_transform(request, completion_create_params.CompletionCreateParamsStreaming) == request


async def test_a_json_answer_labelled_as_text_is_still_read(canned_sse: Any, make_provider: Any) -> None:
    answer = {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Paris."}, "finish_reason": "stop"}],
    }
    base_url = canned_sse([json.dumps(answer)], content_type="text/plain")
    completion = await make_provider(base_url + "/v1").complete(HELLO, None, PARAMS)
    assert (completion.text, completion.model, completion.finish_reason) == ("Paris.", "gpt-4o-mini", "stop")


async def test_an_answer_that_is_not_a_chat_completion_is_a_provider_error(canned_sse: Any, make_provider: Any) -> None:
    base_url = canned_sse(["<html>Sign in to the proxy</html>"], content_type="text/html")
    with pytest.raises(ProviderError, match="not a Chat Completions object: '<html>Sign in"):
        await make_provider(base_url + "/v1").complete(HELLO, None, PARAMS)


# --- streaming --------------------------------------------------------------------------------


async def test_stream_yields_text_deltas_then_a_completion_with_usage(
    llm_server: LLMServer, make_provider: Any, collect: Any
) -> None:
    llm_server.enqueue(Reply(text="The capital is Paris.", cached_tokens=2))
    deltas, final = await collect(make_provider(llm_server.openai_base_url))
    assert len(deltas) > 2
    assert "".join(deltas) == "The capital is Paris."
    assert final.text == "The capital is Paris."
    assert final.usage.output_tokens > 0 and final.usage.cached_input_tokens == 2
    assert final.finish_reason == "stop" and final.model == "gpt-4o-mini"
    assert llm_server.requests[-1].body["stream_options"] == {"include_usage": True}


def _chunk(delta: dict[str, Any] | None = None, finish: str | None = None, usage: Any = None) -> str:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    data = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "gpt-4o-mini", "choices": choices}
    if usage is not None:
        data["usage"] = usage
    return f"data: {json.dumps(data)}\n\n"


def _fragment(index: int, arguments: str, call_id: str | None = None) -> dict[str, Any]:
    fragment: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id:
        fragment.update(id=call_id, type="function", function={"name": "get_weather", "arguments": arguments})
    return {"tool_calls": [fragment]}


async def test_stream_assembles_interleaved_fragments_of_parallel_tool_calls(
    canned_sse: Any, make_provider: Any, collect: Any
) -> None:
    base_url = canned_sse(
        [
            _chunk({"role": "assistant", "content": None}),
            _chunk(_fragment(0, "", "call_a")),
            _chunk(_fragment(1, '{"ci', "call_b")),
            _chunk(_fragment(0, '{"city": ')),
            _chunk(_fragment(1, 'ty": "Rome"}')),
            _chunk(_fragment(0, '"Paris"}')),
            _chunk({}, finish="tool_calls"),
            _chunk(None, usage={"prompt_tokens": 9, "completion_tokens": 7, "total_tokens": 16}),
            "data: [DONE]\n\n",
        ]
    )
    _, final = await collect(make_provider(base_url + "/v1"), tools=[WEATHER_TOOL])
    assert final.tool_calls == [
        {"id": "call_a", "name": "get_weather", "arguments": {"city": "Paris"}},
        {"id": "call_b", "name": "get_weather", "arguments": {"city": "Rome"}},
    ]
    assert (final.usage.input_tokens, final.usage.output_tokens) == (9, 7)
    assert final.finish_reason == "tool_calls"


async def test_stream_error_event_midway_raises_with_partial_text(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Reply(text="Once upon a time", openai_error_after_chunks=3))
    received: list[str] = []
    with pytest.raises(ProviderError) as info:
        async for event in make_provider(llm_server.openai_base_url).stream(HELLO, None, PARAMS):
            received.append(event)
    assert info.value.partial_text == "".join(received) != ""
    assert "server had an error" in info.value.message
    assert llm_server.request_count == 1


async def test_a_stream_whose_body_ends_without_done_or_finish_reason_is_an_error(
    llm_server: LLMServer, make_provider: Any
) -> None:
    # The connection closed cleanly (the chunked body ended) after some text, with neither a finish_reason
    # nor [DONE]: the SDK stops iterating without an error.
    llm_server.enqueue(Reply(text="Once upon a time", end_after_chunks=3, done=False))
    received: list[str] = []
    with pytest.raises(ProviderError, match="the stream ended before the reply was complete") as info:
        async for event in make_provider(llm_server.openai_base_url).stream(HELLO, None, PARAMS):
            received.append(event)
    assert info.value.partial_text == "".join(received) != ""


def test_reasoning_models_get_no_temperature(llm_server) -> None:

    from aiforge.core.settings import load_settings
    from aiforge.core.types import CallParams
    from aiforge.providers.openai import OpenAIProvider

    provider = OpenAIProvider(
        load_settings(PROVIDER="openai", OPENAI_API_KEY="sk-test-SECRET", OPENAI_BASE_URL=llm_server.openai_base_url)
    )
    msgs = [{"role": "user", "content": "hi"}]
    asyncio.run(provider.complete(msgs, None, CallParams(model="o4-mini", temperature=0.7)))
    asyncio.run(provider.complete(msgs, None, CallParams(model="gpt-4o-mini", temperature=0.7)))
    bodies = [r.json for r in llm_server.requests]
    assert "temperature" not in bodies[0]
    assert bodies[1]["temperature"] == 0.7


# --- service tiers ----------------------------------------------------------------------------


def _agent(llm_server: LLMServer, **settings: Any) -> Any:
    from aiforge import ChatAgent

    return ChatAgent(provider="openai", OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=llm_server.openai_base_url, **settings)


def test_service_tier_is_sent_when_set_and_not_when_unset(llm_server: LLMServer) -> None:
    _agent(llm_server, MODEL="o4-mini", SERVICE_TIER="flex").run("hi")
    _agent(llm_server, MODEL="o4-mini").run("hi")
    assert [r.body.get("service_tier", "unsent") for r in llm_server.requests] == ["flex", "unsent"]


def test_a_flex_reply_is_priced_at_the_flex_price(llm_server: LLMServer) -> None:
    flex = _agent(llm_server, MODEL="gpt-5-mini", SERVICE_TIER="flex").run("price me")
    standard = _agent(llm_server, MODEL="gpt-5-mini").run("price me")
    assert (flex.input_tokens, flex.output_tokens) == (standard.input_tokens, standard.output_tokens)
    assert standard.cost > 0 and flex.priced
    assert flex.cost == pytest.approx(standard.cost / 2)  # flex bills at Batch API rates
    assert llm_server.requests[0].body["service_tier"] == "flex"


def test_the_tier_that_served_the_call_is_priced_not_the_one_asked_for(llm_server: LLMServer) -> None:
    # OpenAI may serve a priority request at the default tier; its response says which.
    usage = {"prompt_tokens": 1000, "completion_tokens": 100}
    llm_server.enqueue(Reply(text="ok", usage=usage, service_tier="default"), Reply(text="ok", usage=usage))
    agent = _agent(llm_server, MODEL="gpt-4o-mini", SERVICE_TIER="priority")
    served_default, served_priority = agent.run("a"), agent.run("b")
    assert [r.service_tier for r in agent.cost_tracker.records] == ["default", "priority"]
    assert served_default.cost == pytest.approx((1000 * 0.15 + 100 * 0.60) / 1e6)  # list price
    assert served_priority.cost == pytest.approx((1000 * 0.25 + 100 * 1.00) / 1e6)  # openai.com priority price


def test_a_tier_reply_without_a_known_price_is_unpriced_and_says_so(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("aiforge.core.costs._warned_models", set())  # "once" is per process
    with pytest.warns(UserWarning, match="no priority-tier price for model 'gpt-5-nano'"):
        response = _agent(llm_server, MODEL="gpt-5-nano", SERVICE_TIER="priority").run("hi")
    assert (response.cost, response.priced) == (0.0, False)  # unknown, not guessed at the list price


async def test_a_stream_reports_the_tier_that_served_it(llm_server: LLMServer, make_provider: Any) -> None:
    events = [e async for e in make_provider(llm_server.openai_base_url).stream(
        HELLO, None, CallParams(model="o4-mini", service_tier="flex")
    )]
    assert llm_server.requests[-1].body["service_tier"] == "flex"
    assert events[-1].service_tier == "flex"
