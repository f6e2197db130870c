"""Ctrl-C in a process that is not a terminal's: the suite started in the background still gets a real Ctrl-C,
and a program interrupted during a sync tool still exits."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
CTRL_C_TEST = (
    "tests/chat/test_agent_loop.py::test_ctrl_c_during_a_slow_sync_tool_cancels_the_turn_and_keeps_history"
)


def _ignore_sigint() -> None:
    # What a non-interactive shell does to a command it starts with `&`.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run(command: list[str], timeout: float, **options: Any) -> subprocess.CompletedProcess[str]:
    """Run ``command``; a process that does not end in time fails with what it printed (and where it hung)."""
    try:
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout, **options)
    except subprocess.TimeoutExpired as exc:
        printed = [part.decode() if isinstance(part, bytes) else part or "" for part in (exc.stdout, exc.stderr)]
        raise AssertionError(f"The process did not end in {timeout} s; it printed:\n" + "\n".join(printed)) from None


@pytest.mark.slow
def test_a_suite_started_with_sigint_ignored_still_gets_keyboard_interrupts() -> None:
    child = _run(
        # faulthandler: a run that hangs after its test prints where each thread waits.
        [sys.executable, "-X", "faulthandler", "-m", "pytest", "-q", "-p", "no:cacheprovider", CTRL_C_TEST],
        timeout=240,
        preexec_fn=_ignore_sigint,
    )
    assert child.returncode == 0, child.stdout[-3000:]


# The Ctrl-C lands in the main thread while the thread pool starts the thread for the first sync tool: between
# Thread.start() and the pool registering the thread (a window the real signal hits now and then on a busy
# machine). Python's exit then waited forever for that thread, which nothing told to stop.
INTERRUPTED_WHILE_THE_POOL_STARTS = textwrap.dedent(
    """
    import threading
    import concurrent.futures.thread as pool_threads
    from langchain_core.tools import StructuredTool
    from aiforge import ChatAgent, ScriptedProvider
    from aiforge.core.types import Interrupted
    from aiforge.providers.scripted import tool_call

    release = threading.Event()
    start_thread = pool_threads.ThreadPoolExecutor._adjust_thread_count

    def start_then_interrupted(executor):
        start_thread(executor)
        for thread in executor._threads:
            pool_threads._threads_queues.pop(thread, None)  # the registration the interrupt skipped
        raise KeyboardInterrupt

    def slow(x: str) -> str:
        '''Blocks until released.'''
        release.wait(30)
        return x

    tool = StructuredTool.from_function(slow, name="slow", description="Blocks")
    agent = ChatAgent(provider=ScriptedProvider([tool_call("slow", x="1"), "after", "again"]), tools=[tool])
    pool_threads.ThreadPoolExecutor._adjust_thread_count = start_then_interrupted
    try:
        agent.chat("slow please")
    except Interrupted:
        print("interrupted", agent.history)
    finally:
        pool_threads.ThreadPoolExecutor._adjust_thread_count = start_thread
        release.set()
    print(agent.chat("once more").message)
    """
)


def test_a_program_interrupted_as_its_first_sync_tool_starts_still_exits() -> None:
    child = _run([sys.executable, "-c", INTERRUPTED_WHILE_THE_POOL_STARTS], timeout=90)
    assert child.returncode == 0, child.stderr[-3000:]
    assert child.stdout.splitlines() == ["interrupted []", "after"]
