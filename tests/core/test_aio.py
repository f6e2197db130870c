"""The sync bridge: works with and without a running loop, relays interrupts as cancellation."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from aiforge.core import aio
from aiforge.core.aio import INTERRUPTED, background_loop, iterate_sync, run_sync
from aiforge.core.types import Interrupted


async def answer(value: int) -> int:
    await asyncio.sleep(0)
    return value


def test_run_sync_without_a_running_loop_returns_the_result() -> None:
    assert run_sync(answer(42)) == 42


def test_run_sync_reuses_the_thread_loop_between_calls() -> None:
    async def current_loop() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    assert run_sync(current_loop()) is run_sync(current_loop())


async def set_as_current_loop() -> None:
    # What LangGraph's runner does on every step: make the running loop the thread's current loop.
    asyncio.set_event_loop(asyncio.get_running_loop())


def test_run_sync_leaves_the_callers_current_event_loop_in_place() -> None:
    mine = asyncio.new_event_loop()
    asyncio.set_event_loop(mine)
    try:
        run_sync(set_as_current_loop())
        assert asyncio.get_event_loop() is mine
    finally:
        asyncio.set_event_loop(None)
        mine.close()


def test_run_sync_leaves_no_current_event_loop_when_there_was_none() -> None:
    asyncio.set_event_loop(None)
    run_sync(set_as_current_loop())
    with pytest.raises(RuntimeError, match="no current event loop"):
        asyncio.get_event_loop()


def test_run_sync_inside_a_running_loop_uses_the_background_thread() -> None:
    async def notebook_cell() -> tuple[int, str]:
        # What a Jupyter cell does: sync API called while the kernel's loop is running.
        def where() -> str:
            return threading.current_thread().name

        async def on_loop() -> str:
            return where()

        return run_sync(answer(7)), run_sync(on_loop())

    value, thread_name = asyncio.run(notebook_cell())
    assert value == 7
    assert thread_name == "aiforge-loop"


def test_run_sync_propagates_exceptions() -> None:
    async def fail() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        run_sync(fail())


def test_keyboard_interrupt_cancels_the_coroutine_and_runs_its_cleanup() -> None:
    cleaned = []

    async def interrupted() -> None:
        try:
            await asyncio.sleep(0)
            raise KeyboardInterrupt
        finally:
            cleaned.append(True)

    with pytest.raises(KeyboardInterrupt):
        run_sync(interrupted())
    assert cleaned == [True]
    assert run_sync(answer(1)) == 1  # the loop is still usable


def test_iterate_sync_yields_items_in_order() -> None:
    async def numbers():
        for i in range(3):
            await asyncio.sleep(0)
            yield i

    assert list(iterate_sync(numbers())) == [0, 1, 2]


def test_iterate_sync_closed_early_closes_the_async_generator() -> None:
    closed = []

    async def numbers():
        try:
            for i in range(10):
                yield i
        finally:
            closed.append(True)

    for item in iterate_sync(numbers()):
        if item == 1:
            break
    assert closed == [True]


def test_interrupt_on_the_background_path_waits_for_cleanup() -> None:
    state: dict[str, bool] = {}

    async def work() -> None:
        try:
            threading.Timer(0.1, lambda: signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)).start()
            await asyncio.sleep(10)
        finally:
            await asyncio.sleep(0.3)
            state["cleaned"] = True

    async def cell() -> None:
        with pytest.raises(KeyboardInterrupt):
            run_sync(work())
        assert state.get("cleaned") is True

    kernel = asyncio.new_event_loop()
    try:
        kernel.run_until_complete(cell())
    finally:
        kernel.close()


def test_system_exit_inside_a_coroutine_does_not_kill_the_background_loop() -> None:
    async def boom() -> None:
        raise SystemExit(3)

    async def cell() -> int:
        with pytest.raises(SystemExit):
            run_sync(boom())
        return run_sync(answer(5))

    assert asyncio.run(cell()) == 5


def test_an_interrupt_ends_in_one_interrupted_without_the_frames_it_landed_in() -> None:
    import traceback

    async def work() -> None:
        threading.Timer(0.1, lambda: signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)).start()
        await asyncio.sleep(10)

    async def cell() -> BaseException:
        with pytest.raises(Interrupted) as info:
            run_sync(work())
        return info.value

    kernel = asyncio.new_event_loop()
    try:
        error = kernel.run_until_complete(cell())
    finally:
        kernel.close()
    text = "".join(traceback.format_exception(error))
    assert str(error) == INTERRUPTED
    assert "concurrent/futures" not in text and "During handling" not in text


def interrupt_at(when: str, method: str = "call_soon_threadsafe") -> Callable[[FrameType, str, Any], Any]:
    """A trace function: a real process-directed SIGINT (what a kernel's Interrupt sends) as the main thread asks
    a loop to run something (``method``; "call": the request never gets there) or just after ("return": it is
    queued there, and the caller holds nothing of it yet). Once: the interrupt's own handling runs untraced.
    """

    def interrupt() -> None:
        sys.settrace(None)
        os.kill(os.getpid(), signal.SIGINT)  # raised as KeyboardInterrupt at the main thread's next check

    def in_frame(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "return":
            interrupt()
        return in_frame

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        if event != "call" or frame.f_code.co_name != method:
            return None
        if when == "call":
            interrupt()
        return in_frame

    return tracer


@pytest.mark.parametrize("when", ["call", "return"])
def test_an_interrupt_at_the_hand_over_never_starts_the_work_and_the_next_call_works(
    when: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while a call is handed to the background loop. The loop is kept busy (a stuck loop, which the
    caller waits for no longer than ``_CLEANUP_WAIT``, 0 here) until the caller has given up on the call, so
    nothing of it can have run yet; then the loop is free and the next call runs there, after what was asked."""
    monkeypatch.setattr(aio, "_CLEANUP_WAIT", 0)
    started: list[bool] = []

    async def work() -> None:
        started.append(True)

    loop = background_loop()
    busy, free = threading.Event(), threading.Event()
    loop.call_soon_threadsafe(lambda: (busy.set(), free.wait()))
    busy.wait()

    async def cell() -> tuple[BaseException, int]:
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.settrace(interrupt_at(when))
        try:
            with pytest.raises(Interrupted) as info:
                run_sync(work())
        finally:
            sys.settrace(None)
            signal.signal(signal.SIGINT, previous)
            free.set()
        return info.value, run_sync(answer(4))

    kernel = asyncio.new_event_loop()
    try:
        error, next_answer = kernel.run_until_complete(cell())
    finally:
        kernel.close()
    assert str(error) == INTERRUPTED
    assert next_answer == 4
    assert started == []
    del error  # its frames hold the coroutine: one never awaited nor closed warns here, failing the test
    gc.collect()


@pytest.mark.parametrize("when", ["call", "return"])
def test_an_interrupt_as_a_plain_script_queues_the_call_never_starts_it(when: str) -> None:
    """Ctrl-C (no running loop: a script, a REPL) as the call becomes a task on the thread's own loop, before
    the caller holds it: it is cancelled before its first step, not run by the next call (or at exit)."""
    started: list[bool] = []

    async def work() -> None:
        started.append(True)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.settrace(interrupt_at(when, "create_task"))
    try:
        with pytest.raises(KeyboardInterrupt) as info:  # (not Interrupted: a raw one would stop pytest)
            run_sync(work())
    finally:
        sys.settrace(None)
        signal.signal(signal.SIGINT, previous)
    assert isinstance(info.value, Interrupted) and str(info.value) == INTERRUPTED
    assert run_sync(answer(5)) == 5
    assert started == []
    del info
    gc.collect()


def test_ctrl_c_again_while_an_interrupted_call_cleans_up_neither_cuts_the_cleanup_nor_returns_before_it() -> None:
    """The call's cleanup (a turn's rollback) sends the second SIGINT itself and goes on only once the waiting
    caller has received it: the caller must still get one ``Interrupted``, after the cleanup, which no second
    cancellation cut short."""
    received: list[int] = []
    second = threading.Event()
    state: dict[str, bool] = {}

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        if len(received) == 2:
            second.set()
        raise KeyboardInterrupt

    async def work() -> None:
        try:
            os.kill(os.getpid(), signal.SIGINT)
            await asyncio.sleep(30)
        finally:
            os.kill(os.getpid(), signal.SIGINT)
            while not second.is_set():
                await asyncio.sleep(0.01)
            await asyncio.sleep(0)
            state["cleaned"] = True

    async def cell() -> tuple[BaseException, bool]:
        previous = signal.signal(signal.SIGINT, on_sigint)
        try:
            with pytest.raises(KeyboardInterrupt) as info:
                run_sync(work())
        finally:
            signal.signal(signal.SIGINT, previous)
        return info.value, state.get("cleaned", False)

    kernel = asyncio.new_event_loop()
    try:
        error, cleaned_before_the_caller_went_on = kernel.run_until_complete(cell())
    finally:
        kernel.close()
    assert isinstance(error, Interrupted) and str(error) == INTERRUPTED
    assert len(received) == 2
    assert cleaned_before_the_caller_went_on
