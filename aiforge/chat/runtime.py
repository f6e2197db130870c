"""A streamed turn (``TurnStream``) and its tool events; what a turn runs on is ``batch.request.call``'s."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from aiforge.chat.tool_runner import ToolInterrupted
from aiforge.core.types import ToolResult

if TYPE_CHECKING:
    from types import AsyncGeneratorType

    from aiforge.chat.response import ChatResponse


@dataclass(frozen=True, slots=True)
class ToolEvent:
    """A tool call that finished during a streamed turn: ``{"id", "tool", "input", "output", "error"}``."""

    result: ToolResult


_DONE = object()
_UNWIND_POLLS = 1000  # 10 s


class TurnStream:
    """A streamed turn: ``async for delta in stream`` yields its text; then ``stream.response`` is set.

    ``run(emit)`` is the turn, started when iteration starts. Iterate once. The iteration
    yields text only; ``on_tool``, when set before iterating, is called with each tool
    call's result as soon as the tool has run. Closing the
    iteration early (``aclose``, ``break``) lets the turn finish and records it; cancelling the
    consuming task, or ``cancel()``, cancels the turn and leaves the history as it was.
    """

    def __init__(self, run: Callable[[Callable[[Any], None]], Coroutine[Any, Any, ChatResponse]]) -> None:
        self._run = run
        self.on_tool: Callable[[ToolResult], None] | None = None
        """Called with ``{"id", "tool", "input", "output", "error"}`` for each finished tool call."""
        self._deltas: AsyncGeneratorType[str, None] | None = None
        self.response: ChatResponse | None = None
        """The turn's ``ChatResponse``, once the iteration has ended normally."""

    def __aiter__(self) -> AsyncGenerator[str, None]:
        if self._deltas is not None:
            raise RuntimeError("a TurnStream is iterated once")
        # The generator object itself (not just the protocol): cancel() reads its ag_running.
        self._deltas = cast("AsyncGeneratorType[str, None]", self._stream())
        return self._deltas

    async def _stream(self) -> AsyncGenerator[str, None]:
        queue: asyncio.Queue[Any] = asyncio.Queue()
        task = asyncio.ensure_future(self._run(queue.put_nowait))
        task.add_done_callback(lambda _t: queue.put_nowait(_DONE))
        finished = False
        try:
            while (item := await queue.get()) is not _DONE:
                if isinstance(item, ToolEvent):
                    if self.on_tool is not None:
                        self.on_tool(item.result)
                    continue
                yield item
            finished = True
            self.response = task.result()
        except ToolInterrupted as exc:
            raise exc.original from None
        except GeneratorExit:
            # Closed early by the caller: finish the turn so it is recorded like chat().
            await asyncio.gather(task, return_exceptions=True)
            raise
        finally:
            if not finished and not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            elif not finished and not task.cancelled():
                # A KeyboardInterrupt raised inside the turn escaped the loop to the caller, leaving
                # the task holding it: retrieved here, or asyncio reports it as never retrieved.
                task.exception()

    async def cancel(self) -> None:
        """Cancel the turn (the history stays as it was) and end the iteration."""
        deltas = self._deltas
        if deltas is None:
            return
        # An interrupt while waiting has already cancelled the pending step, which may still be
        # unwinding; a stream merely suspended between chunks gets the cancellation thrown in.
        for _ in range(_UNWIND_POLLS):
            if not deltas.ag_running:
                break
            await asyncio.sleep(0.01)
        with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
            await deltas.athrow(asyncio.CancelledError())
