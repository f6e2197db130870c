"""Faults of the services aiforge talks to: rate limits, client errors, timeouts, broken streams.

Each test drives the real openai or anthropic SDK over HTTP against the strict fake server.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
import traceback
from collections.abc import Iterator

import pytest
from langchain_core.tools import StructuredTool

from aiforge.core.types import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    NotFoundError,
    PermissionDeniedError,
    ProviderError,
    RateLimitError,
)
from fakellm import Fault, LLMServer, Reply, ToolCallSpec
from tests.chat.checks import assert_valid_history
from tests.reliability.conftest import KEY, client_sockets, client_threads, make_agent, rejected, within


def full_text(error: BaseException) -> str:
    """Everything a user could see of an error: str, repr, attributes and the whole traceback."""
    shown = "".join(traceback.format_exception(error))
    return f"{error}\n{error!r}\n{vars(error)!r}\n{shown}"


# ---------------------------------------------------------------------------
# Rate limits
# ---------------------------------------------------------------------------


@pytest.mark.usefixtures("pacer_on_a_fake_clock")
def test_retry_after_is_honoured_then_the_call_succeeds(srv: LLMServer, wire_agent) -> None:
    srv.enqueue(Fault(status=429, retry_after=1), Fault(status=429, retry_after=1), Reply(text="finally"))
    agent = wire_agent(MAX_RETRIES=2)

    response = agent.chat("hello")

    assert response.message == "finally"
    first, second, third = srv.requests
    assert srv.request_count == 3
    assert second.time - first.time >= 0.98 and third.time - second.time >= 0.98  # the waits were honoured
    # No upper bound: how the wait is made up (the hint exactly, no backoff added; the pacer's slower pace after a
    # 429) is checked on fake clocks in tests/core/test_retry.py and tests/providers/test_pacing.py; a limit on
    # wall time here would only measure how busy the machine is.
    assert first.body == second.body == third.body


def test_retry_after_above_the_cap_raises_rate_limit_error_at_once(srv: LLMServer, wire_agent) -> None:
    srv.enqueue(Fault(status=429, retry_after=3600), Reply(text="never asked"))
    agent = wire_agent(MAX_RETRIES=3, RETRY_MAX_WAIT=5)

    # Waiting out the hour (or the 5 s cap, then asking again) would be the bug; 60 s only guards against that hang.
    with within(60), pytest.raises(RateLimitError) as caught:
        agent.chat("hello")

    assert srv.request_count == 1
    assert caught.value.retry_after == 3600
    assert caught.value.status_code == 429
    assert "RETRY_MAX_WAIT" in str(caught.value)
    assert agent.history == []


@pytest.mark.usefixtures("pacer_on_a_fake_clock")
@pytest.mark.parametrize("max_retries", [0, 2])
@pytest.mark.parametrize("mode", ["complete", "stream"])
def test_permanent_429_fails_after_max_retries_plus_one_attempts(
    srv: LLMServer, wire_agent, max_retries: int, mode: str
) -> None:
    srv.default = lambda request: Fault(status=429, retry_after=0.05)
    agent = wire_agent(MAX_RETRIES=max_retries)

    with pytest.raises(RateLimitError) as caught:
        if mode == "complete":
            agent.chat("hello")
        else:
            list(agent.run_stream("hello"))

    assert srv.request_count == max_retries + 1  # aiforge retries; the SDK's own retries are off
    assert caught.value.retry_after == pytest.approx(0.05)
    assert agent.history == []


@pytest.mark.parametrize("status", [500, 503, 529])
def test_permanent_5xx_fails_after_max_retries_plus_one_attempts(srv: LLMServer, wire_agent, status: int) -> None:
    srv.default = lambda request: Fault(status=status, retry_after=0)
    agent = wire_agent(MAX_RETRIES=2)

    with pytest.raises(ProviderError) as caught:
        agent.chat("hello")

    assert srv.request_count == 3
    assert caught.value.status_code == status


# ---------------------------------------------------------------------------
# Client errors: asked once, mapped, no key in the message
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_class"),
    [(400, BadRequestError), (401, AuthenticationError), (403, PermissionDeniedError), (404, NotFoundError)],
)
def test_client_error_is_requested_once_mapped_and_keyless(
    srv: LLMServer, wire_agent, status: int, error_class: type[ProviderError]
) -> None:
    # Real APIs echo (part of) a bad key; this server echoes all of it.
    srv.enqueue(Fault(status=status, message=f"Incorrect API key provided: {KEY}. Find yours at ..."))
    agent = wire_agent(MAX_RETRIES=3)

    with pytest.raises(error_class) as caught:
        agent.chat("hello")

    assert srv.request_count == 1
    assert caught.value.status_code == status
    assert caught.value.request_id
    assert "Incorrect API key provided" in str(caught.value)
    assert KEY not in full_text(caught.value)
    assert agent.history == []


# ---------------------------------------------------------------------------
# Timeouts and silent servers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["complete", "stream"])
def test_hanging_server_times_out_after_the_configured_attempts(srv: LLMServer, wire_agent, mode: str) -> None:
    srv.default = lambda request: Fault(hang=True)
    agent = wire_agent(TIMEOUT=0.3, MAX_RETRIES=1)

    started = time.monotonic()
    # Only a hang guard: the default TIMEOUT (60 s, twice) would trip it; that 0.3 s is the limit used is
    # test_slow_answer_beyond_the_timeout_is_a_timeout's.
    with within(60), pytest.raises(APITimeoutError) as caught:
        if mode == "complete":
            agent.chat("hello")
        else:
            list(agent.run_stream("hello"))
    elapsed = time.monotonic() - started

    # The client gives up on the second attempt before a busy server thread may have read it: wait for it.
    assert srv.wait_for_requests(2, 30) and srv.request_count == 2
    assert elapsed >= 0.55  # each attempt waited for its timeout (a lower bound: a busy machine only adds to it)
    assert "TIMEOUT" in str(caught.value)
    assert agent.history == []


@pytest.mark.parametrize("mode", ["complete", "stream"])
def test_slow_answer_beyond_the_timeout_is_a_timeout(srv: LLMServer, wire_agent, mode: str) -> None:
    # The answer would come after 30 s (the server's wait ends when it closes): only the configured 0.3 s makes
    # this a timeout, however busy the machine; with the default TIMEOUT (60 s) the call would succeed.
    srv.latency = 30
    agent = wire_agent(TIMEOUT=0.3, MAX_RETRIES=0)

    with pytest.raises(APITimeoutError):
        if mode == "complete":
            agent.chat("hello")
        else:
            list(agent.run_stream("hello"))
    assert srv.request_count == 1


@pytest.fixture
def silent_listener() -> Iterator[tuple[str, list[socket.socket]]]:
    """A TCP server that accepts connections and never reads or writes a byte."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.05)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    stop.set()
    thread.join(2)
    listener.close()
    for conn in accepted:
        conn.close()


def test_server_that_accepts_and_never_answers_times_out(silent_listener, protocol: str) -> None:
    url, accepted = silent_listener
    agent = make_agent(url, protocol, TIMEOUT=0.3, MAX_RETRIES=2)

    with within(60), pytest.raises(APITimeoutError):  # 60 s only guards against a hang
        agent.chat("hello")

    assert len(accepted) == 3  # one connection per attempt: the timed-out one is not reused


@pytest.mark.slow
def test_timeouts_leak_no_connections_or_threads(srv: LLMServer, wire_agent) -> None:
    agent = wire_agent(TIMEOUT=0.2, MAX_RETRIES=1)
    agent.chat("warm up the connection pool")
    srv.default = lambda request: Fault(hang=True)
    with pytest.raises(APITimeoutError):
        agent.chat("warm up the timeout path")
    time.sleep(0.1)
    threads, sockets = client_threads(), client_sockets(srv)

    for i in range(3):
        with pytest.raises(APITimeoutError):
            agent.chat(f"complete {i}")
        with pytest.raises(APITimeoutError):
            list(agent.run_stream(f"stream {i}"))

    deadline = time.monotonic() + 60  # only guards against a hang
    while srv.in_flight and time.monotonic() < deadline:  # the server notices the clients leaving
        time.sleep(0.02)
    assert srv.in_flight == 0, "a timed-out request is still open on the server"
    assert client_threads() <= threads
    assert client_sockets(srv) <= max(sockets, 1)
    srv.default = None
    assert agent.chat("still works").message == "echo: still works"


# ---------------------------------------------------------------------------
# Streams that fail half way
# ---------------------------------------------------------------------------

TEXT = "The quick brown fox jumps over the lazy dog."


def mid_stream_failure(protocol: str, kind: str, after: int = 4) -> Reply:
    if kind == "drop":
        return Reply(text=TEXT, drop_after_chunks=after)
    if kind == "stall":
        return Reply(text=TEXT, hang_after_chunks=after)
    if protocol == "anthropic":
        return Reply(text=TEXT, anthropic_error_after_chunks=after + 1)  # `event: error` overloaded_error
    return Reply(text=TEXT, openai_error_after_chunks=after)  # `data: {"error": ...}`


@pytest.mark.parametrize("kind", ["drop", "error_event", "stall"])
async def test_mid_stream_failure_reaches_the_caller_with_the_partial_text(
    srv: LLMServer, protocol: str, wire_agent, kind: str
) -> None:
    agent = wire_agent(MAX_RETRIES=2, TIMEOUT=0.5)
    await agent.achat("first question")
    before = agent.history
    srv.reset()
    srv.enqueue(mid_stream_failure(protocol, kind))

    chunks: list[str] = []
    with pytest.raises(ProviderError) as caught:
        async for chunk in agent.chat_stream("second question"):
            chunks.append(chunk)

    error = caught.value
    assert chunks and "".join(chunks) == error.partial_text
    assert TEXT.startswith(error.partial_text) and error.partial_text != TEXT
    assert error.incomplete
    if kind == "drop":
        assert isinstance(error, APIConnectionError)
    elif kind == "stall":
        assert isinstance(error, APITimeoutError)
    elif protocol == "anthropic":
        assert error.status_code == 529 and "Overloaded" in str(error)
    assert srv.request_count == 1  # text already reached the caller: a retry would repeat it
    assert agent.history == before  # the failed turn is not half-stored

    response = await agent.achat("third question")
    assert response.message == "echo: third question"
    assert not rejected(srv)
    assert_valid_history(agent.history)
    assert [m["content"] for m in agent.history[-2:]] == ["third question", "echo: third question"]


@pytest.mark.parametrize("kind", ["drop", "error_event"])
def test_mid_stream_failure_in_sync_streaming_keeps_the_partial_text(
    srv: LLMServer, protocol: str, wire_agent, kind: str
) -> None:
    agent = wire_agent(MAX_RETRIES=1)
    srv.enqueue(mid_stream_failure(protocol, kind))

    chunks: list[str] = []
    with pytest.raises(ProviderError) as caught:
        for chunk in agent.run_stream("question"):
            chunks.append(chunk)

    assert caught.value.incomplete and caught.value.partial_text == "".join(chunks)
    assert agent.history == []
    assert agent.chat("again").message == "echo: again"
    assert not rejected(srv)


def test_mid_stream_failure_after_a_tool_call_leaves_a_valid_history(srv: LLMServer, protocol: str, wire_agent) -> None:
    def weather(city: str) -> str:
        """Weather of a city."""
        return f"sunny in {city}"

    lookup = StructuredTool.from_function(weather)
    agent = wire_agent(tools=[lookup], MAX_RETRIES=1)
    srv.enqueue(
        Reply(text="Let me check.", tool_calls=[ToolCallSpec("weather", {"city": "Oslo"})]),
        mid_stream_failure(protocol, "drop", after=5),
    )

    with pytest.raises(APIConnectionError) as caught:
        list(agent.run_stream("Weather in Oslo?"))

    assert caught.value.incomplete
    assert agent.history == []  # no orphan tool call or result was stored
    assert agent.chat("And in Rome?").message == "echo: And in Rome?"
    assert not rejected(srv)


def test_stream_that_fails_before_any_text_is_retried(srv: LLMServer, protocol: str, wire_agent) -> None:
    srv.enqueue(Reply(text=TEXT, drop_after_chunks=1), Reply(text=TEXT))
    agent = wire_agent(MAX_RETRIES=1)

    assert "".join(agent.run_stream("hello")) == TEXT
    assert srv.request_count == 2
    assert agent.last_response is not None and agent.last_response.message == TEXT


def test_complete_call_cut_mid_body_is_retried(srv: LLMServer, protocol: str, wire_agent) -> None:
    srv.enqueue(Reply(text=TEXT, drop_after_chunks=1), Reply(text=TEXT))
    agent = wire_agent(MAX_RETRIES=1)

    assert agent.chat("hello").message == TEXT
    assert srv.request_count == 2


async def test_a_hanging_call_does_not_block_other_turns(srv: LLMServer, protocol: str) -> None:
    # Agents share the provider and its connection pool: one stuck request must not stall the others.
    # Its TIMEOUT outlasts the others however busy the machine is (a hang's timeout is tested above), so "still
    # waiting" below is an ordering, not a race; it is then stopped like any turn.
    hanging = make_agent(srv, protocol, TIMEOUT=60.0)
    fine = [make_agent(srv, protocol) for _ in range(5)]
    srv.enqueue(Fault(hang=True))

    stuck = asyncio.create_task(hanging.achat("stuck"))
    assert await asyncio.to_thread(srv.wait_for_requests, 1, 60)  # the hang is the first request
    answers = await asyncio.gather(*(agent.achat(f"q{i}") for i, agent in enumerate(fine)))

    assert [a.message for a in answers] == [f"echo: q{i}" for i in range(5)]
    assert not stuck.done()  # the others finished while it was still waiting
    stuck.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stuck
    assert hanging.history == []
