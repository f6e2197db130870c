"""The OpenAI Chat Completions wire format and its adapter, shared by ``openai`` and ``internal_gateway``.

Neutral messages and tools go out as Chat Completions JSON; responses and stream chunks come back
as ``Completion`` (read by ``openai_completion``). The two providers are this one adapter at different endpoints.
A user message's file markers become ``image_url`` and ``file`` parts (``file_blocks``, images at ``IMAGE_DETAIL``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextlib import suppress
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar

from aiforge.core.logs import redact
from aiforge.core.types import CallParams, Completion, Embeddings, Message, ProviderError, ToolSpec
from aiforge.providers.base import StructuredOutputMode
from aiforge.providers.file_blocks import Detail, openai_content
from aiforge.providers.openai_completion import OpenAIStreamState, completion_from_openai
from aiforge.providers.openai_embeddings import embed_over_openai
from aiforge.providers.openai_output import add_output_format
from aiforge.providers.sdk import SDKProvider
from aiforge.providers.sdk_errors import HTTPFailure, SDKErrors

if TYPE_CHECKING:
    import openai

    from aiforge.core.settings import AIForgeSettings

# ---------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------


def to_openai_messages(messages: list[Message], image_detail: Detail = "auto") -> list[dict[str, Any]]:
    """Neutral messages as Chat Completions ``messages``; a user message's file markers as image and file parts
    (``file_blocks``, images at ``image_detail``)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        if role == "tool":
            out.append({"role": "tool", "tool_call_id": message.get("tool_call_id", ""), "content": message["content"]})
            continue
        item: dict[str, Any] = {"role": role, "content": message["content"]}
        if role == "user":
            item["content"] = openai_content(message["content"], image_detail)
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
    service_tier_unsent: ClassVar[str | None] = None

    embeds: ClassVar[bool] = True  # POST /embeddings: OpenAI's and every OpenAI-compatible server's

    #: OpenAI's reasoning models reject ``max_tokens``; many gateways only know it.
    max_tokens_field: ClassVar[str] = "max_completion_tokens"

    def __init__(self, settings: AIForgeSettings) -> None:
        super().__init__(settings)
        self.image_detail: Detail = settings.IMAGE_DETAIL

    def _new_client(self) -> openai.AsyncOpenAI:
        import openai

        return openai.AsyncOpenAI(api_key=self._api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout)

    async def embed(self, texts: Sequence[str], model: str | None = None) -> Embeddings:
        """The vectors of ``texts`` from one ``/embeddings`` request (``openai_embeddings``)."""
        return await embed_over_openai(self, texts, model)

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
            "messages": to_openai_messages(messages, self.image_detail),
        }
        if tools:
            request["tools"] = to_openai_tools(tools)
        if params.temperature is not None and not self.fixed_temperature(request["model"]):
            request["temperature"] = params.temperature
        if params.max_tokens is not None:
            request[self.max_tokens_field] = params.max_tokens
        if params.output is not None:
            add_output_format(request, params.output, json_object=self.json_object_only(request["model"]))
        if params.service_tier is not None:
            request["service_tier"] = params.service_tier
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
