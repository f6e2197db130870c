"""Tool calls in aiforge's neutral shape: ``ToolCall``, ``ToolSpec``, ``ToolResult``, and ``new_tool_call``, the
one way to build a call from a model's raw arguments (checked, never run when they are not a JSON object).

``aiforge.core.types`` re-exports each, with the messages that carry them.
"""

from __future__ import annotations

import json
import secrets
from typing import Any, NotRequired, TypedDict

from aiforge.core.render import replace_lone_surrogates


class ToolCall(TypedDict):
    """One tool invocation requested by the model."""

    id: str
    name: str
    arguments: dict[str, Any]
    # Set when the model's arguments were not a JSON object: the raw text, kept so the
    # agent can answer the call with a clear error instead of running the tool.
    invalid_arguments: NotRequired[str]


def parse_tool_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """``(arguments, invalid_arguments)``: a JSON object, or ``{}`` and the raw text when it is not one."""
    if isinstance(raw, dict):
        return _checked_arguments(raw, json.dumps(raw, default=str))
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None  # a call to a tool without parameters
    if not isinstance(raw, str):
        return {}, json.dumps(raw, default=str)
    try:
        value = json.loads(raw)
    except ValueError:
        return {}, raw
    return _checked_arguments(value, raw)


def _checked_arguments(value: Any, raw: str) -> tuple[dict[str, Any], str | None]:
    """Arguments that can be sent back on the wire: a JSON object, finite numbers, UTF-8 text."""
    if not isinstance(value, dict):
        return {}, raw
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:  # NaN or Infinity: no provider accepts them back in the history
        return {}, raw
    cleaned = replace_lone_surrogates(text)
    return (value if cleaned is text else json.loads(cleaned)), None


def new_tool_call(name: str, raw_arguments: Any = None, call_id: str | None = None) -> ToolCall:
    """The one way to build a ``ToolCall``: arguments checked, a missing id (some gateways omit it) made fresh.

    ``raw_arguments`` is a dict or the JSON text a model produced; anything that is not a JSON
    object with finite numbers is kept as ``invalid_arguments`` so the agent can answer the call
    with a clear error instead of running the tool.
    """
    arguments, invalid = parse_tool_arguments(raw_arguments)
    call = ToolCall(id=call_id or f"call_{secrets.token_hex(12)}", name=name, arguments=arguments)
    if invalid is not None:
        call["invalid_arguments"] = invalid
    return call


class ToolSpec(TypedDict):
    """What a provider needs to offer a tool to the model: name, description, JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


class ToolResult(TypedDict):
    """A finished tool call as a turn reports it (``ChatResponse.tool_calls``, a stream's ``on_tool``)."""

    id: str
    tool: str
    input: dict[str, Any]
    output: str
    error: bool
