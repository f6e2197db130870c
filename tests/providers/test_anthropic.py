"""The anthropic provider over real HTTP: the real ``anthropic`` SDK against the fake server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
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
from aiforge.providers.anthropic import AnthropicProvider
from tests.support.llm_server import Fault, LLMServer, Reply, ToolCallSpec

REPO_ROOT = Path(__file__).resolve().parents[2]

SECRET = "sk-test-SECRET"
PARAMS = CallParams(model="claude-haiku-4-5")
HELLO: list[Message] = [{"role": "user", "content": "hello"}]
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@pytest.fixture
def make_provider(provider_cleanup: list) -> Callable[..., AnthropicProvider]:
    """``make_provider(base_url, **settings)``: an AnthropicProvider closed when the test ends."""

    def make(base_url: str, **overrides: Any) -> AnthropicProvider:
        settings = load_settings(
            PROVIDER="anthropic", ANTHROPIC_API_KEY=SECRET, ANTHROPIC_BASE_URL=base_url, **overrides
        )
        provider_cleanup.append(provider := AnthropicProvider(settings))
        return provider

    return make


async def collect(provider: AnthropicProvider, messages: list[Message] = HELLO, tools: Any = None) -> tuple[list, Any]:
    deltas, final = [], None
    async for event in provider.stream(messages, tools, PARAMS):
        if isinstance(event, Completion):
            final = event
        else:
            deltas.append(event)
    return deltas, final


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
    llm_server: LLMServer, make_provider: Any
) -> None:
    llm_server.enqueue(Reply(text="The capital is Paris.", cached_tokens=5, cache_creation_tokens=1))
    deltas, final = await collect(make_provider(llm_server.anthropic_base_url))
    assert len(deltas) > 2
    assert "".join(deltas) == final.text == "The capital is Paris."
    assert final.usage.cached_input_tokens == 5 and final.usage.cache_write_tokens == 1
    assert final.usage.input_tokens >= 6 and final.usage.output_tokens > 0
    assert final.finish_reason == "end_turn" and final.model == "claude-haiku-4-5"


async def test_stream_assembles_tool_input_and_keeps_invalid_json(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(
        Reply(tool_calls=[ToolCallSpec("get_weather", {"city": "Paris"}), ToolCallSpec("get_weather", "{oops")])
    )
    deltas, final = await collect(make_provider(llm_server.anthropic_base_url), tools=[WEATHER_TOOL])
    assert deltas == []
    assert [c["arguments"] for c in final.tool_calls] == [{"city": "Paris"}, {}]
    assert final.tool_calls[1]["invalid_arguments"] == "{oops"
    assert final.finish_reason == "tool_use"


def _event(data: dict[str, Any]) -> str:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"


def _tool_start(index: int, call_id: str) -> str:
    block = {"type": "tool_use", "id": call_id, "name": "get_weather", "input": {}}
    return _event({"type": "content_block_start", "index": index, "content_block": block})


def _json_delta(index: int, partial: str) -> str:
    delta = {"type": "input_json_delta", "partial_json": partial}
    return _event({"type": "content_block_delta", "index": index, "delta": delta})


async def test_stream_accumulates_tool_input_per_block_index(canned_sse: Any, make_provider: Any) -> None:
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


async def test_overloaded_event_before_any_text_is_retried(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Reply(text="first", anthropic_error_after_chunks=1), Reply(text="second"))
    deltas, final = await collect(make_provider(llm_server.anthropic_base_url))
    assert "".join(deltas) == final.text == "second"
    assert llm_server.request_count == 2


async def test_stream_dropped_midway_raises_with_partial_text(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Reply(text="Once upon a time", drop_after_chunks=4))
    received: list[str] = []
    with pytest.raises(APIConnectionError) as info:
        async for event in make_provider(llm_server.anthropic_base_url).stream(HELLO, None, PARAMS):
            received.append(event)
    assert info.value.partial_text == "".join(received) != ""
    assert llm_server.request_count == 1


async def test_stream_stalling_midway_times_out_with_partial_text(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Reply(text="Once upon a time", hang_after_chunks=4))
    provider = make_provider(llm_server.anthropic_base_url, TIMEOUT=0.3)
    with pytest.raises(APITimeoutError) as info:
        await collect(provider)
    assert info.value.partial_text


# --- retries and errors -----------------------------------------------------------------------


async def test_retry_after_is_honoured_then_the_call_succeeds(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Fault(429, retry_after=0.2), Fault(429, retry_after=0.2), Reply(text="finally"))
    completion = await make_provider(llm_server.anthropic_base_url).complete(HELLO, None, PARAMS)
    assert completion.text == "finally"
    times = [r.time for r in llm_server.requests]
    assert len(times) == 3
    assert all(later - earlier >= 0.19 for earlier, later in zip(times, times[1:], strict=False))


async def test_permanent_rate_limit_raises_after_max_retries_plus_one_requests(
    llm_server: LLMServer, make_provider: Any
) -> None:
    llm_server.enqueue(*[Fault(429, retry_after=0.01)] * 5)
    with pytest.raises(RateLimitError) as info:
        await make_provider(llm_server.anthropic_base_url, MAX_RETRIES=3).complete(HELLO, None, PARAMS)
    assert llm_server.request_count == 4
    assert info.value.retry_after == 0.01


async def test_retry_after_longer_than_retry_max_wait_fails_at_once(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Fault(429, retry_after=90), Reply(text="never"))
    with pytest.raises(RateLimitError) as info:
        await make_provider(llm_server.anthropic_base_url, RETRY_MAX_WAIT=2).complete(HELLO, None, PARAMS)
    assert info.value.retry_after == 90
    assert llm_server.request_count == 1


async def test_overloaded_response_is_retried(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Fault(529), Reply(text="recovered"))
    completion = await make_provider(llm_server.anthropic_base_url).complete(HELLO, None, PARAMS)
    assert completion.text == "recovered"
    assert llm_server.request_count == 2


@pytest.mark.parametrize(
    ("status", "error_class"),
    [(400, BadRequestError), (401, AuthenticationError), (403, PermissionDeniedError), (404, NotFoundError)],
)
async def test_client_errors_are_mapped_not_retried_and_never_show_the_key(
    llm_server: LLMServer, status: int, error_class: type[ProviderError], make_provider: Any
) -> None:
    llm_server.enqueue(Fault(status, message=f"rejected key {SECRET} for this"))
    with pytest.raises(error_class) as info:
        await make_provider(llm_server.anthropic_base_url).complete(HELLO, None, PARAMS)
    error = info.value
    assert llm_server.request_count == 1
    assert error.status_code == status and error.provider == "anthropic"
    assert error.request_id and error.request_id.startswith("req_")
    assert "rejected key" in error.message
    assert SECRET not in str(error) and SECRET not in repr(error) and SECRET not in json.dumps(error.body)
    assert error.__cause__ is None


async def test_hanging_server_times_out_after_every_attempt(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Fault(hang=True), Fault(hang=True), Reply(text="too late"))
    provider = make_provider(llm_server.anthropic_base_url, TIMEOUT=0.3, MAX_RETRIES=1)
    with pytest.raises(APITimeoutError):
        await provider.complete(HELLO, None, PARAMS)
    assert llm_server.request_count == 2


# --- configuration and clients ----------------------------------------------------------------


def test_missing_key_is_a_config_error_naming_the_setting() -> None:
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        AnthropicProvider(load_settings(PROVIDER="anthropic", ANTHROPIC_API_KEY=None))


async def test_one_client_serves_every_call_on_a_loop(llm_server: LLMServer, make_provider: Any) -> None:
    provider = make_provider(llm_server.anthropic_base_url)
    await provider.complete(HELLO, None, PARAMS)
    first = provider.client()
    await collect(provider)
    assert provider.client() is first
    assert llm_server.requests[0].client == llm_server.requests[1].client


def test_provider_works_from_two_event_loops(llm_server: LLMServer, make_provider: Any) -> None:
    provider = make_provider(llm_server.anthropic_base_url)

    async def call() -> tuple[str, object]:
        completion = await provider.complete(HELLO, None, PARAMS)
        client = provider.client()
        await provider.aclose()  # this loop ends here; its client cannot be closed later
        return completion.text, client

    text_one, client_one = asyncio.run(call())
    text_two, client_two = asyncio.run(call())
    assert text_one == text_two == "echo: hello"
    assert client_one is not client_two


def test_importing_the_anthropic_provider_loads_no_sdk() -> None:
    code = "import sys, aiforge.providers.anthropic; print(sorted({'openai', 'anthropic'} & set(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    assert result.stdout.strip() == "[]"
