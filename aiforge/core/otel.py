"""OpenTelemetry spans of aiforge's work, named and attributed by the GenAI semantic conventions (``OTEL=True``).

A batch is one ``aiforge.batch`` span; each turn under it (or on its own) is ``invoke_agent``; each model call of
the turn is ``chat {model}`` and each tool call ``execute_tool {tool}``. Spans go to the tracer provider the
application set up (``opentelemetry.trace.set_tracer_provider``, Logfire, an OTLP distro): aiforge configures no
exporter. Names follow the GenAI semantic conventions as of their development release of late 2026
(``gen_ai.provider.name``, ``gen_ai.usage.cache_read.input_tokens``...); aiforge's own figures (cost in USD, the
trace id of ``ChatResponse.trace_id``, a response-cache hit) are under ``aiforge.``.

``gen_ai.provider.name`` is ``openai`` or ``anthropic`` for those providers (the conventions' values) and aiforge's
provider name otherwise (``internal_gateway``, ``local``, ``ollama``, ``scripted``...): a gateway speaking OpenAI's
protocol may proxy any vendor, so it is not claimed to be ``openai``. ``error.type`` is the class name of the
aiforge error a call ended with (``RateLimitError``, ``APITimeoutError``, ``ProviderError``...), ``CancelledError``
for a cancelled turn, and ``tool_error`` for a tool that reported a failure. A turn answered from aiforge's response
cache is an ``invoke_agent`` span with ``aiforge.cache_hit`` true and no ``chat`` span (no request was made); each
retry of a model call is an ``aiforge.retry`` event on its one ``chat`` span.

Message content (``gen_ai.input.messages``, ``gen_ai.output.messages``, tool arguments and results) is recorded
only when ``OTEL_CONTENT`` is true, or when it is unset and the standard
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is ``true``, ``SPAN_ONLY`` or ``SPAN_AND_EVENT``. Every
text put on a span goes through ``core.logs.redact``: no key reaches a span.

opentelemetry-api is imported by ``core.telemetry`` only, and only once a setting turns spans on: with
``OTEL=False`` each hook in the turn is one ``is None`` test.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from contextvars import ContextVar
from types import TracebackType
from typing import Any

from aiforge.core.file_markers import shown
from aiforge.core.logs import redact
from aiforge.core.telemetry import Telemetry as Telemetry
from aiforge.core.telemetry import _api, _context
from aiforge.core.telemetry import telemetry_of as telemetry_of
from aiforge.core.types import CallParams, Completion, Message, ToolCall

_model_span: ContextVar[Any] = ContextVar("aiforge_otel_model_span", default=None)
"""The ``chat`` span of the model call in progress in this context (its retries become events on it)."""


class SpanScope:
    """A span made current for a ``with`` block and ended with it; an exception ending the block marks it failed."""

    __slots__ = ("span", "_token", "_model_token")

    def __init__(self, span: Any, *, model_call: bool = False) -> None:
        self.span = span
        self._token: Any = None
        self._model_token: Any = model_call  # True until entered: then the token that makes it current

    def __enter__(self) -> Any:
        self._token = _context().attach(_api().set_span_in_context(self.span))
        if self._model_token:
            self._model_token = _model_span.set(self.span)
        return self.span

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if exc is not None:
            mark_failed(self.span, exc)
        self.span.end()
        _context().detach(self._token)
        if self._model_token:
            _model_span.reset(self._model_token)


def mark_failed(span: Any, error: BaseException | str, description: str | None = None) -> None:
    """Set ``error.type`` and an error status on ``span`` (the exception's class name, its redacted message)."""
    trace = _api()
    kind = error if isinstance(error, str) else type(error).__qualname__
    text = description if description is not None else (str(error) if not isinstance(error, str) else "")
    span.set_attribute("error.type", kind)
    span.set_status(trace.Status(trace.StatusCode.ERROR, redact(text)[:500] or None))


def _start(telemetry: Telemetry, name: str, attributes: dict[str, Any], *, client: bool = False) -> Any:
    kind = _api().SpanKind.CLIENT if client else _api().SpanKind.INTERNAL
    return telemetry.tracer.start_span(name, kind=kind, attributes=attributes)


def _request_attributes(telemetry: Telemetry, operation: str, params: CallParams) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": operation,
        "gen_ai.provider.name": telemetry.provider,
        "gen_ai.request.model": params.model,
    }
    if params.temperature is not None and telemetry.sends_temperature:
        attributes["gen_ai.request.temperature"] = params.temperature
    if params.max_tokens is not None:
        attributes["gen_ai.request.max_tokens"] = params.max_tokens
    if params.output is not None:
        attributes["gen_ai.output.type"] = "json"
    return attributes


# -- batches ---------------------------------------------------------------------------------------------------


def batch_scope(telemetry: Telemetry, *, model: str, concurrency: int) -> SpanScope:
    """The ``aiforge.batch`` span every row's turn of one ``run_batch`` nests under (its size is set on it later).

    Not a GenAI operation of the conventions (``invoke_workflow`` is for multi-agent workflows), so it has no
    ``gen_ai.operation.name``: aiforge's own span, under aiforge's own name.
    """
    attributes = {
        "gen_ai.provider.name": telemetry.provider,
        "gen_ai.request.model": model,
        "aiforge.batch.concurrency": concurrency,
    }
    return SpanScope(_start(telemetry, "aiforge.batch", attributes))


def end_batch(span: Any, result: Any) -> None:
    """Put a finished batch's outcome on its span: rows, failures, cache hits, cost."""
    span.set_attributes(
        {
            "aiforge.batch.size": len(result.inputs),
            "aiforge.batch.failed": len(result.failed),
            "aiforge.batch.cached": result.cached,
            "aiforge.cost_usd": result.total_cost,
        }
    )


# -- turns -----------------------------------------------------------------------------------------------------


def agent_scope(
    telemetry: Telemetry, params: CallParams, *, conversation_id: str, messages: list[Message]
) -> SpanScope:
    """The ``invoke_agent`` span of one turn (an in-process agent: kind INTERNAL, no server attributes).

    A ``ChatAgent`` has no application-given name, so the span is ``invoke_agent`` without ``gen_ai.agent.name``.
    """
    attributes = _request_attributes(telemetry, "invoke_agent", params)
    attributes["gen_ai.conversation.id"] = conversation_id
    if telemetry.content:
        attributes["gen_ai.input.messages"] = _messages_json(messages)
    return SpanScope(_start(telemetry, "invoke_agent", attributes))


def end_turn(span: Any, telemetry: Telemetry, response: Any) -> None:
    """Put a finished turn's figures on its span: tokens, provider cache reads, cost, model, a response-cache hit."""
    attributes: dict[str, Any] = {
        "aiforge.cost_usd": response.cost,
        "aiforge.trace_id": response.trace_id,
        "aiforge.cache_hit": bool(response.cached),
    }
    if not response.cached:  # a reply from aiforge's response cache used no tokens now (and has no chat span)
        attributes["gen_ai.usage.input_tokens"] = response.input_tokens
        attributes["gen_ai.usage.output_tokens"] = response.output_tokens
        attributes["gen_ai.usage.cache_read.input_tokens"] = response.cached_tokens
    if response.model:
        attributes["gen_ai.response.model"] = response.model
    finish = _final_finish_reason(response.trace)
    if finish:
        attributes["gen_ai.response.finish_reasons"] = (finish,)
    if telemetry.content:
        attributes["gen_ai.output.messages"] = _output_json(response.message, [], finish)
    span.set_attributes(attributes)


def _final_finish_reason(trace: Iterable[Any]) -> str | None:
    calls = [r for r in trace if r.get("step") == "model" and r.get("node") != "summary"]
    return calls[-1].get("finish_reason") if calls else None


# -- model calls -----------------------------------------------------------------------------------------------


def model_scope(
    telemetry: Telemetry, params: CallParams, messages: list[Message], *, kind: str = "chat", streamed: bool = False
) -> SpanScope:
    """The ``chat {model}`` span of one model call, retries included (each retry an ``aiforge.retry`` event).

    ``kind`` is aiforge's name for the call when it is not a turn's step (``summary``, ``score_labels``).
    Kind CLIENT for a provider over the network, INTERNAL for an in-process model (no base URL).
    """
    attributes = _request_attributes(telemetry, "chat", params)
    attributes.update(telemetry.server)
    if streamed:
        attributes["gen_ai.request.stream"] = True
    if kind != "chat":
        attributes["aiforge.call.kind"] = kind
    if telemetry.content:
        attributes["gen_ai.input.messages"] = _messages_json(messages)
    span = _start(telemetry, f"chat {params.model}", attributes, client=bool(telemetry.server))
    return SpanScope(span, model_call=True)


def end_model_call(span: Any, telemetry: Telemetry, completion: Completion, cost: float) -> None:
    """Put a finished model call's response on its span: model, finish reason, tokens, cache tokens, cost."""
    usage = completion.usage
    attributes: dict[str, Any] = {
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cached_input_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
        "aiforge.cost_usd": cost,
    }
    if completion.model:
        attributes["gen_ai.response.model"] = completion.model
    if completion.finish_reason:
        attributes["gen_ai.response.finish_reasons"] = (completion.finish_reason,)
    if telemetry.content:
        attributes["gen_ai.output.messages"] = _output_json(
            completion.text, completion.tool_calls, completion.finish_reason
        )
    span.set_attributes(attributes)


def note_retry(error: BaseException, delay: float, retries_done: int) -> None:
    """Record a retry on the model call's span in progress (an ``aiforge.retry`` event); nothing outside one."""
    span = _model_span.get()
    if span is None:
        return
    span.add_event(
        "aiforge.retry",
        {
            "error.type": type(error).__qualname__,
            "aiforge.retry.number": retries_done + 1,
            "aiforge.retry.delay_s": delay,
        },
    )


# -- tools -----------------------------------------------------------------------------------------------------


def tool_scope(telemetry: Telemetry, call: ToolCall, description: str | None) -> SpanScope:
    """The ``execute_tool {name}`` span of one tool call (a function the agent runs: ``gen_ai.tool.type`` function)."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.provider.name": telemetry.provider,
        "gen_ai.tool.name": call["name"],
        "gen_ai.tool.call.id": call["id"],
        "gen_ai.tool.type": "function",
    }
    if description:
        attributes["gen_ai.tool.description"] = redact(description)
    if telemetry.content:
        attributes["gen_ai.tool.call.arguments"] = redact(
            json.dumps(call["arguments"], ensure_ascii=False, default=str)
        )
    return SpanScope(_start(telemetry, f"execute_tool {call['name']}", attributes))


def end_tool_call(span: Any, telemetry: Telemetry, output: str, error: bool) -> None:
    """Put a tool call's outcome on its span: its result when content is on; a failure as ``error.type`` tool_error.

    A tool's failure is its result (the model reads it), not an exception: its text is the status description
    only when content is recorded.
    """
    if telemetry.content:
        span.set_attribute("gen_ai.tool.call.result", redact(output))
    if error:
        mark_failed(span, "tool_error", output if telemetry.content else "the tool reported an error")


# -- content, in the conventions' JSON message shapes ------------------------------------------------------------


def _messages_json(messages: list[Message]) -> str:
    return redact(json.dumps([_message_parts(m) for m in messages], ensure_ascii=False, default=str))


def _message_parts(message: Message) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if message["role"] == "tool":
        parts.append({"type": "tool_call_response", "id": message.get("tool_call_id"), "response": message["content"]})
    elif message["content"]:
        parts.append({"type": "text", "content": shown(message["content"])})  # a file by its name
    parts.extend(_tool_call_part(call) for call in message.get("tool_calls", ()))
    return {"role": message["role"], "parts": parts}


def _tool_call_part(call: ToolCall) -> dict[str, Any]:
    return {"type": "tool_call", "id": call["id"], "name": call["name"], "arguments": call["arguments"]}


def _output_json(text: str, tool_calls: list[ToolCall], finish_reason: str | None) -> str:
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
    parts.extend(_tool_call_part(call) for call in tool_calls)
    message = {"role": "assistant", "parts": parts, "finish_reason": finish_reason or "stop"}
    return redact(json.dumps([message], ensure_ascii=False, default=str))
