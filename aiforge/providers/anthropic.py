"""The ``anthropic`` provider: Claude through the Messages API and ``anthropic.AsyncAnthropic``.

Wire differences from Chat Completions that this module absorbs: system prompts are a top-level
parameter; turns alternate user/assistant, so consecutive same-role messages are merged into
content blocks; tool results are ``tool_result`` blocks of the next user turn; ``max_tokens`` is
required. Sampling parameters are not sent: API version 2026-10-21 (the SDK's default) rejects
``temperature`` with a 400, and the SDK no longer accepts it. The shared prefix of a long enough request
is marked for Anthropic's prompt cache (``anthropic_cache``). A user message's file markers become ``image`` and
``document`` blocks in place (``file_blocks``).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar

from aiforge.core.types import CallParams, Completion, Message, ToolSpec, new_tool_call
from aiforge.providers.anthropic_cache import mark_shared_prefix
from aiforge.providers.anthropic_completion import ERROR_TYPE_STATUS, anthropic_usage, completion_from_anthropic
from aiforge.providers.anthropic_output import add_output_format, output_tool_of, refusal_text
from aiforge.providers.base import StructuredOutputMode
from aiforge.providers.file_blocks import anthropic_blocks
from aiforge.providers.sdk import Endpoint, SDKProvider
from aiforge.providers.sdk_errors import HTTPFailure, SDKErrors

if TYPE_CHECKING:
    import anthropic

    from aiforge.core.file_inputs import FileRules
    from aiforge.core.files import FileKind
    from aiforge.providers.anthropic_batch import AnthropicBatchAPI
    from aiforge.providers.batch_api import BatchLimits

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 4096
"""Sent when the caller sets no limit: the Messages API requires one."""

# ---------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------


def to_anthropic_messages(messages: list[Message]) -> tuple[list[str], list[dict[str, Any]]]:
    """``(system prompts in order, messages)`` for the Messages API from neutral messages."""
    system_parts: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        role, content = message["role"], message["content"]
        blocks: list[dict[str, Any]] = []
        if role == "system":
            if content:
                system_parts.append(content)
            continue
        if role == "tool":
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.get("tool_call_id", "")}
            if content:
                result["content"] = content
            blocks.append(result)
        elif role == "user":  # file markers as image and document blocks (file_blocks)
            blocks += anthropic_blocks(content)
        elif content:  # the API rejects empty text blocks
            blocks.append({"type": "text", "text": content})
        if role == "assistant":
            blocks += [
                {"type": "tool_use", "id": call["id"], "name": call["name"], "input": call["arguments"]}
                for call in message.get("tool_calls") or []
            ]
        if not blocks:
            continue
        wire_role = "assistant" if role == "assistant" else "user"
        if turns and turns[-1]["role"] == wire_role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": wire_role, "content": blocks})
    for previous, turn in zip(turns, turns[1:], strict=False):
        if turn["role"] == "user":
            _order_tool_results(previous["content"], turn["content"])
    return system_parts, turns


def _order_tool_results(assistant_blocks: list[dict[str, Any]], user_blocks: list[dict[str, Any]]) -> None:
    """Put tool results first, in the order of the calls: the API pairs them with the calls that way."""
    order = {b["id"]: i for i, b in enumerate(assistant_blocks) if b["type"] == "tool_use"}
    if not order:
        return

    def position(block: dict[str, Any]) -> tuple[int, int]:
        if block["type"] == "tool_result":
            return 0, order.get(block["tool_use_id"], len(order))
        return 1, 0

    user_blocks.sort(key=position)  # stable: texts keep their order


def to_anthropic_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """ToolSpecs as Messages API ``tools``."""
    return [
        {
            "name": tool["name"],
            "description": tool.get("description", ""),
            "input_schema": tool.get("parameters") or {"type": "object", "properties": {}},
        }
        for tool in tools
    ]


# ---------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------


class AnthropicStreamState:
    """Accumulates a raw Messages event stream: text deltas, tool input JSON per block index, usage.

    The input JSON of a call to ``output_tool`` is the structured answer: it streams as text.
    A refusal is known only at the end (its text has streamed by then).
    """

    def __init__(self, output_tool: str | None = None) -> None:
        self.output_tool = output_tool
        self.output_blocks: set[int] = set()
        self.stop_details: Any = None
        self.text_parts: list[str] = []
        self.tool_blocks: dict[int, dict[str, Any]] = {}
        self.model = ""
        self.finish_reason: str | None = None
        self.counts = {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
        }

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    def _take_usage(self, usage: Any) -> None:
        # message_start carries the input counts, message_delta cumulative ones; None means "unchanged".
        for name in self.counts:
            value = getattr(usage, name, None)
            if value is not None:
                self.counts[name] = value

    def feed(self, event: Any) -> str:
        """Take one event; return its text delta ("" when it has none)."""
        kind = event.type
        text = ""
        if kind == "message_start":
            self.model = event.message.model or ""
            self._take_usage(event.message.usage)
        elif kind == "content_block_start":
            block = event.content_block
            if block.type == "tool_use" and block.name == self.output_tool:
                self.output_blocks.add(event.index)
            elif block.type == "tool_use":
                self.tool_blocks[event.index] = {"id": block.id, "name": block.name, "input": block.input, "json": []}
            elif block.type == "text":
                text = block.text or ""
        elif kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                text = delta.text
            elif delta.type == "input_json_delta" and event.index in self.output_blocks:
                text = delta.partial_json
            elif delta.type == "input_json_delta" and event.index in self.tool_blocks:
                self.tool_blocks[event.index]["json"].append(delta.partial_json)
        elif kind == "message_delta":
            self.finish_reason = event.delta.stop_reason or self.finish_reason
            self.stop_details = getattr(event.delta, "stop_details", None) or self.stop_details
            self._take_usage(event.usage)
        if text:
            self.text_parts.append(text)
        return text

    def completion(self) -> Completion:
        """The final ``Completion`` of everything fed so far."""
        calls = []
        for index in sorted(self.tool_blocks):
            block = self.tool_blocks[index]
            raw = "".join(block["json"]) if block["json"] else block["input"]
            calls.append(new_tool_call(block["name"], raw, block["id"]))
        c = self.counts
        refused = self.finish_reason == "refusal"
        return Completion(
            text=self.text,
            tool_calls=calls,
            usage=anthropic_usage(
                c["input_tokens"], c["output_tokens"], c["cache_read_input_tokens"], c["cache_creation_input_tokens"]
            ),
            model=self.model,
            finish_reason=self.finish_reason,
            refusal=refusal_text(self.stop_details, self.text) if refused else None,
        )


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


@cache
def _anthropic_errors() -> SDKErrors:
    import anthropic
    import httpx2  # the SDK's transport (a dependency of anthropic): its errors escape a stream being read

    return SDKErrors(
        base=anthropic.AnthropicError,
        timeout=(anthropic.APITimeoutError, httpx2.TimeoutException),
        connection=(anthropic.APIConnectionError, httpx2.RequestError),
        http=anthropic.APIStatusError,
        unwrapped=(httpx2.RequestError,),
    )


# ---------------------------------------------------------------------------
# The provider
# ---------------------------------------------------------------------------


class AnthropicProvider(SDKProvider["anthropic.AsyncAnthropic"]):
    """Claude through ``anthropic.AsyncAnthropic``; needs ``ANTHROPIC_API_KEY``."""

    name: ClassVar[str] = "anthropic"
    temperature_unsent: ClassVar[str | None] = (
        "the Messages API (version 2026-10-21, the anthropic SDK's default) rejects temperature for every model"
    )
    service_tier_unsent: ClassVar[str | None] = (
        "the Messages API has no flex or priority tier to ask for per request (its service_tier is auto or "
        "standard_only)"
    )
    structured_output: ClassVar[StructuredOutputMode] = "output_config"
    reads_files: tuple[FileKind, ...] = ("image", "pdf")  # image and document content blocks
    file_rules: FileRules | None = "anthropic"
    endpoint: ClassVar[Endpoint] = Endpoint(
        "anthropic", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "claude-haiku-4-5", default_url=DEFAULT_BASE_URL
    )

    def _new_client(self) -> anthropic.AsyncAnthropic:
        import anthropic

        return anthropic.AsyncAnthropic(
            api_key=self._api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout
        )

    def _sdk_errors(self) -> SDKErrors:
        return _anthropic_errors()

    def _http_failure(self, exc: anthropic.APIStatusError) -> HTTPFailure:
        status = exc.status_code
        if status < 400:  # an `event: error` inside a 200 stream
            status = ERROR_TYPE_STATUS.get(exc.type or "", 500)
        body = exc.body
        return HTTPFailure(
            status=status,
            message=exc.api_message or exc.message,
            body=body,
            headers=exc.response.headers,
            request_id=exc.request_id or (body.get("request_id") if isinstance(body, dict) else None),
        )

    def batch_api(self, limits: BatchLimits | None = None) -> AnthropicBatchAPI:
        """The Message Batches API (``agent.submit_batch``)."""
        from aiforge.providers.anthropic_batch import AnthropicBatchAPI

        return AnthropicBatchAPI(self, limits)

    def _request(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> dict[str, Any]:
        system_parts, turns = to_anthropic_messages(messages)
        request: dict[str, Any] = {
            "model": params.model or self.default_model,
            "messages": turns,
            "max_tokens": params.max_tokens or DEFAULT_MAX_TOKENS,
        }
        if system_parts:
            request["system"] = "\n\n".join(system_parts)
        if tools:
            request["tools"] = to_anthropic_tools(tools)
        if params.output is not None:
            add_output_format(request, params.output)
        if params.prompt_cache:
            mark_shared_prefix(request, system_parts)
        return request

    async def _call(self, request: dict[str, Any], params: CallParams) -> Completion:
        response = await self.client().messages.create(**request)
        return completion_from_anthropic(response, output_tool_of(params.output))

    async def _open_stream(self, request: dict[str, Any]) -> Any:
        return await self.client().messages.create(**request)

    def _stream_state(self, params: CallParams) -> AnthropicStreamState:
        return AnthropicStreamState(output_tool_of(params.output))
