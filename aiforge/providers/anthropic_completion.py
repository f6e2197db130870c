"""Reading Anthropic's answers: a Messages API response as a ``Completion``, an error type as its HTTP status.

Shared by the live provider (``anthropic``) and the Message Batches API (``anthropic_batch``), which both
import it from here. Nothing here imports the SDK.
"""

from __future__ import annotations

import json
from typing import Any

from aiforge.core.types import Completion, Usage, new_tool_call
from aiforge.providers.anthropic_output import refusal_text

#: Status of an ``error`` event inside a 200 stream, from its ``error.type``.
ERROR_TYPE_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


def anthropic_usage(input_tokens: int, output_tokens: int, cache_read: int, cache_write: int) -> Usage:
    """The counts of a Message (or of a stream's events) as ``Usage``."""
    # Anthropic counts cache reads and writes apart from input_tokens; aiforge's input includes them.
    return Usage(
        input_tokens=input_tokens + cache_read + cache_write,
        output_tokens=output_tokens,
        cached_input_tokens=cache_read,
        cache_write_tokens=cache_write,
    )


def completion_from_anthropic(message: Any, output_tool: str | None = None) -> Completion:
    """A Messages API response as a ``Completion`` (``finish_reason`` is the raw ``stop_reason``).

    A call to ``output_tool`` (see ``anthropic_output``) is the structured answer: its input becomes the text.
    """
    usage = message.usage
    completion = Completion(
        model=message.model or "",
        finish_reason=message.stop_reason,
        usage=anthropic_usage(
            usage.input_tokens or 0,
            usage.output_tokens or 0,
            usage.cache_read_input_tokens or 0,
            usage.cache_creation_input_tokens or 0,
        ),
    )
    texts = []
    for block in message.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use" and block.name == output_tool:
            texts.append(json.dumps(block.input, ensure_ascii=False))
        elif block.type == "tool_use":
            completion.tool_calls.append(new_tool_call(block.name, block.input, block.id))
    completion.text = "".join(texts)
    if message.stop_reason == "refusal":
        completion.refusal = refusal_text(message.stop_details, completion.text)
    return completion
