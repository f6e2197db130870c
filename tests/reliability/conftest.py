"""Fixtures of the reliability suite: an isolated configuration, the fake LLM server, wire agents.

Every test talks to servers on 127.0.0.1 that it starts itself; a test that forgets its base
URL hits the discard port and fails fast instead of reaching a real API.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psutil
import pytest

from aiforge import ChatAgent
from fakellm import LLMServer, RecordedRequest

KEY = "sk-test-SECRET"
"""The API key every wire agent of this suite uses; it must never show up anywhere."""
PROTOCOLS = ("openai", "anthropic")




@pytest.fixture
def srv() -> Iterator[LLMServer]:
    """A strict fake OpenAI + Anthropic server: 400 on orphan tool calls/results, like the real APIs."""
    with LLMServer(strict=True) as server:
        yield server


@pytest.fixture(params=PROTOCOLS)
def protocol(request: pytest.FixtureRequest) -> str:
    return request.param


def make_agent(server: LLMServer | str, protocol: str, **kwargs: Any) -> ChatAgent:
    """A ChatAgent on the real openai or anthropic SDK talking to ``server`` (or a base URL), with key ``KEY``."""
    kwargs.setdefault("MAX_RETRIES", 0)
    kwargs.setdefault("TIMEOUT", 10.0)
    base = server if isinstance(server, str) else server.base_url
    if protocol == "openai":
        return ChatAgent(provider="openai", OPENAI_API_KEY=KEY, OPENAI_BASE_URL=base + "/v1", **kwargs)
    return ChatAgent(provider="anthropic", ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=base, **kwargs)


WireAgent = Callable[..., ChatAgent]


@pytest.fixture
def wire_agent(srv: LLMServer, protocol: str) -> WireAgent:
    """``wire_agent(**kwargs)``: a ChatAgent of the parametrized protocol against ``srv``."""
    return lambda **kwargs: make_agent(srv, protocol, **kwargs)


def rejected(server: LLMServer) -> list[RecordedRequest]:
    """Requests the strict server refused with 400 although no fault was scripted for them."""
    return [r for r in server.requests if r.status == 400 and r.response is None]


def system_of(request: RecordedRequest) -> str:
    """The system prompt as sent: OpenAI's system messages, Anthropic's ``system`` parameter."""
    if request.protocol == "openai":
        return "\n\n".join(m["content"] for m in request.messages if m["role"] == "system")
    system = request.body.get("system")
    return system if isinstance(system, str) else "".join(b["text"] for b in system or [])


def tool_results_of(request: RecordedRequest) -> list[tuple[str, str]]:
    """``(call id, content)`` of every tool result in a request, in either wire format."""
    results = []
    for m in request.messages:
        if m.get("role") == "tool":
            results.append((m["tool_call_id"], m["content"]))
        elif isinstance(m.get("content"), list):
            for block in m["content"]:
                if block.get("type") == "tool_result":
                    content = block.get("content", "")
                    if isinstance(content, list):
                        content = "".join(b.get("text", "") for b in content)
                    results.append((block["tool_use_id"], content))
    return results


# ---------------------------------------------------------------------------
# Interrupts and leaks
# ---------------------------------------------------------------------------


@contextmanager
def sigint_when(ready: Callable[[], bool], *, delay: float = 0.05, timeout: float = 60.0) -> Iterator[None]:
    """Send SIGINT to the main thread (Ctrl-C, a kernel's stop button) once ``ready()`` is true.

    The default handler is installed for the duration, so the interrupt surfaces as
    KeyboardInterrupt wherever the main thread is waiting.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    done = threading.Event()

    def fire() -> None:
        waited = 0.0
        while not ready() and waited < timeout and not done.is_set():
            done.wait(0.005)
            waited += 0.005
        if not done.wait(delay):
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # type: ignore[arg-type]

    thread = threading.Thread(target=fire, name="sigint-sender", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(2)
        signal.signal(signal.SIGINT, previous)


def client_threads() -> int:
    """Threads of this process that are not the fake server's own."""
    return sum(
        1
        for t in threading.enumerate()
        if "process_request_thread" not in t.name and not t.name.startswith("LLMServer:")
    )


def client_sockets(server: LLMServer) -> int:
    """Open TCP sockets of this process connected to ``server`` (the client side of each connection)."""
    return sum(
        1
        for c in psutil.Process().net_connections(kind="tcp")
        if c.raddr and c.raddr.port == server.port and c.status == psutil.CONN_ESTABLISHED
    )


class Overdue(Exception):
    """Raised by ``within`` when a call that must be quick is not: a hang, reported as a failure."""


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Fail with ``Overdue`` instead of hanging when the block takes longer than ``seconds`` (main thread)."""

    def overdue(signum: int, frame: Any) -> None:
        raise Overdue(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, overdue)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(autouse=True)
def fresh_pacers() -> Iterator[None]:
    """Each test starts with no rate-limit state: a 429 pause learned by one test must not slow the next.

    Pacers are process-wide per provider, endpoint and key (``providers.pacing``); a later test's server
    can reuse an earlier one's port.
    """
    from aiforge.providers import pacing

    yield
    with pacing._pacers_lock:
        pacing._pacers.clear()
