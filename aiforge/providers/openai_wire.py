"""The OpenAI Chat Completions wire format and its adapter, shared by ``openai`` and ``internal_gateway``.

Neutral messages and tools go out as Chat Completions JSON; responses and stream chunks come back
as ``Completion``. The two providers are this one adapter at different endpoints.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from contextlib import suppress
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar

from aiforge.core.logs import redact
from aiforge.core.types import CallParams, Completion, Message, ProviderError, ToolSpec, Usage, new_tool_call
from aiforge.providers.base import StructuredOutputMode
from aiforge.providers.openai_output import add_output_format
from aiforge.providers.sdk import SDKProvider
from aiforge.providers.sdk_errors import HTTPFailure, SDKErrors

if TYPE_CHECKING:
    import openai

# ---------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------


def to_openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Neutral messages as Chat Completions ``messages``."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        if role == "tool":
            out.append({"role": "tool", "tool_call_id": message.get("tool_call_id", ""), "content": message["content"]})
            continue
        item: dict[str, Any] = {"role": role, "content": message["content"]}
        if role == "user" and message.get("name"):
            item["name"] = message["name"]
        calls = message.get("tool_calls") or []
        if role == "assistant" and calls:
            item["content"] = message["content"] or None  # the API's own shape for "calls only"
            item["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
                }
                for call in calls
            ]
        out.append(item)
    return out


def to_openai_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """ToolSpecs as Chat Completions ``tools``."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool["name"],
                "description": tool.get("description", ""),
                "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
            },
        }
        for tool in tools
    ]


# ---------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------


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
    completion = Completion(model=response.get("model") or "", usage=usage_from_openai(response.get("usage")))
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

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    def feed(self, raw_chunk: Any) -> str:
        """Take one chunk (its JSON, checked by ``read``); return its text delta ("" when it has none)."""
        chunk = self._read(raw_chunk)
        self.model = self.model or chunk.get("model") or ""
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
        )


# ---------------------------------------------------------------------------
# The adapter
# ---------------------------------------------------------------------------


@cache
def _openai_errors() -> SDKErrors:
    import openai

    return SDKErrors(
        base=openai.OpenAIError,
        timeout=(openai.APITimeoutError,),
        connection=(openai.APIConnectionError,),
        http=openai.APIError,  # also an error event inside a 200 stream, which has no status
    )


class ChatCompletionsProvider(SDKProvider["openai.AsyncOpenAI"]):
    """A provider speaking Chat Completions through ``openai.AsyncOpenAI``; subclasses set ``endpoint``."""

    structured_output: ClassVar[StructuredOutputMode] = "json_schema"

    #: OpenAI's reasoning models reject ``max_tokens``; many gateways only know it.
    max_tokens_field: ClassVar[str] = "max_completion_tokens"

    def _new_client(self) -> openai.AsyncOpenAI:
        import openai

        return openai.AsyncOpenAI(api_key=self._api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout)

    def fixed_temperature(self, model: str) -> bool:
        """True for models that reject any temperature but the default (only OpenAI's reasoning models)."""
        return False

    def json_object_only(self, model: str) -> bool:
        """True when structured output must go as ``json_object`` to this endpoint (see ``openai_output``)."""
        return False

    def _sdk_errors(self) -> SDKErrors:
        return _openai_errors()

    def _http_failure(self, exc: openai.APIError) -> HTTPFailure:
        server_message = exc.body.get("message") if isinstance(exc.body, dict) else None
        response = getattr(exc, "response", None)
        headers = response.headers if response is not None else None
        return HTTPFailure(
            status=getattr(exc, "status_code", None),
            message=server_message if isinstance(server_message, str) and server_message else exc.message,
            body=exc.body,
            headers=headers,
            request_id=headers.get("x-request-id") if headers is not None else None,
        )

    def _request(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": params.model or self.default_model,
            "messages": to_openai_messages(messages),
        }
        if tools:
            request["tools"] = to_openai_tools(tools)
        if params.temperature is not None and not self.fixed_temperature(request["model"]):
            request["temperature"] = params.temperature
        if params.max_tokens is not None:
            request[self.max_tokens_field] = params.max_tokens
        if params.output is not None:
            add_output_format(request, params.output, json_object=self.json_object_only(request["model"]))
        return request

    def _stream_request(
        self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams
    ) -> dict[str, Any]:
        request = self._request(messages, tools, params)
        request.update(stream=True, stream_options={"include_usage": True})
        return request

    async def _post(self, request: dict[str, Any]) -> Any:
        """The decoded JSON answer to ``request``, or for a stream an ``AsyncStream`` of decoded chunks.

        The request is already in wire shape, so it is posted as is: ``chat.completions.create``
        would walk it against the SDK's TypedDicts first (``async_maybe_transform``, an identity
        on what aiforge sends), which costs 0.4 ms with 2 messages and over 3 ms with 22.
        Auth headers, timeout, SSE framing and errors are the client's, exactly as ``create`` uses them.
        """
        from openai import AsyncStream

        return await self.client().post(
            "/chat/completions",
            body=request,
            cast_to=object,  # the decoded JSON, read as is (see "Responses" above)
            options={"security": {"bearer_auth": True}},  # what ``create`` sends: the key as a bearer token
            stream=bool(request.get("stream")),
            stream_cls=AsyncStream[object],
        )

    def _json_object(self, body: Any) -> Mapping[str, Any]:
        """A response body as a JSON object; the SDK hands over the text of one not labelled as JSON."""
        if isinstance(body, str):
            with suppress(ValueError):
                body = json.loads(body)
        if not isinstance(body, Mapping):
            text = redact(str(body)[:200], self._secrets)
            raise ProviderError(f"the server's answer is not a Chat Completions object: {text!r}", provider=self.name)
        return body

    async def _call(self, request: dict[str, Any], params: CallParams) -> Completion:
        return completion_from_openai(self._json_object(await self._post(request)))

    async def _open_stream(self, request: dict[str, Any]) -> Any:
        return await self._post(request)

    def _stream_state(self, params: CallParams) -> OpenAIStreamState:
        return OpenAIStreamState(read=self._json_object)
