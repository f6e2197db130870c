"""One model call of a turn: what a turn runs on (``AgentRuntime``), the turn's own data (``Turn``), and the step.

``model_step`` is the request the chat graph's ``route`` and ``process_result`` nodes make, and the one a batch row
of an agent without tools makes directly (``answer``): the call (streamed when the turn has a sink), its cost, its
trace record, and the state update it gives.
"""

from __future__ import annotations

import asyncio
import operator
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol, TypedDict, cast

from aiforge.core import otel
from aiforge.core.aio import closing_iterator
from aiforge.core.costs import CostTracker
from aiforge.core.tier_override import with_batch_tier
from aiforge.core.tokens import TRUNCATED_FINISH_REASONS
from aiforge.core.types import CallParams, Completion, Message, ToolCall, ToolResult, ToolSpec, TraceRecord
from aiforge.core.waits import Waits, start_turn
from aiforge.providers.base import Provider


class ToolRunner(Protocol):
    """An agent's tools as a turn needs them: the specs sent with each request, and running one call."""

    specs: list[ToolSpec] | None
    by_name: dict[str, Any]

    def execute(self, call: ToolCall) -> Awaitable[tuple[str, bool, TraceRecord]]: ...


@dataclass(frozen=True, slots=True)
class AgentRuntime:
    """What every turn of one agent shares; built when the agent is constructed."""

    provider: Provider  # as the graph sees it: native tool calls only (see providers.prompted)
    provider_name: str
    free: bool  # calls cost zero rather than "unknown" (local models, fakes)
    params: CallParams
    toolset: ToolRunner
    cost_tracker: CostTracker
    price_overrides: dict[str, dict[str, float]] | None
    telemetry: otel.Telemetry | None = None
    """Where the agent's OpenTelemetry spans go (``OTEL=True``); None: no spans."""


class ChatAgentState(TypedDict):
    messages: list[Message]  # conversation history sent to the model
    current_input: str  # current user message
    tool_calls: list[ToolCall]  # pending tool invocations
    tool_results: Annotated[list[ToolResult], operator.add]  # accumulated tool results
    iteration: int  # tool-loop counter
    max_tool_iterations: int  # safety cap
    trace: Annotated[list[TraceRecord], operator.add]  # execution trace log
    total_input_tokens: Annotated[int, operator.add]  # the turn's model steps; ChatResponse reads them
    total_output_tokens: Annotated[int, operator.add]
    model: str


ADDED = ("tool_results", "trace", "total_input_tokens", "total_output_tokens")
"""The state's channels with an ``operator.add`` reducer (see ``ChatAgentState``)."""


def turn_state(
    messages: list[Message], *, current_input: str, max_tool_iterations: int, model: str, iteration: int = 0
) -> ChatAgentState:
    """The state a graph run starts from: ``messages`` to send, nothing produced yet.

    The one place a state is made: a turn's first run (``iteration`` 0), and the run that retries an
    answer that did not validate (the turn's ``iteration`` so far: the tool budget is the turn's).
    The summed channels (``ADDED``) start empty, so each run's final state holds that run's alone.
    """
    return {
        "messages": messages,
        "current_input": current_input,
        "tool_calls": [],
        "tool_results": [],
        "iteration": iteration,
        "max_tool_iterations": max_tool_iterations,
        "trace": [],
        "total_input_tokens": 0,
        "total_output_tokens": 0,
        "model": model,
    }


def folded(state: ChatAgentState, update: dict[str, Any]) -> ChatAgentState:
    """``state`` with a node's ``update`` applied as LangGraph applies it (the ``ADDED`` channels summed)."""
    final: dict[str, Any] = dict(state)
    for key, value in update.items():
        final[key] = final[key] + value if key in ADDED else value
    return cast(ChatAgentState, final)


def new_conversation_id() -> str:
    """The id of a new conversation (a batch row's own included): 16 hex digits."""
    return secrets.token_hex(8)


@dataclass(slots=True)
class Turn:
    """One turn's own data, handed to the graph's nodes in the run config."""

    runtime: AgentRuntime
    conversation_id: str
    emit: Callable[[Any], None] | None = None
    """Where streamed text (and chat's tool events) go; None for a turn that is not streamed."""
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


async def model_step(turn: Turn, state: ChatAgentState, node: str) -> tuple[dict[str, Any], TraceRecord]:
    """Send ``state``'s messages to the model: the state update (reply appended, its tool calls pending), and the
    call's trace record (in the update too, for the graph's node to mark)."""
    completion, record = await turn.call_model(state["messages"], node)
    reply: Message = {"role": "assistant", "content": completion.text}
    if completion.tool_calls:
        reply["tool_calls"] = completion.tool_calls
    update = {
        "messages": [*state["messages"], reply],
        "tool_calls": completion.tool_calls,
        "trace": [record],
        "total_input_tokens": completion.usage.input_tokens,
        "total_output_tokens": completion.usage.output_tokens,
        "model": completion.model or state["model"],
    }
    return update, record


def final_call_truncated(trace: list[TraceRecord], reasons: frozenset[str] = TRUNCATED_FINISH_REASONS) -> bool:
    """True when the turn's last model call (a memory summary aside) ended cut, for one of ``reasons``."""
    calls = [r for r in trace if r.get("step") == "model" and r.get("node") != "summary"]
    return bool(calls) and calls[-1].get("finish_reason") in reasons
