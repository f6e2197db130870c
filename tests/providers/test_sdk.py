"""What every SDK provider shares (``providers/sdk.py``): retries, error mapping, streams, clients.

Each test runs against both the real ``openai`` and ``anthropic`` SDKs over HTTP to the fake server.
"""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
import time
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest

from aiforge.core.settings import load_settings
from aiforge.core.types import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConfigError,
    NotFoundError,
    PermissionDeniedError,
    ProviderError,
    RateLimitError,
)
from fakellm import Fault, LLMServer, Reply, ToolCallSpec
from tests.providers.conftest import HELLO, SECRET, WEATHER_TOOL

REPO_ROOT = Path(__file__).resolve().parents[2]


# --- retries ----------------------------------------------------------------------------------


@pytest.mark.usefixtures("pacer_on_a_fake_clock")
async def test_retry_after_is_honoured_then_the_call_succeeds(
    llm_server: LLMServer, protocol: Any, make_provider: Any
) -> None:
    llm_server.enqueue(Fault(429, retry_after=0.2), Fault(429, retry_after=0.2), Reply(text="finally"))
    completion = await make_provider(protocol.base_url(llm_server)).complete(HELLO, None, protocol.params)
    assert completion.text == "finally"
    times = [r.time for r in llm_server.requests]
    assert len(times) == 3
    assert all(later - earlier >= 0.19 for earlier, later in zip(times, times[1:], strict=False))


@pytest.mark.usefixtures("pacer_on_a_fake_clock")
@pytest.mark.parametrize("max_retries", [2, 3])
async def test_permanent_rate_limit_raises_after_max_retries_plus_one_requests(
    llm_server: LLMServer, protocol: Any, make_provider: Any, max_retries: int
) -> None:
    llm_server.enqueue(*[Fault(429, retry_after=0.01)] * 5)
    provider = make_provider(protocol.base_url(llm_server), MAX_RETRIES=max_retries)
    with pytest.raises(RateLimitError) as info:
        await provider.complete(HELLO, None, protocol.params)
    assert llm_server.request_count == max_retries + 1
    assert info.value.status_code == 429 and info.value.retry_after == 0.01
    assert info.value.request_id and info.value.request_id.startswith("req_")


@pytest.mark.parametrize(("hint", "max_wait"), [(120, 5), (90, 2)])
async def test_retry_after_longer_than_retry_max_wait_fails_at_once(
    llm_server: LLMServer, protocol: Any, make_provider: Any, hint: int, max_wait: int
) -> None:
    llm_server.enqueue(Fault(429, retry_after=hint), Reply(text="never"))
    provider = make_provider(protocol.base_url(llm_server), RETRY_MAX_WAIT=max_wait)
    with pytest.raises(RateLimitError) as info:
        await provider.complete(HELLO, None, protocol.params)
    assert info.value.retry_after == hint
    assert "RETRY_MAX_WAIT" in str(info.value)
    assert llm_server.request_count == 1


@pytest.mark.parametrize("status", [500, 529])
async def test_server_error_is_retried(llm_server: LLMServer, protocol: Any, make_provider: Any, status: int) -> None:
    llm_server.enqueue(Fault(status), Reply(text="recovered"))
    completion = await make_provider(protocol.base_url(llm_server)).complete(HELLO, None, protocol.params)
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
    llm_server: LLMServer, protocol: Any, make_provider: Any, status: int, error_class: type[ProviderError]
) -> None:
    llm_server.enqueue(Fault(status, message=f"rejected key {SECRET} for this"))
    with pytest.raises(error_class) as info:
        await make_provider(protocol.base_url(llm_server)).complete(HELLO, None, protocol.params)
    error = info.value
    assert llm_server.request_count == 1
    assert error.status_code == status and error.provider == protocol.name
    assert error.request_id and error.request_id.startswith("req_")
    assert "rejected key" in error.message
    assert SECRET not in str(error) and SECRET not in repr(error) and SECRET not in json.dumps(error.body)
    assert error.__cause__ is None  # the SDK exception's text holds the key: not chained


async def test_authentication_error_names_the_setting_to_fix(
    llm_server: LLMServer, protocol: Any, make_provider: Any
) -> None:
    llm_server.enqueue(Fault(401, message="Incorrect API key provided"))
    with pytest.raises(AuthenticationError, match=protocol.key_setting):
        await make_provider(protocol.base_url(llm_server)).complete(HELLO, None, protocol.params)


async def test_hanging_server_times_out_after_every_attempt(
    llm_server: LLMServer, protocol: Any, make_provider: Any
) -> None:
    llm_server.enqueue(Fault(hang=True), Fault(hang=True), Reply(text="too late"))
    provider = make_provider(protocol.base_url(llm_server), TIMEOUT=0.3, MAX_RETRIES=1)
    with pytest.raises(APITimeoutError):
        await provider.complete(HELLO, None, protocol.params)
    # The client gives up on the second attempt before a busy server thread may have read it: wait for it.
    assert llm_server.wait_for_requests(2, 30) and llm_server.request_count == 2


async def test_unreachable_server_raises_connection_error(protocol: Any, make_provider: Any) -> None:
    with LLMServer() as server:
        base_url = protocol.base_url(server)
    provider = make_provider(base_url, MAX_RETRIES=0)
    with pytest.raises(APIConnectionError, match="connection to"):
        await provider.complete(HELLO, None, protocol.params)


# --- streams ----------------------------------------------------------------------------------


async def test_stream_assembles_tool_calls_and_keeps_invalid_json(
    llm_server: LLMServer, protocol: Any, make_provider: Any, collect: Any
) -> None:
    llm_server.enqueue(
        Reply(tool_calls=[ToolCallSpec("get_weather", {"city": "Paris"}), ToolCallSpec("get_weather", "{oops")])
    )
    deltas, final = await collect(make_provider(protocol.base_url(llm_server)), tools=[WEATHER_TOOL])
    assert deltas == []
    assert [c["arguments"] for c in final.tool_calls] == [{"city": "Paris"}, {}]
    assert final.tool_calls[1]["invalid_arguments"] == "{oops"
    assert final.finish_reason == protocol.tool_finish_reason


@pytest.mark.parametrize("after", [3, 4])
async def test_stream_dropped_midway_raises_with_partial_text_and_is_not_retried(
    llm_server: LLMServer, protocol: Any, make_provider: Any, after: int
) -> None:
    llm_server.enqueue(Reply(text="Once upon a time", drop_after_chunks=after))
    received: list[str] = []
    with pytest.raises(APIConnectionError) as info:
        async for event in make_provider(protocol.base_url(llm_server)).stream(HELLO, None, protocol.params):
            received.append(event)
    assert info.value.partial_text == "".join(received) != ""
    assert info.value.incomplete
    assert llm_server.request_count == 1


@pytest.mark.parametrize("events", [0, 1, 3])
async def test_a_stream_that_ends_before_its_finish_reason_is_an_error_with_its_partial_text(
    llm_server: LLMServer, protocol: Any, make_provider: Any, events: int
) -> None:
    # A broken upstream ended the stream cleanly but early (OpenAI: [DONE] and no finish_reason; Anthropic: no
    # message_delta): the SDKs raise nothing, and the empty or partial text passed for a complete reply.
    llm_server.enqueue(Reply(text="Once upon a time", end_after_chunks=events))
    received: list[str] = []
    with pytest.raises(ProviderError, match="the stream ended before the reply was complete") as info:
        async for event in make_provider(protocol.base_url(llm_server)).stream(HELLO, None, protocol.params):
            received.append(event)
    assert all(isinstance(event, str) for event in received)  # no Completion
    assert info.value.partial_text == "".join(received)
    assert bool(received) == (events == 3)
    assert info.value.provider == protocol.name and llm_server.request_count == 1


async def test_stream_failing_before_any_chunk_is_retried(
    llm_server: LLMServer, protocol: Any, make_provider: Any, collect: Any
) -> None:
    llm_server.enqueue(Fault(503), Reply(text="fine"))
    deltas, final = await collect(make_provider(protocol.base_url(llm_server)))
    assert "".join(deltas) == final.text == "fine"
    assert llm_server.request_count == 2


async def test_leaving_a_stream_early_releases_it(llm_server: LLMServer, protocol: Any, make_provider: Any) -> None:
    llm_server.chunk_delay = 0.05
    llm_server.enqueue(Reply(text="a long story " * 2000))  # over 5 minutes of chunks unless the client hangs up
    provider = make_provider(protocol.base_url(llm_server))
    async with aclosing(provider.stream(HELLO, None, protocol.params)) as events:
        async for _ in events:
            break
    # Released: the server saw the connection close and its handler ended, long before the story would have;
    # 60 s only guards against a hang.
    deadline = time.monotonic() + 60
    while llm_server.in_flight and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert llm_server.in_flight == 0
    llm_server.chunk_delay = 0
    completion = await asyncio.wait_for(provider.complete(HELLO, None, protocol.params), timeout=60)
    assert completion.text == "echo: hello"


# --- configuration and clients ----------------------------------------------------------------


def test_missing_key_is_a_config_error_naming_the_setting(protocol: Any) -> None:
    settings = load_settings(PROVIDER=protocol.name, **{protocol.key_setting: None})
    with pytest.raises(ConfigError, match=protocol.key_setting):
        protocol.provider_class(settings)


def test_connection_key_tells_keys_apart_without_holding_them(protocol: Any) -> None:
    one = protocol.provider_class.connection_key(load_settings(**{protocol.key_setting: "sk-one-1234567"}))
    two = protocol.provider_class.connection_key(load_settings(**{protocol.key_setting: "sk-two-1234567"}))
    assert one != two
    assert "sk-one-1234567" not in repr(one)


async def test_one_client_serves_every_call_on_a_loop(
    llm_server: LLMServer, protocol: Any, make_provider: Any, collect: Any
) -> None:
    provider = make_provider(protocol.base_url(llm_server))
    await provider.complete(HELLO, None, protocol.params)
    first = provider.client()
    await provider.complete(HELLO, None, protocol.params)
    await collect(provider)
    assert provider.client() is first
    first_request, *later = llm_server.requests
    assert all(request.client == first_request.client for request in later)  # same keep-alive connection


def test_provider_works_from_two_event_loops(llm_server: LLMServer, protocol: Any, make_provider: Any) -> None:
    provider = make_provider(protocol.base_url(llm_server))

    async def call() -> tuple[str, object]:
        completion = await provider.complete(HELLO, None, protocol.params)
        client = provider.client()
        await provider.aclose()  # this loop ends here; its client cannot be closed later
        return completion.text, client

    text_one, client_one = asyncio.run(call())
    text_two, client_two = asyncio.run(call())
    assert text_one == text_two == "echo: hello"
    assert client_one is not client_two


def test_a_loop_that_ends_without_closing_its_client_leaves_no_error_behind(
    llm_server: LLMServer, protocol: Any, make_provider: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # The next loop's first call dropped the finished asyncio.run's client; the SDK's __del__ then closed its
    # connections on that next loop, where they do not belong: "Task exception was never retrieved" on stderr.
    provider = make_provider(protocol.base_url(llm_server))

    async def call() -> str:
        return (await provider.complete(HELLO, None, protocol.params)).text

    assert [asyncio.run(call()), asyncio.run(call())] == ["echo: hello", "echo: hello"]
    gc.collect()
    assert [record.getMessage() for record in caplog.records if record.name == "asyncio"] == []


async def test_a_provider_let_go_with_a_client_of_a_finished_loop_leaves_no_error_behind(
    llm_server: LLMServer, protocol: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # Dropped with its provider, the client of a finished asyncio.run had its connections closed by the SDK's
    # __del__ on the loop running at that moment (this one), which failed: "Task exception was never retrieved".
    provider = protocol.provider_class(protocol.settings(protocol.base_url(llm_server)))
    completion = await asyncio.to_thread(asyncio.run, provider.complete(HELLO, None, protocol.params))
    assert completion.text == "echo: hello"

    del provider
    gc.collect()
    await asyncio.sleep(0.05)  # a closing task scheduled on this loop runs (and fails) here
    gc.collect()
    assert [record.getMessage() for record in caplog.records if record.name == "asyncio"] == []


async def test_aclose_releases_the_client_and_the_provider_stays_usable(
    llm_server: LLMServer, protocol: Any, make_provider: Any
) -> None:
    provider = make_provider(protocol.base_url(llm_server))
    await provider.complete(HELLO, None, protocol.params)
    first = provider.client()
    await provider.aclose()
    assert first.is_closed()
    completion = await provider.complete(HELLO, None, protocol.params)
    assert completion.text == "echo: hello" and provider.client() is not first


def test_importing_the_provider_loads_no_sdk(protocol: Any) -> None:
    module = protocol.provider_path.partition(":")[0]
    code = f"import sys, {module}; print(sorted({{'openai', 'anthropic', 'httpx2'}} & set(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    assert result.stdout.strip() == "[]"
