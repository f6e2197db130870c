"""``LocalProvider``: the embedded model as a provider, streaming, with tools by constrained decoding.

Each request is decoded on the shared engine's worker thread (``engine.py``); its tokens are handed to the event
loop as they are decoded, and a consumer that stops listening stops the decoding. With tools offered, replies
follow the JSON protocol of ``protocol.py`` and reach the agent as plain text or native ``ToolCall``s, never as
JSON. With ``params.output`` set the same protocol carries the answer as an object of the output schema: the
reply always parses, and the answer's JSON text is what streams and what ``Completion.text`` holds.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import Any, ClassVar

from aiforge.core.output import OutputSpec
from aiforge.core.types import (
    CallParams,
    Completion,
    Embeddings,
    LabelScores,
    Message,
    ProviderError,
    ToolSpec,
    Usage,
)
from aiforge.providers.base import Provider, StreamEvent, StructuredOutputMode
from aiforge.providers.local import defaults
from aiforge.providers.local.decoding import DecodingRun, completion, decode, engine_error
from aiforge.providers.local.embeddings import LOCAL_EMBEDDING_LIMITS, embed_locally
from aiforge.providers.local.engine import LocalEngine, default_threads, shared_engine
from aiforge.providers.local.gguf import declares_pooling
from aiforge.providers.local.grounding import (
    ToolTextGuard,
    argument_choices,
    grounding_text,
    meant_tool,
    trailing_results,
    ungrounded_arguments,
)
from aiforge.providers.local.loops import LoopGuard
from aiforge.providers.local.placeholders import (
    EXAMPLE_ANSWER,
    PlaceholderGuard,
    example_strings,
    forbid_placeholders,
    user_text,
)
from aiforge.providers.local.protocol import ANSWER_SCHEMA, chat_messages, reply_schema
from aiforge.providers.local.reply import AnswerStream, JsonAnswerStream, parse_reply, reply_problem
from aiforge.providers.local.scoring import score_by_likelihood
from aiforge.providers.local.tool_gate import relevant_tools
from aiforge.providers.local.weights import resolve_model_path, warn_if_model_is_not_loaded

DEFAULT_MAX_TOKENS = 512
"""Cap on generated tokens when neither the call nor MAX_TOKENS sets one: a tiny model can babble forever."""
ATTEMPTS = 3
"""Decodings of one constrained reply at most: the reply, a retry that cannot copy a placeholder, invent a code
or write a call as text, an answer alone."""


class LocalProvider(Provider):
    """The embedded llama.cpp model: free, offline, streaming, with tools by constrained decoding."""

    name: ClassVar[str] = "local"
    supports_native_tools = True
    supports_streaming: ClassVar[bool] = True
    free = True
    embedded: ClassVar[bool] = True
    default_temperature: ClassVar[float | None] = defaults.TEMPERATURE
    structured_output: ClassVar[StructuredOutputMode] = "grammar"
    scores_labels = classifies_by_scoring = True  # each label's tokens' likelihood as the answer (scoring.py)
    embeds: ClassVar[bool] = True  # a second server on the same weights, in embedding mode (embeddings.py)
    embedding_limits = LOCAL_EMBEDDING_LIMITS

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        model_path = resolve_model_path(settings)
        threads = default_threads(settings.LOCAL_THREADS)
        self.engine = shared_engine(model_path, threads, settings.LOCAL_CONTEXT_SIZE)
        self.default_model = self.engine.model_name
        warn_if_model_is_not_loaded(settings.MODEL, model_path, self.default_model)
        self.sampling: dict[str, Any] = dict(defaults.SAMPLING)
        """llama.cpp sampling fields sent with every request (``defaults.py``)."""
        self.loop_guard = True
        """Stop a reply that repeats itself (``loops.py``)."""
        self.tool_gate = True
        """Offer only the tools the latest user message could need (``tool_gate.py``)."""

    @classmethod
    def connection_key(cls, settings: Any) -> tuple[Any, ...]:
        # MODEL too: each MODEL gets its own (cheap) instance, so a wrong one is warned about when set.
        return (settings.LOCAL_MODEL_PATH, settings.LOCAL_THREADS, settings.LOCAL_CONTEXT_SIZE, settings.MODEL)

    def _request(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> dict[str, Any]:
        # None: the user set no TEMPERATURE (ChatAgent passes it only then), so the measured default.
        temperature = params.temperature if params.temperature is not None else defaults.TEMPERATURE
        # Not self.settings.MAX_TOKENS: agents share this instance, each sends its own cap as params.max_tokens.
        max_tokens = params.max_tokens or DEFAULT_MAX_TOKENS
        return {
            "messages": chat_messages(messages, tools, params.output),
            **self.sampling,
            "temperature": temperature,
            "max_tokens": max_tokens,
            # Temperature 0 promises the same reply to the same conversation. Reusing the KV cache
            # of an earlier request breaks that: logits computed in other batches differ slightly,
            # and greedy decoding of a small model flips on such differences. So a greedy call
            # pays for its whole prompt; sampled calls reuse the cache.
            "cache_prompt": temperature > 0,
            # Always streamed, also for complete(): the per-token callback is what lets a
            # cancelled caller stop the decoding.
            "stream": True,
            "stream_options": {"include_usage": True},
        }

    def _error(self, error: dict[str, Any]) -> ProviderError:
        return engine_error(error, self.engine.context_size)

    def _guarded(self, guard: LoopGuard, run: DecodingRun, piece: str) -> str:
        """``piece`` as far as the loop guard lets it show; a reply that repeats itself stops decoding."""
        shown = guard.feed(piece)
        if guard.cut:
            run.stop.set()
        return shown

    async def complete(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> Completion:
        final: Completion | None = None
        async with aclosing(self.stream(messages, tools, params)) as events:
            async for event in events:
                if isinstance(event, Completion):
                    final = event
        assert final is not None
        return final

    async def embed(self, texts: Sequence[str], model: str | None = None) -> Embeddings:
        """The loaded model's mean-pooled, normalised vectors of ``texts`` (``local/embeddings.py``); ``model`` is
        ignored: this provider has one model."""
        return await embed_locally(self.embedding_engine, texts, self._error)

    def count_tokens(self, text: str) -> int:
        return len(self.engine.tokens_of(text))  # the loaded model's own tokenizer

    def embedding_model(self, model: str | None) -> str:
        return self.engine.model_name  # whatever was asked, the loaded weights answer

    @property
    def embeds_chat_model(self) -> bool:
        """True unless the GGUF file was converted as an embedding model (it names a pooling type: ``gguf.py``)."""
        return not declares_pooling(self.engine.model_path)

    @property
    def embedding_engine(self) -> LocalEngine:
        """The engine in embedding mode on the same weights (loaded on first ``embed``)."""
        engine = self.engine
        return shared_engine(engine.model_path, engine.threads, engine.context_size, embedding=True)

    async def score_labels(self, messages: list[Message], labels: Sequence[str], params: CallParams) -> LabelScores:
        return await score_by_likelihood(self.engine, messages, labels, self._error)

    async def stream(
        self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams
    ) -> AsyncGenerator[StreamEvent, None]:
        loop = asyncio.get_running_loop()
        if tools and self.tool_gate:
            tools = relevant_tools(tools, messages)
        request = self._request(messages, tools, params)
        output = params.output
        if not tools and output is None:
            async with aclosing(self._free_reply(loop, request, Usage())) as free:
                async for event in free:
                    yield event
            return
        async with aclosing(self._constrained(loop, request, messages, tools or [], output)) as events:
            async for event in events:
                yield event

    async def _free_reply(
        self, loop: asyncio.AbstractEventLoop, request: dict[str, Any], usage: Usage
    ) -> AsyncGenerator[StreamEvent, None]:
        """A text reply with no grammar, streamed through the loop guard; ``usage`` is what earlier attempts spent."""
        run, parts, guard = DecodingRun(loop), [], LoopGuard(self.loop_guard)
        async with aclosing(decode(self.engine, run, request)) as deltas:
            async for delta in deltas:
                parts.append(delta)
                if shown := self._guarded(guard, run, delta):
                    yield shown
        if rest := guard.flush():
            yield rest
        yield completion(run, "".join(parts), [], usage + run.final_usage(), guard, self.engine.model_name)

    async def _constrained(
        self,
        loop: asyncio.AbstractEventLoop,
        request: dict[str, Any],
        messages: list[Message],
        tools: list[ToolSpec],
        output: OutputSpec | None,
    ) -> AsyncGenerator[StreamEvent, None]:
        """A reply under the JSON protocol, decoded again while it copies the instructions or repeats a call.

        Once the turn's tool results are in, a text answer is asked for alone, without the
        instructions: shown them, the model copied the example answer or called again (2 of 6
        answers used the result; 5 of 6 without them). A reply that copied a placeholder is
        decoded again with a grammar whose strings cannot hold one; one that copied an example
        value, repeated a call or still copies is asked for as an answer alone.

        Codes in a call come from the conversation and answers are never tool-call text
        (``grounding.py``): an argument whose example is a code is decoded as one the conversation
        holds; a call holding another code the conversation does not is decoded again with that
        argument limited to the conversation's codes (with none, as an answer alone); an answer
        written as a call is decoded again as a call of the tool it meant, and once the results are
        in, the answer is the results themselves.
        """
        answer_only = ANSWER_SCHEMA if output is None else reply_schema([], output)
        plain_chat = chat_messages(messages, None, output)
        said, grounds, usage = user_text(messages), grounding_text(messages), Usage()
        if output is None and messages and messages[-1]["role"] == "tool":
            schema, request["messages"], examples = answer_only, plain_chat, set()
        else:
            schema, examples = reply_schema(tools, output, argument_choices(tools, grounds)), example_strings(tools)
        for attempt in range(ATTEMPTS):
            request["response_format"] = {"type": "json_schema", "json_schema": {"schema": schema}}
            run, reply = DecodingRun(loop), AnswerStream() if output is None else JsonAnswerStream()
            # Structured answers are JSON, which the guards' sentences and placeholders do not describe.
            guard = LoopGuard(self.loop_guard and output is None)
            copies = PlaceholderGuard({EXAMPLE_ANSWER} if examples else set(), enabled=output is None)
            # Before any result, a code the user wrote as the whole answer was meant as a call's argument.
            calling = request["messages"] is not plain_chat
            call_text = ToolTextGuard(tools, enabled=output is None, codes_from=grounds if calling else "")
            shown_any = False
            try:
                async with aclosing(decode(self.engine, run, request)) as deltas:
                    async for delta in deltas:
                        piece = call_text.feed(copies.feed(reply.feed(delta)))
                        if copies.cut:
                            run.stop.set()
                        if piece and (shown := self._guarded(guard, run, piece)):
                            shown_any = True
                            yield shown
            except ProviderError as exc:
                # llama.cpp's final parse of the reply failed ("does not match the expected
                # peg-native format"): an invalid reply like a copy, unless part of it was shown.
                if shown_any or attempt == ATTEMPTS - 1 or "does not match the expected" not in str(exc):
                    raise
                copies.cut = True
            piece = call_text.feed(copies.finish()) + call_text.finish()
            if piece and (shown := self._guarded(guard, run, piece)):
                yield shown
            if rest := guard.flush():
                yield rest
            usage += run.final_usage()
            text, tool_calls = parse_reply(reply)
            problem = reply_problem(text, tool_calls, copies.copied, messages, examples, said, output is not None)
            ungrounded = ungrounded_arguments(tool_calls[0], tools, grounds) if tool_calls else []
            if problem is None and ungrounded:
                problem = "ungrounded"
            elif problem is None and call_text.cut:
                problem = "tool text"
            if problem is None:
                break
            if problem == "tool text" and not calling and (results := trailing_results(messages)):
                text = results  # what the tools returned, rather than the model's tool-call text again
                if shown := self._guarded(guard, run, text):
                    yield shown
                if rest := guard.flush():
                    yield rest
                break
            meant = meant_tool(text, tools) if problem == "tool text" and calling else None
            if attempt == 0 and problem == "placeholder":
                schema = forbid_placeholders(schema)  # the same prompt; its grammar now forbids the copy
            elif attempt == 0 and problem == "ungrounded" and (
                choices := argument_choices(tools, grounds, {tool_calls[0]["name"]: ungrounded})
            ):
                # the same prompt; the invented code's argument can now only be one the conversation holds
                schema = reply_schema(tools, output, choices)
            elif attempt == 0 and meant is not None:
                # the answer was a call written as text: decode it as a call of the tool it meant
                schema = reply_schema([meant], output, argument_choices([meant], grounds), answer=False)
            elif output is None and calling and problem in ("copy", "ungrounded"):
                # no usable call before any tool result (it copied the example's value, or needs a code the
                # conversation does not hold): answer without the tool, in the model's own words (asked for as a
                # JSON answer on a chat that never mentions JSON, it wrote ");" and "123456789012345A")
                request.pop("response_format", None)
                request["messages"] = plain_chat
                async with aclosing(self._free_reply(loop, request, usage)) as events:
                    async for event in events:
                        yield event
                return
            else:
                schema, request["messages"], examples = forbid_placeholders(answer_only), plain_chat, set()
        else:
            raise ProviderError(
                "the embedded model wrote its instructions' placeholders or tool-call text instead of an answer; "
                "try again in other words, or use a larger model",
                provider="local",
            )
        if copies.cut and not tool_calls and not call_text.cut:
            text = copies.text
        yield completion(run, text, tool_calls, usage, guard, self.engine.model_name)
