"""Running aiforge's async core from sync code, anywhere, including inside a Jupyter kernel.

With no running loop in this thread, a coroutine runs on a loop private to the thread (kept between calls so
connection pools survive). Inside a running loop (a Jupyter kernel, where ``asyncio.run`` fails) it runs on
aiforge's background loop thread while the caller waits. Ctrl-C, also during the hand-over, cancels the coroutine
(it may never start), waits for its cleanup and raises ``Interrupted`` (one line, no asyncio frames). No nest_asyncio.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import sys
import threading
import time
import weakref
from collections.abc import AsyncIterable, AsyncIterator, Coroutine, Generator
from types import TracebackType
from typing import Any, Generic, TypeVar, cast

from aiforge.core.types import Interrupted

T = TypeVar("T")

INTERRUPTED = "the call was cancelled"

_thread_state = threading.local()
_background_loop: asyncio.AbstractEventLoop | None = None
_background_lock = threading.Lock()
_CLEANUP_WAIT = 10.0  # seconds a caller waits for an interrupted call's cleanup
_private_loops: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
_SETTLE_PASSES = 100  # loop iterations an exiting program gives queued work (a few per finalised generator)


def _private_loop() -> asyncio.AbstractEventLoop:
    loop: asyncio.AbstractEventLoop | None = getattr(_thread_state, "loop", None)
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        _renew_executor(loop)
        _thread_state.loop = loop
        if not _private_loops:
            atexit.register(_finish_private_loops)
        _private_loops.add(loop)
        thread = threading.current_thread()
        if thread is not threading.main_thread():
            # A thread ending before the program must not drop its loop unclosed: it ends with the thread.
            weakref.finalize(thread, _finish_elsewhere, loop).atexit = False  # at exit: _finish_private_loops
    return loop


def _finish_private_loops() -> None:
    """At exit, end each private loop as ``asyncio.run`` ends its own: queued work done, generators closed.

    The SDKs' stream readers (httpx, the SSE decoders) stop their inner generators without closing them;
    the loop closes those when the garbage collector hands them over, as tasks. The last call of a script
    returns before such a task has run, and Python then drops it: "Task was destroyed but it is pending!".
    """
    for loop in list(_private_loops):
        _finish_loop(loop)


def _finish_loop(loop: asyncio.AbstractEventLoop) -> None:
    """End one private loop: queued work done, the user's tasks cancelled, generators closed, then close it.

    Closing the generators closes the SDK clients made on the loop (``providers/sdk_clients.py``): their
    pooled connections end on their own loop instead of leaking as unclosed sockets.
    """
    if loop.is_closed() or loop.is_running():
        return
    try:
        with contextlib.suppress(Exception):  # ending: nothing is left to report to
            idle = 0
            for _ in range(_SETTLE_PASSES):
                _drain(loop)  # runs queued callbacks: a finaliser's create_task, a closing step
                # A closer that ends frees the next generator of its chain, whose closer is queued next.
                idle = 0 if asyncio.all_tasks(loop) else idle + 1
                if idle == 3:
                    break
            pending = asyncio.all_tasks(loop)
            for task in pending:  # work of the user's own left running: cancelled, as asyncio.run does
                task.cancel()
            if pending:  # (gather of nothing asks for the thread's current loop: a loop-end thread has none)
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()


def _finish_elsewhere(loop: asyncio.AbstractEventLoop) -> None:
    """``_finish_loop`` on a thread of its own: the thread that dropped the ended one may be running a loop."""
    try:
        threading.Thread(target=_finish_loop, args=(loop,), name="aiforge-loop-end", daemon=True).start()
    except RuntimeError:  # the interpreter is shutting down: no new threads, and no loop runs any more
        _finish_loop(loop)


def _renew_executor(loop: asyncio.AbstractEventLoop) -> None:
    """Give ``loop`` a new default thread pool (sync tools run there); the old one's threads end when idle.

    After a Ctrl-C the old pool may be broken: an interrupt that lands in the main thread while the pool
    starts a worker thread (the first sync tool of a turn) leaves that thread running but unregistered,
    so nothing at exit tells it to stop and Python waits for it forever. Shutting the old pool down
    wakes every thread that reads its queue, registered or not.
    """
    old: concurrent.futures.ThreadPoolExecutor | None = getattr(_thread_state, "executor", None)
    executor = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="aiforge-sync")
    loop.set_default_executor(executor)
    _thread_state.executor = executor
    if old is not None:
        old.shutdown(wait=False)


def background_loop() -> asyncio.AbstractEventLoop:
    """aiforge's long-lived loop on a daemon thread, started on first use."""
    global _background_loop
    with _background_lock:
        if _background_loop is None or _background_loop.is_closed():
            loop = asyncio.new_event_loop()  # (what is handed over before it runs waits its turn)

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.run_forever()

            threading.Thread(target=serve, name="aiforge-loop", daemon=True).start()
            _background_loop = loop
        return _background_loop


def in_running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _thread_current_loop() -> asyncio.AbstractEventLoop | None:
    """The loop last set with ``asyncio.set_event_loop`` in this thread, read without creating one."""
    # The default policy keeps it per thread in ``_local._loop``. Python 3.14 deprecates the public
    # policy getter: take the internal one where it exists, so a chat() never warns.
    get_policy = getattr(asyncio.events, "_get_event_loop_policy", asyncio.get_event_loop_policy)
    return getattr(getattr(get_policy(), "_local", None), "_loop", None)


def _drain(loop: asyncio.AbstractEventLoop) -> None:
    """Run the loop's already-queued callbacks (a stale ``stop`` among them) once."""
    with contextlib.suppress(RuntimeError):  # "Event loop stopped before Future completed": the stale stop ran
        loop.run_until_complete(asyncio.sleep(0))


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from sync code and return its result."""
    if not in_running_loop():
        loop = _private_loop()
        # LangGraph makes the loop it runs on the thread's current one: the caller's is put back after.
        previous = _thread_current_loop()
        task: asyncio.Task[T] | None = None
        try:
            task = loop.create_task(coro)
            return loop.run_until_complete(task)
        except KeyboardInterrupt:  # cancel the call, also one queued before it was ours, and let it clean up
            task = task or next((t for t in asyncio.all_tasks(loop) if t.get_coro() is coro), None)
            if task is None:
                coro.close()
            elif not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):  # the interrupt is what the caller gets
                    loop.run_until_complete(task)
            else:
                # Landed as the task finished: run_until_complete's queued stop would stop the next call's loop.
                _drain(loop)
            _renew_executor(loop)
            raise _interrupted() from None
        finally:
            if _thread_current_loop() is not previous:
                asyncio.set_event_loop(previous)
    return _run_on_background(coro)


class _Handover(Generic[T]):
    """A call handed to the background loop, where ``start`` and ``abandon`` run in the order asked for; ``abandon``
    is asked for once ``start`` was (or never will be): the call never starts, or is cancelled. ``done``: all ended."""

    def __init__(self, coro: Coroutine[Any, Any, T]) -> None:
        self.coro, self.done, self.abandoned = coro, threading.Event(), False
        self.task: asyncio.Task[None] | None = None
        self.outcome: tuple[bool, Any] = (False, None)

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self.run())
        self.task.add_done_callback(self.end)

    async def run(self) -> None:
        try:  # every exception goes to the caller: KeyboardInterrupt or SystemExit would stop the loop for good
            self.outcome = True, await self.coro
        except BaseException as exc:  # noqa: BLE001
            self.outcome = False, exc

    def end(self, _: object = None) -> None:
        self.coro.close()  # (a task cancelled before its first step never awaited it)
        self.done.set()

    def abandon(self) -> None:
        if self.abandoned:  # asked again: a second cancel would cut the call's cleanup short
            return
        self.abandoned = True
        if self.task is None:
            self.end()
        else:
            self.task.cancel()

    def abandon_and_wait(self) -> None:
        """(In the caller's thread) ask for ``abandon`` and wait, ``_CLEANUP_WAIT`` at most, for the cancelled
        call's cleanup (history rollback). Ctrl-C meanwhile (one landing in the request too) asks again."""
        deadline = time.monotonic() + _CLEANUP_WAIT
        while True:
            with contextlib.suppress(KeyboardInterrupt):
                background_loop().call_soon_threadsafe(self.abandon)
                self.done.wait(max(0.0, deadline - time.monotonic()))  # (past the deadline: at once)
                return


def _run_on_background(coro: Coroutine[Any, Any, T]) -> T:
    # Ctrl-C can land anywhere here, in asyncio's frames too: the loop is then asked to abandon the call.
    call: _Handover[T] | None = None
    try:
        call = _Handover(coro)
        background_loop().call_soon_threadsafe(call.start)
        call.done.wait()
        ok, value = call.outcome
    except KeyboardInterrupt:
        coro.close() if call is None else call.abandon_and_wait()
        raise _interrupted() from None
    if not ok:
        raise value  # (a KeyboardInterrupt the coroutine raised too, as it is)
    return cast(T, value)  # ``await coro``'s result


def _interrupted() -> Interrupted:
    """The caller's interrupt, or the ``Interrupted`` the coroutine raised with its own message."""
    current = sys.exc_info()[1]
    return current if isinstance(current, Interrupted) else Interrupted(INTERRUPTED)


class closing_iterator(Generic[T]):  # noqa: N801 - used like contextlib.aclosing, whose name it echoes
    """``async with closing_iterator(source) as items``: ``source``'s iterator, closed however the block ends.

    A loop that stops early (``return`` on a stream's final item, ``break``, an exception) leaves an async
    generator suspended; the garbage collector then hands its ``aclose`` to the loop as a task, which the
    loop may never run ("Task was destroyed but it is pending!" when the process exits). Unlike
    ``contextlib.aclosing`` it takes any async iterable: one without ``aclose`` has nothing to close.
    """

    def __init__(self, source: AsyncIterable[T]) -> None:
        self._iterator: AsyncIterator[T] = aiter(source)

    async def __aenter__(self) -> AsyncIterator[T]:
        return self._iterator

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        aclose = getattr(self._iterator, "aclose", None)
        if aclose is not None:
            await aclose()


def iterate_sync(source: AsyncIterable[T]) -> Generator[T, None, None]:
    """Iterate an async iterable (an async generator, a streamed turn) from sync code, one item at a time.

    Closing the returned iterator early (``break``) closes the async generator too, so its
    cleanup (recording a streamed turn) runs.
    """
    agen = aiter(source)

    async def next_item() -> tuple[T] | None:
        try:
            return (await agen.__anext__(),)
        except StopAsyncIteration:
            return None

    async def close() -> None:
        aclose = getattr(agen, "aclose", None)
        if aclose is not None:
            await aclose()

    finished = False
    try:
        while True:
            got = run_sync(next_item())
            if got is None:
                finished = True
                return
            yield got[0]
    finally:
        if not finished:
            run_sync(close())
