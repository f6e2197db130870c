"""Reading Chat Completions answers: a response's JSON, or a stream's chunks, as a ``Completion``.

Shared by the live providers (``openai_wire``) and the Batch API (``openai_batch``). Nothing here imports the SDK.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aiforge.core.types import Completion, Usage, new_tool_call

# Responses are read as decoded JSON, not as the SDK's models: building those costs 0.15 ms a
# response and about as much per stream chunk, and aiforge reads only a few fields.


def usage_from_openai(usage: Mapping[str, Any] | None) -> Usage:
    """``Usage`` from a Chat Completions ``usage`` object (``prompt_tokens`` already includes cached)."""
    if not usage:
        return Usage()
    details = usage.get("prompt_tokens_details") or {}
    return Usage(
        input_tokens=usage.get("prompt_tokens") or 0,
        output_tokens=usage.get("completion_tokens") or 0,
        cached_input_tokens=details.get("cached_tokens") or 0,
    )


def completion_from_openai(response: Mapping[str, Any]) -> Completion:
    """A non-streaming Chat Completions response (its JSON) as a ``Completion``."""
    completion = Completion(
        model=response.get("model") or "",
        usage=usage_from_openai(response.get("usage")),
        service_tier=response.get("service_tier"),
    )
    choices = response.get("choices")
    if not choices:
        return completion
    choice = choices[0]
    message = choice.get("message") or {}
    completion.text = message.get("content") or ""
    completion.refusal = message.get("refusal")  # instead of content, to a structured request
    completion.finish_reason = choice.get("finish_reason")
    for call in message.get("tool_calls") or []:
        function = call.get("function")
        if function is not None:
            tool_call = new_tool_call(function.get("name"), function.get("arguments"), call.get("id"))
            completion.tool_calls.append(tool_call)
    return completion


class _PartialCall:
    __slots__ = ("id", "name", "arguments")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name = ""
        self.arguments: list[str] = []


class OpenAIStreamState:
    """Accumulates a Chat Completions stream: text deltas, tool-call fragments, usage.

    Fragments of parallel tool calls are keyed by their ``index`` and may interleave.
    ``read`` turns what the SDK hands over into the chunk's JSON object.
    """

    def __init__(self, read: Callable[[Any], Mapping[str, Any]]) -> None:
        self._read = read
        self.text_parts: list[str] = []
        self.refusal_parts: list[str] | None = None
        self.calls: dict[Any, _PartialCall] = {}
        self.usage: Usage | None = None
        self.model = ""
        self.finish_reason: str | None = None
        self.service_tier: str | None = None

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    def feed(self, raw_chunk: Any) -> str:
        """Take one chunk (its JSON, checked by ``read``); return its text delta ("" when it has none)."""
        chunk = self._read(raw_chunk)
        self.model = self.model or chunk.get("model") or ""
        self.service_tier = chunk.get("service_tier") or self.service_tier
        if chunk.get("usage") is not None:
            self.usage = usage_from_openai(chunk["usage"])
        delta_text = ""
        for choice in (chunk.get("choices") or ())[:1]:
            delta = choice.get("delta") or {}
            if delta.get("refusal") is not None:  # not answer text: it is kept apart, never streamed
                self.refusal_parts = self.refusal_parts or []
                self.refusal_parts.append(delta["refusal"])
            delta_text = delta.get("content") or ""
            if delta_text:
                self.text_parts.append(delta_text)
            for fragment in delta.get("tool_calls") or []:
                self._feed_call(fragment)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return delta_text

    def _feed_call(self, fragment: Mapping[str, Any]) -> None:
        key = fragment.get("index")
        if key is None:  # non-conforming gateways: an id starts a call, later fragments continue it
            key = f"#{len(self.calls)}" if fragment.get("id") or not self.calls else next(reversed(self.calls))
        call = self.calls.setdefault(key, _PartialCall())
        if fragment.get("id"):
            call.id = fragment["id"]
        function = fragment.get("function")
        if function is not None:
            if function.get("name"):
                call.name = function["name"]
            if function.get("arguments"):
                call.arguments.append(function["arguments"])

    def completion(self) -> Completion:
        """The final ``Completion`` of everything fed so far."""
        return Completion(
            text=self.text,
            tool_calls=[new_tool_call(c.name, "".join(c.arguments), c.id) for c in self.calls.values()],
            usage=self.usage or Usage(),
            model=self.model,
            finish_reason=self.finish_reason,
            refusal=None if self.refusal_parts is None else "".join(self.refusal_parts),
            service_tier=self.service_tier,
        )
