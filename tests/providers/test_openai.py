"""The openai provider over real HTTP: the real ``openai`` SDK against the fake server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from contextlib import aclosing
from typing import Any

import pytest

from aiforge.core.settings import load_settings
from aiforge.core.types import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    CallParams,
    Completion,
    ConfigError,
    Message,
    NotFoundError,
    PermissionDeniedError,
    ProviderError,
    RateLimitError,
)
from aiforge.providers.openai import OpenAIProvider
from tests.support.llm_server import Fault, LLMServer, Reply, ToolCallSpec

SECRET = "sk-test-SECRET"
PARAMS = CallParams(model="gpt-4o-mini")
HELLO: list[Message] = [{"role": "user", "content": "hello"}]
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@pytest.fixture
def make_provider(provider_cleanup: list) -> Callable[..., OpenAIProvider]:
    """``make_provider(base_url, **settings)``: an OpenAIProvider closed when the test ends."""

    def make(base_url: str, **overrides: Any) -> OpenAIProvider:
        settings = load_settings(PROVIDER="openai", OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=base_url, **overrides)
        provider_cleanup.append(provider := OpenAIProvider(settings))
        return provider

    return make


async def collect(provider: OpenAIProvider, messages: list[Message] = HELLO, tools: Any = None) -> tuple[list, Any]:
    deltas, final = [], None
    async for event in provider.stream(messages, tools, PARAMS):
        if isinstance(event, Completion):
            final = event
        else:
            deltas.append(event)
    return deltas, final


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
    llm_server: LLMServer, make_provider: Any, stream: bool
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
    llm_server: LLMServer, make_provider: Any
) -> None:
    llm_server.enqueue(Reply(text="The capital is Paris.", cached_tokens=2))
    deltas, final = await collect(make_provider(llm_server.openai_base_url))
    assert len(deltas) > 2
    assert "".join(deltas) == "The capital is Paris."
    assert final.text == "The capital is Paris."
    assert final.usage.output_tokens > 0 and final.usage.cached_input_tokens == 2
    assert final.finish_reason == "stop" and final.model == "gpt-4o-mini"
    assert llm_server.requests[-1].body["stream_options"] == {"include_usage": True}


async def test_stream_assembles_tool_calls(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(
        Reply(tool_calls=[ToolCallSpec("get_weather", {"city": "Paris"}), ToolCallSpec("get_weather", "{oops")])
    )
    deltas, final = await collect(make_provider(llm_server.openai_base_url), tools=[WEATHER_TOOL])
    assert deltas == []
    assert [c["arguments"] for c in final.tool_calls] == [{"city": "Paris"}, {}]
    assert final.tool_calls[1]["invalid_arguments"] == "{oops"


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
    canned_sse: Any, make_provider: Any
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


async def test_stream_dropped_midway_raises_with_partial_text_and_is_not_retried(
    llm_server: LLMServer, make_provider: Any
) -> None:
    llm_server.enqueue(Reply(text="Once upon a time", drop_after_chunks=3))
    received: list[str] = []
    with pytest.raises(APIConnectionError) as info:
        async for event in make_provider(llm_server.openai_base_url).stream(HELLO, None, PARAMS):
            received.append(event)
    assert info.value.partial_text == "".join(received) != ""
    assert info.value.incomplete
    assert llm_server.request_count == 1


async def test_stream_error_event_midway_raises_with_partial_text(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Reply(text="Once upon a time", openai_error_after_chunks=3))
    received: list[str] = []
    with pytest.raises(ProviderError) as info:
        async for event in make_provider(llm_server.openai_base_url).stream(HELLO, None, PARAMS):
            received.append(event)
    assert info.value.partial_text == "".join(received) != ""
    assert "server had an error" in info.value.message
    assert llm_server.request_count == 1


async def test_stream_failing_before_any_chunk_is_retried(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Fault(503), Reply(text="fine"))
    deltas, final = await collect(make_provider(llm_server.openai_base_url))
    assert "".join(deltas) == final.text == "fine"
    assert llm_server.request_count == 2


# --- retries ----------------------------------------------------------------------------------


async def test_retry_after_is_honoured_then_the_call_succeeds(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Fault(429, retry_after=0.2), Fault(429, retry_after=0.2), Reply(text="finally"))
    completion = await make_provider(llm_server.openai_base_url).complete(HELLO, None, PARAMS)
    assert completion.text == "finally"
    times = [r.time for r in llm_server.requests]
    assert len(times) == 3
    assert all(later - earlier >= 0.19 for earlier, later in zip(times, times[1:], strict=False))


async def test_permanent_rate_limit_raises_after_max_retries_plus_one_requests(
    llm_server: LLMServer, make_provider: Any
) -> None:
    llm_server.enqueue(*[Fault(429, retry_after=0.01)] * 5)
    provider = make_provider(llm_server.openai_base_url, MAX_RETRIES=2)
    with pytest.raises(RateLimitError) as info:
        await provider.complete(HELLO, None, PARAMS)
    assert llm_server.request_count == 3
    assert info.value.status_code == 429 and info.value.retry_after == 0.01
    assert info.value.request_id and info.value.request_id.startswith("req_")


async def test_retry_after_longer_than_retry_max_wait_fails_at_once(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Fault(429, retry_after=120), Reply(text="never"))
    provider = make_provider(llm_server.openai_base_url, RETRY_MAX_WAIT=5)
    with pytest.raises(RateLimitError) as info:
        await provider.complete(HELLO, None, PARAMS)
    assert info.value.retry_after == 120
    assert "RETRY_MAX_WAIT" in str(info.value)
    assert llm_server.request_count == 1


async def test_server_error_is_retried(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Fault(500), Reply(text="recovered"))
    completion = await make_provider(llm_server.openai_base_url).complete(HELLO, None, PARAMS)
    assert completion.text == "recovered"
    assert llm_server.request_count == 2


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (403, PermissionDeniedError),
        (404, NotFoundError),
        (422, BadRequestError),
    ],
)
async def test_client_errors_are_mapped_not_retried_and_never_show_the_key(
    llm_server: LLMServer, status: int, error_class: type[ProviderError], make_provider: Any
) -> None:
    llm_server.enqueue(Fault(status, message=f"rejected key {SECRET} for this"))
    with pytest.raises(error_class) as info:
        await make_provider(llm_server.openai_base_url).complete(HELLO, None, PARAMS)
    error = info.value
    assert llm_server.request_count == 1
    assert error.status_code == status and error.provider == "openai"
    assert error.request_id and error.request_id.startswith("req_")
    assert "rejected key" in error.message
    assert SECRET not in str(error) and SECRET not in repr(error) and SECRET not in json.dumps(error.body)
    assert error.__cause__ is None  # the SDK exception's text holds the key: not chained


async def test_authentication_error_names_the_setting_to_fix(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Fault(401, message="Incorrect API key provided"))
    with pytest.raises(AuthenticationError, match="OPENAI_API_KEY"):
        await make_provider(llm_server.openai_base_url).complete(HELLO, None, PARAMS)


async def test_hanging_server_times_out_after_every_attempt(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Fault(hang=True), Fault(hang=True), Reply(text="too late"))
    provider = make_provider(llm_server.openai_base_url, TIMEOUT=0.3, MAX_RETRIES=1)
    with pytest.raises(APITimeoutError):
        await provider.complete(HELLO, None, PARAMS)
    assert llm_server.request_count == 2


async def test_unreachable_server_raises_connection_error(make_provider: Any) -> None:
    with LLMServer() as server:
        base_url = server.openai_base_url
    provider = make_provider(base_url, MAX_RETRIES=0)
    with pytest.raises(APIConnectionError, match="connection to"):
        await provider.complete(HELLO, None, PARAMS)


# --- configuration and clients ----------------------------------------------------------------


def test_missing_key_is_a_config_error_naming_the_setting() -> None:
    settings = load_settings(PROVIDER="openai", OPENAI_API_KEY=None)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIProvider(settings)


def test_connection_key_tells_keys_apart_without_holding_them() -> None:
    one = OpenAIProvider.connection_key(load_settings(OPENAI_API_KEY="sk-one-1234567"))
    two = OpenAIProvider.connection_key(load_settings(OPENAI_API_KEY="sk-two-1234567"))
    assert one != two
    assert "sk-one-1234567" not in repr(one)


async def test_one_client_serves_every_call_on_a_loop(llm_server: LLMServer, make_provider: Any) -> None:
    provider = make_provider(llm_server.openai_base_url)
    await provider.complete(HELLO, None, PARAMS)
    first = provider.client()
    await provider.complete(HELLO, None, PARAMS)
    assert provider.client() is first
    first_request, second_request = llm_server.requests
    assert first_request.client == second_request.client  # same keep-alive connection


def test_provider_works_from_two_event_loops(llm_server: LLMServer, make_provider: Any) -> None:
    provider = make_provider(llm_server.openai_base_url)

    async def call() -> tuple[str, object]:
        completion = await provider.complete(HELLO, None, PARAMS)
        client = provider.client()
        await provider.aclose()  # this loop ends here; its client cannot be closed later
        return completion.text, client

    text_one, client_one = asyncio.run(call())
    text_two, client_two = asyncio.run(call())
    assert text_one == text_two == "echo: hello"
    assert client_one is not client_two


async def test_aclose_releases_the_client_and_the_provider_stays_usable(
    llm_server: LLMServer, make_provider: Any
) -> None:
    provider = make_provider(llm_server.openai_base_url)
    await provider.complete(HELLO, None, PARAMS)
    first = provider.client()
    await provider.aclose()
    assert first.is_closed()
    completion = await provider.complete(HELLO, None, PARAMS)
    assert completion.text == "echo: hello" and provider.client() is not first


async def test_leaving_a_stream_early_releases_it(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.chunk_delay = 0.05
    llm_server.enqueue(Reply(text="a long story " * 40))
    provider = make_provider(llm_server.openai_base_url)
    async with aclosing(provider.stream(HELLO, None, PARAMS)) as events:
        async for _ in events:
            break
    llm_server.chunk_delay = 0
    completion = await asyncio.wait_for(provider.complete(HELLO, None, PARAMS), timeout=2)
    assert completion.text == "echo: hello"


def test_reasoning_models_get_no_temperature(llm_server) -> None:
    import asyncio

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
