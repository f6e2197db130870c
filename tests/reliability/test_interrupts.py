"""Interrupts (Ctrl-C, a kernel's stop button, task cancellation) during a model call, a tool and a stream.

Whatever is interrupted, on whichever path (async, sync, ``%%chat`` in a terminal shell or in a
kernel), the agent stays usable: its history is what it was before the turn, and its next
request passes the strict server, which rejects any orphan tool call or result.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import CapturedIO, capture_output
from langchain_core.tools import StructuredTool

from aiforge import ChatAgent
from aiforge.core.aio import run_sync
from fakellm import LLMServer, Reply, ToolCallSpec
from tests.chat.checks import assert_valid_history
from tests.reliability.conftest import make_agent, rejected, sigint_when, within

ROOT = Path(__file__).resolve().parents[2]
PHASES = ("model", "tool", "stream")
QUESTION = "What is the weather in Oslo?"
LONG_ANSWER = "It is cold and bright in Oslo today, with a light wind from the north. " * 3


class SlowTool:
    """An async tool that blocks until the test is over; ``started`` is set when it runs."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.finished = threading.Event()

        async def slow_lookup(city: str) -> str:
            """Look up the weather of a city (slowly)."""
            self.started.set()
            await asyncio.sleep(30)
            self.finished.set()
            return f"sunny in {city}"

        self.tool = StructuredTool.from_function(coroutine=slow_lookup, name="slow_lookup")


@pytest.fixture
def slow_tool() -> SlowTool:
    return SlowTool()


def interrupting_sync_tool() -> StructuredTool:
    def fragile(city: str) -> str:
        """A sync tool the user interrupts (KeyboardInterrupt raised while it runs)."""
        raise KeyboardInterrupt

    return StructuredTool.from_function(fragile, name="fragile")


def arm(srv: LLMServer, phase: str) -> None:
    """Script the server so that the next turn spends seconds in ``phase``."""
    if phase == "model":
        srv.enqueue(Reply(text="too late", delay=5))
    elif phase == "tool":
        srv.enqueue(Reply(tool_calls=[ToolCallSpec("slow_lookup", {"city": "Oslo"})]))
    else:
        # Slow chunks keep the waiting thread idle, so Ctrl-C lands while it waits for the network
        # (a Ctrl-C in the instant a step completes is test_ctrl_c_as_a_sync_step_completes_...).
        srv.chunk_delay = 0.2
        srv.enqueue(Reply(text=LONG_ANSWER))


def ready(srv: LLMServer, phase: str, slow_tool: SlowTool, chunks: list[str] | None) -> Callable[[], bool]:
    """True once the turn is inside ``phase`` (for a stream the caller cannot watch, once it was asked for)."""
    arrived = srv.request_count + 1
    if phase == "tool":
        return slow_tool.started.is_set
    if phase == "stream" and chunks is not None:
        return lambda: bool(chunks)
    return lambda: srv.request_count >= arrived


def settle(phase: str, watched: bool) -> float:
    """Seconds between ``ready`` and the interrupt: a stream nobody watches gets time to deliver chunks."""
    return 0.5 if phase == "stream" and not watched else 0.05


def assert_usable(agent: ChatAgent, srv: LLMServer, before: list[dict[str, Any]]) -> None:
    """The interrupted turn left no trace, and the next request is one the strict server accepts."""
    assert agent.history == before
    srv.chunk_delay = 0
    n = srv.request_count
    with within(60):  # 60 s only guards against a hang
        response = agent.chat("after the interrupt")
    assert response.message == "echo: after the interrupt"
    assert [r.status for r in srv.requests[n:]] == [200]
    assert not rejected(srv)
    assert_valid_history(agent.history)
    assert agent.history == [*before, *agent.history[-2:]]


def prepared_agent(srv: LLMServer, protocol: str, *tools: StructuredTool) -> tuple[ChatAgent, list[dict[str, Any]]]:
    agent = make_agent(srv, protocol, tools=list(tools))
    agent.chat("Hello!")
    return agent, agent.history


# ---------------------------------------------------------------------------
# async: task cancellation
# ---------------------------------------------------------------------------


async def wait_until(condition: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the turn never reached the phase to interrupt"
        await asyncio.sleep(0.005)


@pytest.mark.parametrize("phase", PHASES)
async def test_cancelling_achat_leaves_the_agent_usable(
    srv: LLMServer, protocol: str, phase: str, slow_tool: SlowTool
) -> None:
    agent = make_agent(srv, protocol, tools=[slow_tool.tool])
    await agent.achat("Hello!")
    before = agent.history
    arm(srv, phase)
    chunks: list[str] = []

    async def consume() -> None:
        async for chunk in agent.chat_stream(QUESTION):
            chunks.append(chunk)

    task = asyncio.create_task(consume() if phase == "stream" else agent.achat(QUESTION))
    await wait_until(ready(srv, phase, slow_tool, chunks))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert agent.history == before
    srv.chunk_delay = 0
    n = srv.request_count
    response = await asyncio.wait_for(agent.achat("after the interrupt"), 60)
    assert response.message == "echo: after the interrupt"
    assert [r.status for r in srv.requests[n:]] == [200]
    assert not rejected(srv)
    assert agent.history == [*before, *agent.history[-2:]]
    assert not slow_tool.finished.is_set()  # the cancelled tool was cancelled, not awaited


async def test_cancelling_one_turn_does_not_disturb_a_concurrent_one(srv: LLMServer, protocol: str) -> None:
    interrupted = make_agent(srv, protocol)
    other = make_agent(srv, protocol)
    srv.enqueue(Reply(text="slow", delay=5), Reply(text="fine", delay=0.3))

    slow = asyncio.create_task(interrupted.achat("first"))
    await asyncio.to_thread(srv.wait_for_requests, 1)
    fine = asyncio.create_task(other.achat("second"))
    await asyncio.to_thread(srv.wait_for_requests, 2)
    slow.cancel()

    assert (await fine).message == "fine"
    with pytest.raises(asyncio.CancelledError):
        await slow
    assert interrupted.history == []
    assert [m["content"] for m in other.history] == ["second", "fine"]


# ---------------------------------------------------------------------------
# sync: Ctrl-C while chat() or run_stream() waits
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("phase", PHASES)
def test_ctrl_c_in_sync_chat_leaves_the_agent_usable(
    srv: LLMServer, protocol: str, phase: str, slow_tool: SlowTool
) -> None:
    agent, before = prepared_agent(srv, protocol, slow_tool.tool)
    arm(srv, phase)
    chunks: list[str] = []

    with sigint_when(ready(srv, phase, slow_tool, chunks)), pytest.raises(KeyboardInterrupt), within(60):
        if phase == "stream":
            for chunk in agent.run_stream(QUESTION):
                chunks.append(chunk)
        else:
            agent.chat(QUESTION)

    if phase == "stream":
        assert chunks and LONG_ANSWER.startswith("".join(chunks))
    assert_usable(agent, srv, before)


def test_keyboard_interrupt_raised_by_a_sync_tool_leaves_the_agent_usable(srv: LLMServer, protocol: str) -> None:
    agent, before = prepared_agent(srv, protocol, interrupting_sync_tool())
    srv.enqueue(Reply(tool_calls=[ToolCallSpec("fragile", {"city": "Oslo"})]))

    with pytest.raises(KeyboardInterrupt), within(60):
        agent.chat(QUESTION)

    assert_usable(agent, srv, before)


def _ctrl_c() -> None:
    raise KeyboardInterrupt


def test_ctrl_c_as_a_sync_step_completes_leaves_the_next_sync_call_working(srv: LLMServer, protocol: str) -> None:
    # A signal handler runs between any two bytecodes of the main thread, so Ctrl-C can land in the
    # instant after a step of a sync call has finished and before the event loop has stopped. A
    # loop callback that raises KeyboardInterrupt at that point reproduces it deterministically.
    # It runs in a thread of its own, so a broken event loop is not inherited by later tests.
    agent, before = prepared_agent(srv, protocol)
    outcome: dict[str, Any] = {}

    async def step_that_ends_as_ctrl_c_arrives() -> None:
        asyncio.get_running_loop().call_soon(_ctrl_c)

    def user_thread() -> None:
        try:
            run_sync(step_that_ends_as_ctrl_c_arrives())
        except KeyboardInterrupt:
            outcome["interrupted"] = True
        try:
            outcome["next"] = agent.chat("after the interrupt")
        except BaseException as exc:  # noqa: BLE001 - reported below
            outcome["next"] = exc
        # Anything the interrupt left behind runs to its end now, on this thread's loop, rather than
        # being finalised by the garbage collector in the middle of a later test.
        run_sync(asyncio.sleep(0.3))

    thread = threading.Thread(target=user_thread, daemon=True)
    thread.start()
    thread.join(60)

    assert not thread.is_alive(), "the next sync call hung"
    assert outcome.get("interrupted")
    assert not isinstance(outcome["next"], BaseException), repr(outcome["next"])
    assert outcome["next"].message == "echo: after the interrupt"
    assert agent.history == [*before, *agent.history[-2:]]
    assert srv.request_count == 2 and not rejected(srv)  # no turn left behind that ran later


# ---------------------------------------------------------------------------
# %%chat: the stop button in a terminal shell and in a kernel
# ---------------------------------------------------------------------------


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    ip = InteractiveShell.instance()
    names = set(ip.user_ns)
    ip.run_line_magic("load_ext", "aiforge")
    yield ip
    ip.run_line_magic("unload_ext", "aiforge")
    for name in set(ip.user_ns) - names:
        del ip.user_ns[name]


def run_cell(shell: InteractiveShell, source: str, *, kernel: bool) -> tuple[Any, CapturedIO]:
    """Run a cell; ``kernel=True`` runs it inside a running event loop, as ipykernel does."""

    def run() -> tuple[Any, CapturedIO]:
        with capture_output() as captured:
            result = shell.run_cell(source)
        return result, captured

    if not kernel:
        return run()

    async def in_loop() -> tuple[Any, CapturedIO]:
        return run()

    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(in_loop())
    finally:
        loop.close()


def assert_magic_usable(
    shell: InteractiveShell, agent: ChatAgent, srv: LLMServer, before: list[dict[str, Any]], *, kernel: bool
) -> None:
    assert agent.history == before
    srv.chunk_delay = 0
    n = srv.request_count
    with within(60):  # 60 s only guards against a hang
        result, _ = run_cell(shell, "%%chat -a agent\nafter the interrupt", kernel=kernel)
    assert result.success, result.error_in_exec
    assert shell.user_ns["_chat"].message == "echo: after the interrupt"
    assert [r.status for r in srv.requests[n:]] == [200]
    assert not rejected(srv)
    assert_valid_history(agent.history)


@pytest.mark.parametrize("kernel", [False, True], ids=["terminal", "kernel"])
@pytest.mark.parametrize("phase", PHASES)
def test_stop_button_during_chat_magic_leaves_the_agent_usable(
    shell: InteractiveShell, srv: LLMServer, protocol: str, phase: str, kernel: bool, slow_tool: SlowTool
) -> None:
    agent, before = prepared_agent(srv, protocol, slow_tool.tool)
    shell.user_ns["agent"] = agent
    arm(srv, phase)

    with sigint_when(ready(srv, phase, slow_tool, None), delay=settle(phase, watched=False)), within(60):
        result, captured = run_cell(shell, f"%%chat -a agent\n{QUESTION}", kernel=kernel)

    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    assert "Interrupted" in captured.stdout and "Traceback" not in captured.stdout
    assert_magic_usable(shell, agent, srv, before, kernel=kernel)


def test_keyboard_interrupt_from_a_tool_in_chat_magic_leaves_the_agent_usable(
    shell: InteractiveShell, srv: LLMServer, protocol: str
) -> None:
    agent, before = prepared_agent(srv, protocol, interrupting_sync_tool())
    shell.user_ns["agent"] = agent
    srv.enqueue(Reply(tool_calls=[ToolCallSpec("fragile", {"city": "Oslo"})]))

    with within(60):
        result, _ = run_cell(shell, f"%%chat -a agent\n{QUESTION}", kernel=False)

    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    assert_magic_usable(shell, agent, srv, before, kernel=False)


# In a kernel the turn runs on aiforge's background loop thread; if that loop died, every later
# sync call would hang, so this case runs in a child process with a watchdog.
KERNEL_CELLS = """
import asyncio, faulthandler, json, sys
faulthandler.dump_traceback_later(90, exit=True)  # a hang fails the test, with stacks
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from langchain_core.tools import StructuredTool
from tests.reliability.conftest import make_agent

def fragile(city: str) -> str:
    \"\"\"A sync tool the user interrupts.\"\"\"
    raise KeyboardInterrupt

shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "aiforge")
shell.user_ns["agent"] = make_agent(sys.argv[1], sys.argv[2], tools=[StructuredTool.from_function(fragile)])

async def cells():
    outcomes = []
    for source in ("%%chat -a agent\\nWeather in Oslo?", "%%chat -a agent\\nafter the interrupt"):
        with capture_output():
            result = shell.run_cell(source)
        outcomes.append(type(result.error_in_exec).__name__ if result.error_in_exec else "ok")
    return outcomes

outcomes = asyncio.new_event_loop().run_until_complete(cells())
print(json.dumps({"outcomes": outcomes, "history": shell.user_ns["agent"].history}))
"""


def test_keyboard_interrupt_from_a_tool_in_a_kernel_leaves_the_agent_usable(srv: LLMServer) -> None:
    protocol = "openai"  # the tool path is the same for every provider; the child process is the cost
    srv.enqueue(Reply(tool_calls=[ToolCallSpec("fragile", {"city": "Oslo"})]))

    child = subprocess.run(
        [sys.executable, "-c", KERNEL_CELLS, srv.base_url, protocol],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )

    assert child.returncode == 0, f"the kernel hung or crashed:\n{child.stderr[-3000:]}"
    report = json.loads(child.stdout.strip().splitlines()[-1])
    assert report["outcomes"] == ["KeyboardInterrupt", "ok"]
    assert [m["content"] for m in report["history"]] == ["after the interrupt", "echo: after the interrupt"]
    assert not rejected(srv)
