"""What a script holds: ``ScriptedReply`` (text, tool calls, a structured value or a refusal) and its builders
(``tool_call``, ``tool_calls``, ``structured``, ``refusal``), and the ``ScriptedCall`` a provider records.

``aiforge.providers.scripted`` re-exports each: it is the import path the docs and tutorials use.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import pydantic_core

from aiforge.core.types import (
    CallParams,
    Message,
    ToolCall,
    ToolSpec,
    Usage,
    new_tool_call,
)

_ids = itertools.count(1)


_NO_OUTPUT: Any = object()


@dataclass(slots=True)
class ScriptedReply:
    """One scripted model answer: text, tool calls, or both; or a structured value, or a refusal."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    output: Any = _NO_OUTPUT
    """A structured answer (pydantic model, dataclass, dict, list or scalar): replaces ``text`` with its JSON."""
    refusal: str | None = None
    """The model declines to answer: ``Completion.refusal``, with empty text."""

    def __post_init__(self) -> None:
        if self.output is not _NO_OUTPUT:
            self.text = pydantic_core.to_json(self.output).decode()


@dataclass(slots=True)
class ScriptedCall:
    """What the provider received for one call."""

    messages: list[Message]
    tools: list[ToolSpec] | None
    params: CallParams

    @property
    def last_user_message(self) -> str:
        return next((m["content"] for m in reversed(self.messages) if m["role"] == "user"), "")


def tool_call(name: str, arguments: dict[str, Any] | None = None, /, **kwargs: Any) -> ScriptedReply:
    """A scripted reply that calls one tool: ``tool_call("weather", city="NYC")``."""
    args = dict(arguments or {}, **kwargs)
    return ScriptedReply(tool_calls=[new_tool_call(name, args, f"call_{next(_ids):06d}")])


def tool_calls(*calls: tuple[str, dict[str, Any]]) -> ScriptedReply:
    """A scripted reply with several parallel tool calls: ``tool_calls(("a", {...}), ("b", {...}))``."""
    return ScriptedReply(tool_calls=[new_tool_call(n, a, f"call_{next(_ids):06d}") for n, a in calls])


def structured(value: Any) -> ScriptedReply:
    """A scripted structured answer: ``structured(Review(...))``, ``structured({"a": 1})``, ``structured(True)``."""
    return ScriptedReply(output=value)


def refusal(explanation: str = "") -> ScriptedReply:
    """A scripted refusal to answer: ``refusal("I can't help with that.")``."""
    return ScriptedReply(refusal=explanation)
