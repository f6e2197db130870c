"""One turn of a ``ChatAgent``: its context, the graph, memory, the session and the log.

Functions of the agent (its runtime, graph, store and memory settings), so ``agent.py`` stays the public
surface. A turn holds its conversation's lock from start to commit; nothing is stored before the graph has
finished, so an error or a cancellation leaves the conversation as it was. The turn's answer (the response cache,
a scored label, ``output=`` validated with retries) is ``batch.request.answer``'s, the graph its attempt; a batch
row of an agent without tools is answered there whole (``ItemRequest``), without the graph.
"""

from __future__ import annotations

import functools
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from aiforge.batch.owner import RequestContext
from aiforge.batch.request.answer import (
    ItemRequest,
    TurnPlan,
    answer_turn,
    checked_message,
    in_agent_span,
    output_spec,
)
from aiforge.batch.request.cache import TurnKeyBase
from aiforge.batch.request.call import AgentRuntime, ChatAgentState, Turn
from aiforge.batch.request.outcome import TurnOutcome, response_fields
from aiforge.chat.graph import build_chat_graph, run_graph
from aiforge.chat.memory import Conversation, apply_memory
from aiforge.chat.prompts import SUMMARY_PREFIX
from aiforge.chat.response import ChatResponse
from aiforge.core.types import Message, UsageError
from aiforge.providers.prompted import with_tool_instructions

if TYPE_CHECKING:
    from aiforge.chat.runtime import ToolEvent
    from aiforge.chat.sessions import ChatStore
    from aiforge.core.output import OutputSpec
    from aiforge.core.settings import AIForgeSettings
    from aiforge.providers.base import Provider
    from aiforge.store import ResponseCache


class TurnOwner(Protocol):
    """What a turn reads of its agent (a ``ChatAgent``): its public settings; the rest is its ``TurnSetup``."""

    provider: Provider
    """The agent's own provider (its ``score_labels``), not the graph's view of it."""
    model: str
    provider_name: str
    settings: AIForgeSettings
    native_tools: bool
    memory_mode: str
    memory_k: int
    max_tool_iterations: int
    output_retries: int
    last_response: ChatResponse | None


@dataclass(frozen=True, slots=True)
class TurnSetup:
    """What every turn of one agent runs on besides its conversation: built once, with the agent."""

    runtime: AgentRuntime
    graph: Any
    """The compiled LangGraph loop (``graph.build_chat_graph``)."""
    plan: TurnPlan
    steps: int
    """LangGraph's recursion limit: never below what ``max_tool_iterations`` needs."""
    base_prompt: str
    store: ChatStore | None
    """The session and the turn log (None when both are off)."""

    @classmethod
    def of(cls, agent: TurnOwner, runtime: AgentRuntime, base_prompt: str, store: ChatStore | None) -> TurnSetup:
        key_base = TurnKeyBase.of(
            runtime, agent.provider.base_url, native_tools=agent.native_tools,
            image_detail=agent.settings.IMAGE_DETAIL,
        )
        return cls(
            runtime=runtime, graph=build_chat_graph(),
            plan=TurnPlan(key_base, agent.provider, agent.model, agent.max_tool_iterations, agent.output_retries),
            # route, then execute_tool + process_result per round: never let LangGraph's own step
            # limit (configurable by environment) end a turn before max_tool_iterations does.
            steps=2 * agent.max_tool_iterations + 3, base_prompt=base_prompt, store=store,
        )

    def request_context(self, agent: TurnOwner) -> RequestContext:
        """What every request of the agent's batches carries; without tools, how a row is answered below chat."""
        specs = self.runtime.toolset.specs
        items = None
        if not specs:
            log = None if self.store is None else self.store.log
            items = ItemRequest(
                self.runtime, self.plan, self.base_prompt, agent.memory_mode, ChatResponse, log,
                # Builtins, so no code of chat/ runs for a row: the row becomes the agent's last response. A proxy,
                # so the agent's own context does not keep it alive (a cycle would close its cache file late).
                functools.partial(setattr, weakref.proxy(agent), "last_response"),
            )
        prompt = with_tool_instructions(self.base_prompt, specs) if specs and not agent.native_tools else None
        return RequestContext(
            agent.provider, agent.provider_name, agent.model, agent.settings, prompt or self.base_prompt,
            tuple(specs or ()), self.runtime.params, items,
        )


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

    ``labels`` (label text -> output value): the turn is answered by scoring them (``batch.request.scored``), not
    generated. With ``OTEL=True`` the turn is an ``invoke_agent`` span (``core.otel``), a response-cache hit included.
    """
    checked_message(message)
    spec = output_spec(output)
    run = functools.partial(_turn_of, agent, setup, conversation, system_prompt, message, emit, spec, remember, cache,
                            labels)
    return await in_agent_span(setup.runtime, spec, conversation.id, message, run)


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
        # Nothing is stored until the graph has finished: an error or a cancellation
        # leaves the conversation exactly as it was before the turn.
        config = {"configurable": {"turn": turn}, "recursion_limit": setup.steps}
        attempt = functools.partial(_graph_run, setup.graph, config)
        outcome = await answer_turn(turn, setup.plan, [*context, user], spec, attempt, cache=cache, labels=labels)
        return await _finish(agent, setup.store, conversation, context, user, outcome, turn, started, remember)


async def _graph_run(graph: Any, config: dict[str, Any], state: ChatAgentState) -> ChatAgentState:
    """One attempt of a chat turn: the LangGraph loop over ``state`` (its tools included)."""
    return await run_graph(graph, state, config)


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
    fields = response_fields(outcome, turn, started, conversation_id=conversation.id, memory_mode=agent.memory_mode)
    response = ChatResponse(**fields)
    if store is not None:
        store.record(response, [*context, user], outcome.produced, remember=remember)
    agent.last_response = response
    return response
