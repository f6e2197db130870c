"""``ChatAgent``: a multi-turn agent with memory, tools, streaming and batch, on LangGraph."""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import AsyncGenerator, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Unpack, cast

from aiforge.batch.batch_api.submit import submit_items
from aiforge.batch.identity import open_cache
from aiforge.batch.label_scoring import scored_labels
from aiforge.batch.options import DEFAULT_CONCURRENCY, BatchArguments, BatchOptions
from aiforge.batch.orchestrator import run_items, run_items_sync
from aiforge.batch.owner import RequestContext
from aiforge.batch.request.answer import output_spec, request_item
from aiforge.chat.arguments import check_agent_options, checked_positive
from aiforge.chat.memory import MEMORY_MODES, Conversation, history_frame
from aiforge.chat.prompts import DEFAULT_SYSTEM_PROMPT
from aiforge.chat.replay import cassette_provider
from aiforge.chat.response import ChatResponse
from aiforge.chat.runtime import TurnStream
from aiforge.chat.sessions import chat_store
from aiforge.chat.setup import AgentSetup
from aiforge.chat.tool_runner import ToolInterrupted, Toolset
from aiforge.chat.turn import TurnSetup, agent_turn
from aiforge.core.aio import iterate_sync, run_sync
from aiforge.core.costs import CostTracker
from aiforge.core.settings import check_overrides
from aiforge.core.templates import RowTemplate
from aiforge.core.types import Message

if TYPE_CHECKING:
    import pandas as pd

    from aiforge.batch.batch_api.job import BatchJob
    from aiforge.batch.estimate import BatchEstimate
    from aiforge.providers.batch_api import BatchLimits
    from aiforge.store import ResponseCache

logger = logging.getLogger("aiforge.chat")


class ChatAgent:
    """A multi-turn conversational agent with memory, tool use and streaming.

    Usage: the guides Chat and tools, Configuration and Providers (``docs/guides/``), and the tutorials
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
        check_agent_options(memory, MEMORY_MODES, output_retries, system_prompt)
        self.memory_k = checked_positive("memory_k", memory_k)
        self.max_tool_iterations = checked_positive("max_tool_iterations", max_tool_iterations)
        self.output_retries, self.memory_mode = output_retries, memory
        toolset = Toolset(tools)
        self.tools = toolset.tools
        # An unknown keyword's did-you-mean covers this signature too (system= -> system_prompt).
        check_overrides(kwargs, inspect.signature(ChatAgent.__init__).parameters)
        setup = AgentSetup.of(
            quality=quality, provider=cassette_provider(provider, kwargs), cache=kwargs.pop("cache", None),
            overrides=kwargs,
        )
        self.settings, self.quality, self.provider = setup.settings, setup.quality, setup.provider
        self.provider_name, self.model = setup.provider_name, setup.model
        self.cost_tracker = CostTracker()

        self.native_tools = setup.native_tools(native_tools)
        base_prompt = system_prompt or self.settings.chat.system_prompt or DEFAULT_SYSTEM_PROMPT
        runtime = setup.runtime(toolset, self.native_tools, self.cost_tracker)
        self._store = chat_store(self.settings, session, log=log)
        self._turns = TurnSetup.of(self, runtime, base_prompt, self._store)
        self._request = self._turns.request_context(self)
        self._conversation = (self._store and self._store.conversation) or Conversation()
        self.last_response: ChatResponse | None = None
        """The response of the most recent turn, streamed turns included."""

    @property
    def system_prompt(self) -> str:
        """The fully resolved system prompt (tool instructions included when prompted)."""
        return self._request.system_prompt

    @property
    def request_context(self) -> RequestContext:
        """What every request of a batch carries: provider, model, settings, system prompt, tool specs, params."""
        return self._request

    @property
    def conversation_id(self) -> str:
        return self._conversation.id

    @property
    def history(self) -> list[Message]:
        """A copy of the stored conversation (system prompt and summary excluded)."""
        return [m.copy() for m in self._conversation.history]

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

    def chat(self, message: str, *, system_prompt: str | None = None, output: Any = None) -> ChatResponse:
        """Send a message and get the response; history is kept across calls.

        ``output`` (a pydantic model class or a type pydantic validates) asks for a structured
        answer: ``response.output`` is the validated value, ``response.message`` the raw JSON text.
        """
        return run_sync(self.achat(message, system_prompt=system_prompt, output=output))

    async def achat(self, message: str, *, system_prompt: str | None = None, output: Any = None) -> ChatResponse:
        """Async version of ``chat``."""
        try:
            return await agent_turn(self, self._turns, self._conversation, message, system_prompt, emit=None,
                                    output=output, cache=self.response_cache)
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
            lambda emit: agent_turn(self, self._turns, self._conversation, message, system_prompt, emit=emit,
                                    output=spec, cache=self.response_cache)
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
        return iterate_sync(self.arun_stream(text, **kwargs))

    # -- many items: aiforge.batch runs them through this agent ----------------------------

    def run_batch(
        self, items: Sequence[str] | Any, concurrency: int = DEFAULT_CONCURRENCY, max_batch: int = 100,
        **options: Unpack[BatchArguments],
    ) -> Any:
        """Process ``items`` with at most ``concurrency`` in flight; see ``arun_batch``.

        Ctrl-C keeps the finished items in memory and ends with one line saying so (``BatchInterrupted``);
        the same call again in this process runs only the others, also through another agent of the same
        settings (the accessor builds one per call): items are kept by batch fingerprint, not by agent.
        """
        return run_items_sync(self, items, BatchOptions.of(concurrency=concurrency, max_batch=max_batch, **options))

    async def arun_batch(
        self, items: Sequence[str] | Any, concurrency: int = DEFAULT_CONCURRENCY, max_batch: int = 100,
        **options: Unpack[BatchArguments],
    ) -> Any:
        """Process a list of strings, a pandas Series or a DataFrame concurrently; a ``BatchResult``.

        ``prompt`` is a template filled from each row: ``"Classify: {review}"`` names DataFrame columns;
        a list's or Series' values are ``{value}`` (a named Series' also its name). A DataFrame of one
        column needs no prompt; of several, it must have one. With ``output=`` (a type), each reply is
        validated into ``response.output``. Results come back in input order; a failed item is recorded
        in ``failed`` and never stops the others; a row with a missing value (None, NaN, ``pd.NA``) fails
        with "missing value: <column>" and makes no call. A template naming an unknown column, or more
        than ``max_batch`` items, is a ``UsageError`` before any call rather than a silent truncation.
        Each item is a fresh conversation: no memory is shared between items or with ``chat()``. Rows with the
        same prompt are asked once (the rest ``cached``, cost 0, in ``.saved``); ``dedup=False`` asks every row.

        ``cache``: None uses the ``CACHE`` setting; False turns it off; True, a path or ``"memory"`` use
        that cache. ``checkpoint``: a file recording each finished item as it lands; the same batch run
        again (after Ctrl-C, a kernel restart, ``kill -9``) runs only the unfinished and the failed items.
        A checkpoint of another batch is a ``CheckpointMismatchError``; ``restart=True`` starts over.
        ``max_cost`` (USD): no item starts once the cost spent plus an estimate for the items in flight
        would pass it; the rest are in ``skipped`` (and ``failed``). ``estimate=True``: spend nothing,
        return a ``BatchEstimate``. ``cascade``: an ``aiforge.Cascade`` lets a cheap model keep the label rows
        it is confident on, at a threshold calibrated to a stated agreement with the strong one. ``pack=k`` sends
        k rows per request, answers matched by id (``batch.packing``). ``plan="cheapest"`` runs the cheapest plan
        meeting ``deadline`` (``aiforge.batch.planner``). The options are ``aiforge.batch.options.BatchArguments``.
        """
        return await run_items(self, items, BatchOptions.of(concurrency=concurrency, max_batch=max_batch, **options))

    def estimate_batch(
        self, items: Sequence[str] | Any, concurrency: int = DEFAULT_CONCURRENCY, **options: Unpack[BatchArguments]
    ) -> BatchEstimate:
        """What ``run_batch`` with these arguments would cost, before anything is spent; ``.plans`` compares plans."""
        options["estimate"] = True  # run_batch then returns a BatchEstimate
        return cast("BatchEstimate", self.run_batch(items, concurrency, max(len(items), 1), **options))

    def submit_batch(
        self, items: Sequence[str] | Any, *, output: Any = None, prompt: str | RowTemplate | None = None,
        checkpoint: str | os.PathLike[str] | None = None, limits: BatchLimits | None = None,
    ) -> BatchJob:
        """Send ``items`` to the provider's Batch API (half price, within 24 hours) and return at once.

        ``items``, ``prompt`` and ``output`` are what ``run_batch`` takes; every item is one model call with
        the agent's system prompt and settings (no tools). A submission over the provider's limits
        (``limits`` replaces them) is split into several jobs. Follow it with ``job.wait()`` /
        ``job.results()``; see ``BatchJob``. Works with openai, internal_gateway, anthropic and scripted.
        """
        return run_sync(self.asubmit_batch(items, output=output, prompt=prompt, checkpoint=checkpoint, limits=limits))

    async def asubmit_batch(
        self, items: Sequence[str] | Any, *, output: Any = None, prompt: str | RowTemplate | None = None,
        checkpoint: str | os.PathLike[str] | None = None, limits: BatchLimits | None = None,
    ) -> BatchJob:
        """``submit_batch`` in async code."""
        return await submit_items(self, items, output=output, prompt=prompt, checkpoint=checkpoint, limits=limits)

    @functools.cached_property
    def response_cache(self) -> ResponseCache | None:
        """The response cache the ``CACHE`` setting names, or None when it is off; opened on first use."""
        return open_cache(self.settings.CACHE)

    def result_type(self) -> type[ChatResponse]:
        """What one batch item gives (a batch row is ``ChatResponse.to_row``)."""
        return ChatResponse

    async def arun_batch_item(
        self, text: str, *, output: Any = None, cache: ResponseCache | None = None
    ) -> ChatResponse:
        """One batch item in a fresh conversation (no memory shared); a label output scored where ``LABELS_BY`` says."""
        labels = scored_labels(self.provider, self.settings, output_spec(output), tools=bool(self.tools))
        if self._request.items is not None:  # no tools: answered below chat, as the batch's own rows are
            return cast(ChatResponse, await request_item(self._request.items, text, output=output, cache=cache,
                                                         labels=labels))
        return await agent_turn(self, self._turns, Conversation(), text, None, emit=None, output=output,
                                remember=False, cache=cache, labels=labels)

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
        return history_frame(self.system_prompt, self._conversation)
