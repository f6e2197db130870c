"""One turn of a ``ChatAgent``: its context, the response cache, the graph, memory, the session and the log.

Functions of the agent (its runtime, graph, store and memory settings), so ``agent.py`` stays the public
surface. A turn holds its conversation's lock from start to commit; nothing is stored before the graph has
finished, so an error or a cancellation leaves the conversation as it was.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from aiforge.chat.arguments import checked_message
from aiforge.chat.cached_turns import cache_marks, lookup
from aiforge.chat.graph import turn_state
from aiforge.chat.memory import Conversation, apply_memory
from aiforge.chat.prompts import SUMMARY_PREFIX
from aiforge.chat.response import ChatResponse, StrategyFields, ToolCallRecord
from aiforge.chat.runtime import ToolEvent, Turn, final_call_truncated
from aiforge.chat.scored_turn import scored_outcome
from aiforge.chat.structured import TurnOutcome, output_spec, run_turn
from aiforge.core import otel
from aiforge.core.trace_steps import with_steps
from aiforge.core.types import Message, UsageError

if TYPE_CHECKING:
    from aiforge.chat.cached_turns import TurnKeyBase
    from aiforge.chat.runtime import AgentRuntime
    from aiforge.chat.sessions import ChatStore
    from aiforge.core.output import OutputSpec
    from aiforge.providers.base import Provider
    from aiforge.store import ResponseCache


@dataclass(frozen=True, slots=True)
class TurnSetup:
    """What every turn of one agent runs on besides its conversation: built once, with the agent."""

    runtime: AgentRuntime
    graph: Any
    """The compiled LangGraph loop (``graph.build_chat_graph``)."""
    key_base: TurnKeyBase
    steps: int
    """LangGraph's recursion limit: never below what ``max_tool_iterations`` needs."""
    base_prompt: str
    store: ChatStore | None
    """The session and the turn log (None when both are off)."""


class TurnOwner(Protocol):
    """What a turn reads of its agent (a ``ChatAgent``): its public settings; the rest is its ``TurnSetup``."""

    provider: Provider
    """The agent's own provider (its ``score_labels``), not the graph's view of it."""
    model: str
    provider_name: str
    memory_mode: str
    memory_k: int
    max_tool_iterations: int
    output_retries: int
    last_response: ChatResponse | None


def context_of(
    agent: TurnOwner, setup: TurnSetup, conversation: Conversation, system_prompt: str | None
) -> list[Message]:
    """What the model sees before the new message: system prompt, summary, and the history memory keeps."""
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise UsageError(f"system_prompt must be a str or None, got {type(system_prompt).__name__}")
    head: list[Message] = [{"role": "system", "content": system_prompt or setup.base_prompt}]
    if conversation.summary:
        head.append({"role": "system", "content": SUMMARY_PREFIX + conversation.summary})
    if agent.memory_mode == "none":
        return head
    return head + conversation.history


async def agent_turn(
    agent: TurnOwner,
    setup: TurnSetup,
    conversation: Conversation,
    message: str,
    system_prompt: str | None,
    emit: Callable[[str | ToolEvent], None] | None,
    *,
    output: Any = None,
    remember: bool = True,
    cache: ResponseCache | None = None,
    labels: Mapping[str, Any] | None = None,
) -> ChatResponse:
    """Run one turn in ``conversation`` (``remember=False``: a batch item, kept out of history and session).

    ``labels`` (label text -> output value): the turn is answered by scoring them (``scored_turn``), not generated.
    With ``OTEL=True`` the turn is an ``invoke_agent`` span (``core.otel``), a response-cache hit included.
    """
    checked_message(message)
    spec = output_spec(output)
    telemetry = setup.runtime.telemetry
    if telemetry is None:
        return await _turn_of(agent, setup, conversation, system_prompt, message, emit, spec, remember, cache, labels)
    params = replace(setup.runtime.params, output=spec)
    user: list[Message] = [{"role": "user", "content": message}]
    with otel.agent_scope(telemetry, params, conversation_id=conversation.id, messages=user) as span:
        response = await _turn_of(
            agent, setup, conversation, system_prompt, message, emit, spec, remember, cache, labels
        )
        otel.end_turn(span, telemetry, response)
    return response


async def _turn_of(
    agent: TurnOwner, setup: TurnSetup, conversation: Conversation, system_prompt: str | None, message: str,
    emit: Callable[[str | ToolEvent], None] | None, spec: OutputSpec | None, remember: bool,
    cache: ResponseCache | None, labels: Mapping[str, Any] | None,
) -> ChatResponse:
    started = time.perf_counter()
    async with conversation.lock:
        if remember and setup.store is not None:
            setup.store.refresh(conversation)
        params = replace(setup.runtime.params, output=spec) if spec is not None else None
        turn = Turn(setup.runtime, conversation.id, emit, params=params)
        context = context_of(agent, setup, conversation, system_prompt)
        user: Message = {"role": "user", "content": message}
        key_base = setup.key_base if labels is None else setup.key_base.scored()
        cached = None if cache is None else lookup(cache, key_base, [*context, user], spec)
        if cached is not None and cached.outcome is not None:
            turn.emit_text(cached.outcome.reply)
            return await _finish(
                agent, setup.store, conversation, context, user, cached.outcome, turn, started, remember
            )
        if labels is not None:
            outcome = await scored_outcome(turn, agent.provider, [*context, user], labels)
        else:
            state = turn_state(
                [*context, user], current_input=message, max_tool_iterations=agent.max_tool_iterations,
                model=agent.model,
            )
            # Nothing is stored until the graph has finished: an error or a cancellation
            # leaves the conversation exactly as it was before the turn.
            config = {"configurable": {"turn": turn}, "recursion_limit": setup.steps}
            outcome = await run_turn(setup.graph, state, config, spec, agent.output_retries)
        if cached is not None:
            cached.store(outcome, turn.cost)
        return await _finish(agent, setup.store, conversation, context, user, outcome, turn, started, remember)


async def _finish(
    agent: TurnOwner, store: ChatStore | None, conversation: Conversation, context: list[Message], user: Message,
    outcome: TurnOutcome, turn: Turn, started: float, remember: bool,
) -> ChatResponse:
    """Commit the turn to history (and memory), save its session, log it; the conversation lock is held."""
    if remember and agent.memory_mode != "none":
        history = [*conversation.history, user, *outcome.produced]
        history = await apply_memory(
            conversation, history, mode=agent.memory_mode, k=agent.memory_k, turn=turn, trace=outcome.trace
        )
        conversation.history = history
        if store is not None:
            keep = agent.memory_k if agent.memory_mode == "buffer" else None
            store.commit(conversation, agent.memory_mode, [user, *outcome.produced], keep)
    response = _response(agent, conversation, outcome, turn, started)
    if store is not None:
        store.record(response, [*context, user], outcome.produced, remember=remember)
    agent.last_response = response
    return response


def _response(
    agent: TurnOwner, conversation: Conversation, outcome: TurnOutcome, turn: Turn, started: float
) -> ChatResponse:
    trace = with_steps(outcome.trace, turn.waits.steps)
    # The graph's state sums its model steps; the memory summary ran after the graph.
    summaries = [r for r in trace if r["step"] == "model" and r["node"] == "summary"]
    calls = [
        ToolCallRecord(tool=r["tool"], input=r["input"], output=r["output"], id=r["id"], error=r["error"])
        for r in outcome.tool_results
    ]
    return ChatResponse(
        message=outcome.reply,
        output=outcome.output,
        conversation_id=conversation.id,
        tool_calls=calls,
        iterations=outcome.iteration,
        memory_mode=agent.memory_mode,
        cost=turn.cost,
        input_tokens=outcome.input_tokens + sum(r["input_tokens"] for r in summaries),
        output_tokens=outcome.output_tokens + sum(r["output_tokens"] for r in summaries),
        cached_tokens=sum(r.get("cached_input_tokens", 0) for r in trace if r["step"] == "model"),
        model=outcome.model,
        trace_id=turn.trace_id,
        # The turn's own time: waiting for the pacer or the local engine's queue is queue_ms.
        latency_ms=(time.perf_counter() - started - turn.waits.inside_s) * 1000.0,
        queue_ms=turn.waits.queue_ms,
        provider=agent.provider_name,
        priced=turn.priced,
        stopped_by_limit=any(r.get("stopped_by_limit") for r in trace),
        truncated=final_call_truncated(trace),
        strategy=StrategyFields(confidence=outcome.confidence, label_probabilities=outcome.label_probabilities),
        trace=trace,
        **cache_marks(trace),
    )
