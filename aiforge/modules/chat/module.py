"""``ChatAgent``: a multi-turn agent with memory, tools, streaming and batch, on LangGraph."""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import AsyncGenerator, Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from aiforge.core.aio import run_sync
from aiforge.core.settings import check_overrides
from aiforge.core.types import CallParams, ConfigError, Message, UsageError
from aiforge.modules.base import BaseModule
from aiforge.modules.chat.agent import ChatAgentState, build_chat_graph
from aiforge.modules.chat.arguments import checked_message, checked_positive
from aiforge.modules.chat.cached_turns import TurnKeyBase, cache_marks, lookup
from aiforge.modules.chat.memory import MEMORY_MODES, Conversation, apply_memory
from aiforge.modules.chat.prompts import DEFAULT_SYSTEM_PROMPT, SUMMARY_PREFIX
from aiforge.modules.chat.replay import cassette_provider
from aiforge.modules.chat.runtime import AgentRuntime, ToolEvent, Turn, TurnStream, final_call_truncated
from aiforge.modules.chat.schemas import ChatResponse, ToolCallRecord
from aiforge.modules.chat.sessions import chat_store
from aiforge.modules.chat.structured import TurnOutcome, output_spec, run_turn
from aiforge.modules.chat.tool_runner import ToolInterrupted, Toolset
from aiforge.providers.base import warn_if_temperature_unsent
from aiforge.providers.prompted import PromptedTools, with_tool_instructions

if TYPE_CHECKING:
    import pandas as pd

    from aiforge.store import ResponseCache

logger = logging.getLogger("aiforge.chat")


class ChatAgent(BaseModule):
    """A multi-turn conversational agent with memory, tool use and streaming.

    Usage: the README's "Configuration", "Providers" and "Notebooks" sections, and the tutorials
    ``notebooks/01_quickstart`` to ``04_streaming_async``; ``**kwargs`` are ``AIForgeSettings``
    overrides such as ``MODEL="gpt-4o"`` or ``TEMPERATURE=0.3``. ``output=`` on a turn asks for a
    structured answer, validated into ``ChatResponse.output``; a reply that does not validate is sent
    back with the errors up to ``output_retries`` times (``OutputValidationError`` after that).
    """

    def __init__(
        self,
        system_prompt: str | None = None,
        tools: list[Any] | None = None,
        memory: str = "buffer",
        memory_k: int = 20,
        max_tool_iterations: int = 5,
        native_tools: bool | None = None,
        quality: str | None = None,
        provider: Any = None,
        output_retries: int = 2,
        session: str | None = None,
        log: bool = True,
        **kwargs: Any,
    ) -> None:
        if memory not in MEMORY_MODES:
            raise UsageError(f"memory must be one of {', '.join(map(repr, MEMORY_MODES))}; got {memory!r}")
        self.memory_k = checked_positive("memory_k", memory_k)
        self.max_tool_iterations = checked_positive("max_tool_iterations", max_tool_iterations)
        if isinstance(output_retries, bool) or not isinstance(output_retries, int) or output_retries < 0:
            raise UsageError(f"output_retries must be an integer >= 0, got {output_retries!r}")
        self.output_retries = output_retries
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise UsageError(f"system_prompt must be a str or None, got {type(system_prompt).__name__}")
        self.memory_mode = memory
        toolset = Toolset(tools)
        self.tools = toolset.tools
        # An unknown keyword's did-you-mean covers this signature too (system= -> system_prompt).
        check_overrides(kwargs, inspect.signature(ChatAgent.__init__).parameters)
        super().__init__(quality=quality, provider=cassette_provider(provider, kwargs), **kwargs)

        if native_tools and not self.provider.supports_native_tools:
            raise ConfigError(
                f"native_tools=True but provider {self.provider_name!r} has no native tool calling; "
                "leave native_tools=None to use the prompted-JSON protocol"
            )
        self.native_tools = self.provider.supports_native_tools if native_tools is None else bool(native_tools)
        self._base_prompt = system_prompt or self.settings.chat.system_prompt or DEFAULT_SYSTEM_PROMPT
        warn_if_temperature_unsent(self.provider, self.settings)
        # A provider with its own default (the embedded model's measured one) picks it; a TEMPERATURE the user set wins.
        unset = self.provider.default_temperature is not None and "TEMPERATURE" not in self.settings.model_fields_set
        self._runtime = AgentRuntime(
            # The graph sees native tool calls only: the prompted-JSON protocol is a provider wrapper.
            provider=self.provider if self.native_tools else PromptedTools(self.provider),
            provider_name=self.provider_name,
            free=self.provider.free,
            params=CallParams(
                model=self.model,
                temperature=None if unset else self.settings.TEMPERATURE,
                max_tokens=self.settings.MAX_TOKENS,
            ),
            toolset=toolset,
            cost_tracker=self.cost_tracker,
            price_overrides=self.settings.PRICES or None,
        )
        self._key_base = TurnKeyBase.of(self._runtime, self.provider.base_url, native_tools=self.native_tools)
        self._graph = build_chat_graph()
        # route, then execute_tool + process_result per round: never let LangGraph's own step
        # limit (configurable by environment) end a turn before max_tool_iterations does.
        self._steps = 2 * self.max_tool_iterations + 3
        self._store = chat_store(self.settings, session, log=log)
        self._conversation = (self._store and self._store.conversation) or Conversation()
        self.last_response: ChatResponse | None = None
        """The response of the most recent turn, streamed turns included."""

    # -- properties --------------------------------------------------------------------

    @property
    def system_prompt(self) -> str:
        """The fully resolved system prompt (tool instructions included when prompted)."""
        specs = self._runtime.toolset.specs
        if specs and not self.native_tools:
            return with_tool_instructions(self._base_prompt, specs)
        return self._base_prompt

    @property
    def conversation_id(self) -> str:
        return self._conversation.id

    @property
    def history(self) -> list[Message]:
        """A copy of the stored conversation (system prompt and summary excluded)."""
        return [dict(m) for m in self._conversation.history]  # type: ignore[misc]

    @property
    def summary(self) -> str | None:
        """The running summary of older messages (``memory="summary"``), if any."""
        return self._conversation.summary

    def __repr__(self) -> str:
        return (
            f"ChatAgent(provider={self.provider_name!r}, model={self.model!r}, memory={self.memory_mode!r}, "
            f"memory_k={self.memory_k}, tools={[t.name for t in self.tools]}, "
            f"messages={len(self._conversation.history)}, conversation_id={self.conversation_id!r})"
        )

    # -- public API --------------------------------------------------------------------

    def chat(self, message: str, *, system_prompt: str | None = None, output: Any = None) -> ChatResponse:
        """Send a message and get the response; history is kept across calls.

        ``output`` (a pydantic model class or a type pydantic validates) asks for a structured
        answer: ``response.output`` is the validated value, ``response.message`` the raw JSON text.
        """
        return run_sync(self.achat(message, system_prompt=system_prompt, output=output))

    async def achat(self, message: str, *, system_prompt: str | None = None, output: Any = None) -> ChatResponse:
        """Async version of ``chat``."""
        try:
            return await self._turn(
                self._conversation, message, system_prompt, emit=None, output=output, cache=self.response_cache
            )
        except ToolInterrupted as exc:
            raise exc.original from None

    def chat_stream(
        self, message: str, *, system_prompt: str | None = None, output: Any = None
    ) -> AsyncGenerator[str, None]:
        """Yield the reply's text chunks as the provider sends them.

        Text the model writes before calling tools is streamed too, set apart from the next
        step's text by a blank line; ``ChatResponse.message`` is the final answer alone.
        The turn is recorded like ``chat()`` when the stream ends; closing the generator early
        lets the turn finish and records it; cancelling the consuming task cancels the turn
        and leaves the history as it was. ``last_response`` holds the turn's ``ChatResponse``.
        With ``output=`` the JSON text streams as it arrives; when a reply does not validate,
        the retry's text follows after a blank line, and only the validated object (and the
        valid reply) end up on ``last_response``.
        """
        return aiter(self.stream_turn(message, system_prompt=system_prompt, output=output))

    def stream_turn(self, message: str, *, system_prompt: str | None = None, output: Any = None) -> TurnStream:
        """The streamed turn as one object: ``async for delta in s``, then ``s.response``."""
        spec = output_spec(output)
        return TurnStream(
            lambda emit: self._turn(
                self._conversation, message, system_prompt, emit=emit, output=spec, cache=self.response_cache
            )
        )

    def achat_stream(
        self, message: str, *, system_prompt: str | None = None, output: Any = None
    ) -> AsyncGenerator[str, None]:
        """Alias of ``chat_stream``."""
        return self.chat_stream(message, system_prompt=system_prompt, output=output)

    async def arun(self, text: str, **kwargs: Any) -> ChatResponse:
        return await self.achat(text, **kwargs)

    def run(self, text: str, **kwargs: Any) -> ChatResponse:
        return self.chat(text, **kwargs)

    def arun_stream(self, text: str, **kwargs: Any) -> AsyncGenerator[str, None]:
        return self.chat_stream(text, **kwargs)

    def run_stream(self, text: str, **kwargs: Any) -> Iterator[str]:
        """Synchronous streaming: iterate the reply's chunks outside async code."""
        return super().run_stream(text, **kwargs)

    supports_cache = True

    def _request_context(self) -> tuple[str, list[Any]]:
        return self.system_prompt, list(self._runtime.toolset.specs or ())

    def _call_params(self) -> CallParams:
        return self._runtime.params  # the agent's own, as its live turns use them

    async def _arun_batch_item(
        self, text: str, *, output: Any = None, cache: ResponseCache | None = None
    ) -> ChatResponse:
        # Each batch item is a fresh conversation: no memory shared between items.
        return await self._turn(Conversation(), text, None, emit=None, output=output, remember=False, cache=cache)

    def reset(self) -> None:
        """Clear the conversation (the system prompt stays) and start a new conversation id.

        In a session, the session continues with the new conversation; the old one stays in the log.
        """
        if self._store is not None and self._store.session is not None:
            self._store.reset(self.memory_mode)
        else:
            self._conversation = Conversation()

    def history_dataframe(self) -> pd.DataFrame:
        """The conversation as rows: system prompt, summary, then each message."""
        import pandas as pd

        conversation = self._conversation
        rows: list[tuple[Any, ...]] = [("system", self.system_prompt, None, None)]
        if conversation.summary:
            rows.append(("system", SUMMARY_PREFIX + conversation.summary, None, None))
        for m in conversation.history:
            calls = m.get("tool_calls")
            described = [f"{c['name']}({c['arguments']})" for c in calls] if calls else None
            rows.append((m["role"], m["content"], described, m.get("tool_call_id")))
        return pd.DataFrame(rows, columns=["role", "content", "tool_calls", "tool_call_id"])

    # -- the turn ----------------------------------------------------------------------

    def _context(self, conversation: Conversation, system_prompt: str | None) -> list[Message]:
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise UsageError(f"system_prompt must be a str or None, got {type(system_prompt).__name__}")
        head: list[Message] = [{"role": "system", "content": system_prompt or self._base_prompt}]
        if conversation.summary:
            head.append({"role": "system", "content": SUMMARY_PREFIX + conversation.summary})
        if self.memory_mode == "none":
            return head
        return head + conversation.history

    async def _turn(
        self,
        conversation: Conversation,
        message: str,
        system_prompt: str | None,
        emit: Callable[[str | ToolEvent], None] | None,
        *,
        output: Any = None,
        remember: bool = True,
        cache: ResponseCache | None = None,
    ) -> ChatResponse:
        checked_message(message)
        spec = output_spec(output)
        started = time.perf_counter()
        async with conversation.lock:
            if remember and self._store is not None:
                self._store.refresh(conversation)
            params = replace(self._runtime.params, output=spec) if spec is not None else None
            turn = Turn(self._runtime, conversation.id, emit, params=params)
            context = self._context(conversation, system_prompt)
            user: Message = {"role": "user", "content": message}
            cached = None if cache is None else lookup(cache, self._key_base, [*context, user], spec)
            if cached is not None and cached.outcome is not None:
                turn.emit_text(cached.outcome.reply)
                return await self._finish(conversation, context, user, cached.outcome, turn, started, remember)
            state: ChatAgentState = {
                "messages": [*context, user],  # type: ignore[list-item]
                "current_input": message,
                "tool_calls": [],
                "tool_results": [],
                "iteration": 0,
                "max_tool_iterations": self.max_tool_iterations,
                "trace": [],
                "total_input_tokens": 0,
                "total_output_tokens": 0,
                "model": self.model,
            }
            # Nothing is stored until the graph has finished: an error or a cancellation
            # leaves the conversation exactly as it was before the turn.
            config = {"configurable": {"turn": turn}, "recursion_limit": self._steps}
            outcome = await run_turn(self._graph, state, config, spec, self.output_retries)  # type: ignore[arg-type]
            if cached is not None:
                cached.store(outcome, turn.cost)
            return await self._finish(conversation, context, user, outcome, turn, started, remember)

    async def _finish(
        self, conversation: Conversation, context: list[Message], user: Message, outcome: TurnOutcome, turn: Turn,
        started: float, remember: bool,
    ) -> ChatResponse:
        """Commit the turn to history (and memory), save its session, log it; the conversation lock is held."""
        if remember and self.memory_mode != "none":
            history = [*conversation.history, user, *outcome.produced]
            history = await apply_memory(
                conversation, history, mode=self.memory_mode, k=self.memory_k, turn=turn, trace=outcome.trace
            )
            conversation.history = history
            if self._store is not None:
                keep = self.memory_k if self.memory_mode == "buffer" else None
                self._store.commit(conversation, self.memory_mode, [user, *outcome.produced], keep)
        response = self._response(conversation, outcome, turn, started)
        if self._store is not None:
            self._store.record(response, [*context, user], outcome.produced, remember=remember)
        self.last_response = response
        return response

    def _response(self, conversation: Conversation, outcome: TurnOutcome, turn: Turn, started: float) -> ChatResponse:
        trace = outcome.trace
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
            memory_mode=self.memory_mode,
            cost=turn.cost,
            input_tokens=outcome.input_tokens + sum(r["input_tokens"] for r in summaries),
            output_tokens=outcome.output_tokens + sum(r["output_tokens"] for r in summaries),
            model=outcome.model,
            trace_id=turn.trace_id,
            # The turn's own time: waiting for the pacer or the local engine's queue is queue_ms.
            latency_ms=(time.perf_counter() - started - turn.waits.inside_s) * 1000.0,
            queue_ms=turn.waits.queue_ms,
            provider=self.provider_name,
            priced=turn.priced,
            stopped_by_limit=any(r.get("stopped_by_limit") for r in trace),
            truncated=final_call_truncated(trace),
            trace=trace,
            **cache_marks(trace),
        )
