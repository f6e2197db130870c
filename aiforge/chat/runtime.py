"""What a turn runs on: the agent's fixed part (built once), one turn's own data, and a streamed turn."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import AsyncGenerator, Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from aiforge.chat.tool_runner import ToolInterrupted, Toolset
from aiforge.core import otel
from aiforge.core.aio import closing_iterator
from aiforge.core.costs import CostTracker
from aiforge.core.tier_override import with_batch_tier
from aiforge.core.tokens import TRUNCATED_FINISH_REASONS
from aiforge.core.types import CallParams, Completion, Message, ToolCall, ToolResult, TraceRecord
from aiforge.core.waits import Waits, start_turn
from aiforge.providers.base import Provider

if TYPE_CHECKING:
    from types import AsyncGeneratorType

    from aiforge.chat.response import ChatResponse


@dataclass(frozen=True, slots=True)
class AgentRuntime:
    """What every turn of one agent shares; built when the agent is constructed."""

    provider: Provider  # as the graph sees it: native tool calls only (see providers.prompted)
    provider_name: str
    free: bool  # calls cost zero rather than "unknown" (local models, fakes)
    params: CallParams
    toolset: Toolset
    cost_tracker: CostTracker
    price_overrides: dict[str, dict[str, float]] | None
    telemetry: otel.Telemetry | None = None
    """Where the agent's OpenTelemetry spans go (``OTEL=True``); None: no spans."""


@dataclass(frozen=True, slots=True)
class ToolEvent:
    """A tool call that finished during a streamed turn: ``{"id", "tool", "input", "output", "error"}``."""

    result: ToolResult


@dataclass(slots=True)
class Turn:
    """One turn's own data, handed to the graph's nodes in the run config."""

    runtime: AgentRuntime
    conversation_id: str
    emit: Callable[[str | ToolEvent], None] | None = None
    """Where streamed text (and ``ToolEvent``s) go; None for a turn that is not streamed."""
    params: CallParams | None = None
    """This turn's call parameters (e.g. with ``output``); None for the agent's own."""
    trace_id: str = field(default_factory=lambda: secrets.token_hex(8))
    cost: float = 0.0
    priced: bool = True
    streamed_text: bool = False
    """Some text of this turn has reached the stream."""
    step_streamed_text: bool = False
    """Some text of the current model step has reached the stream."""
    waits: Waits = field(default_factory=start_turn)
    """The turn's waits (a batch's queue, the pacer, the local engine): made current when the turn starts."""

    async def call_model(self, messages: list[Message], node: str) -> tuple[Completion, TraceRecord]:
        """One model call (streamed when a sink is set), costed and traced."""
        started = time.perf_counter()
        self.step_streamed_text = False
        runtime = self.runtime
        params = with_batch_tier(self.params or runtime.params)
        telemetry = runtime.telemetry
        if telemetry is None:
            completion = await self._request(messages, params)
            record = self.account(completion, kind="chat", node=node, started=started)
        else:
            with otel.model_scope(telemetry, params, messages, streamed=self.emit is not None) as span:
                completion = await self._request(messages, params)
                record = self.account(completion, kind="chat", node=node, started=started)
                otel.end_model_call(span, telemetry, completion, record["cost"])
        if completion.refusal is not None:
            record["refusal"] = completion.refusal
        return completion, record

    async def _request(self, messages: list[Message], params: CallParams) -> Completion:
        runtime = self.runtime
        if self.emit is None:
            return await runtime.provider.complete(messages, runtime.toolset.specs, params)
        return await self._stream(messages, params)

    async def execute_tool(self, call: ToolCall) -> tuple[str, bool, TraceRecord]:
        """Run one tool call (``Toolset.execute``), in an ``execute_tool`` span when spans are on."""
        toolset, telemetry = self.runtime.toolset, self.runtime.telemetry
        if telemetry is None:
            return await toolset.execute(call)
        tool = toolset.by_name.get(call["name"])
        with otel.tool_scope(telemetry, call, getattr(tool, "description", None)) as span:
            output, error, record = await toolset.execute(call)
            otel.end_tool_call(span, telemetry, output, error)
        return output, error, record

    async def _stream(self, messages: list[Message], params: CallParams) -> Completion:
        runtime = self.runtime
        # Closed on return: the final Completion is the stream's last item, not its end.
        async with closing_iterator(runtime.provider.stream(messages, runtime.toolset.specs, params)) as events:
            async for event in events:
                if isinstance(event, Completion):
                    return event
                self.emit_text(event)
                # Let the consumer take this chunk now: when the whole response arrived in one
                # read, the provider would otherwise parse every chunk before the first is seen.
                await asyncio.sleep(0)
        raise RuntimeError(f"provider {runtime.provider_name!r} ended a stream without a Completion")

    def emit_text(self, text: str, *, new_step: bool = False) -> None:
        """Send text to the stream; a later step's text is set apart from an earlier step's."""
        if not text or self.emit is None:
            return
        if new_step:
            self.step_streamed_text = False
        if self.streamed_text and not self.step_streamed_text:
            # e.g. "Let me check." before a tool call, then the answer after it.
            text = "\n\n" + text
        self.streamed_text = self.step_streamed_text = True
        self.emit(text)

    def emit_tool(self, result: ToolResult) -> None:
        """Tell the stream a tool call has finished (a panel shows its row before the turn ends)."""
        if self.emit is not None:
            self.emit(ToolEvent(result))

    def account(self, completion: Completion, *, kind: str, node: str, started: float) -> TraceRecord:
        """Record a model call's cost and return its trace record."""
        runtime = self.runtime
        model = completion.model or runtime.params.model
        usage = completion.usage
        entry = runtime.cost_tracker.record(
            usage, model, provider=runtime.provider_name, kind=kind, trace_id=self.trace_id,
            conversation_id=self.conversation_id, price_overrides=runtime.price_overrides, free=runtime.free,
            service_tier=completion.service_tier,
        )
        self.cost += entry.cost
        self.priced = self.priced and entry.priced
        return {
            "step": "model", "node": node, "name": kind, "model": model,
            "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cached_input_tokens": usage.cached_input_tokens, "cost": entry.cost,
            "start_ms": self.waits.offset_ms(started), "latency_ms": (time.perf_counter() - started) * 1000.0,
            "finish_reason": completion.finish_reason,
            "tool_calls": [c["name"] for c in completion.tool_calls],
        }


def final_call_truncated(trace: list[TraceRecord], reasons: frozenset[str] = TRUNCATED_FINISH_REASONS) -> bool:
    """True when the turn's last model call (a memory summary aside) ended cut, for one of ``reasons``."""
    calls = [r for r in trace if r.get("step") == "model" and r.get("node") != "summary"]
    return bool(calls) and calls[-1].get("finish_reason") in reasons


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
