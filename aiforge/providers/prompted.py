"""Tools for a provider without native tool calling, through the prompted-JSON protocol.

``PromptedTools(inner)`` is a provider that looks native to its caller: it appends tool-use
instructions to the system prompt, sends the history in plain role/content form, parses a
``{"tool": ..., "input": {...}}`` reply back into tool calls, and keeps that JSON out of the
stream. Without tools it passes every call straight through.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import AsyncIterator
from typing import ClassVar

from aiforge.core.types import CallParams, Completion, Message, ToolCall, ToolSpec, new_tool_call
from aiforge.providers.base import Provider, StreamEvent

TOOL_USE_SYSTEM = """\
You can use these tools:
{tool_list}

To use a tool, reply with ONLY a JSON object and nothing else:
{{"tool": "<tool name>", "input": {{<arguments>}}}}
You will then receive the tool's result and can call another tool or answer.
When you do not need a tool, answer the user directly in plain text, without JSON."""

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def describe_tools(tools: list[ToolSpec]) -> str:
    """One line per tool for TOOL_USE_SYSTEM: name, description, argument schema."""
    lines = []
    for spec in tools:
        props = spec["parameters"].get("properties", {})
        args = json.dumps({k: v.get("type", "any") for k, v in props.items()})
        lines.append(f"- {spec['name']}: {spec['description']} Arguments: {args}")
    return "\n".join(lines)


def with_tool_instructions(prompt: str, tools: list[ToolSpec]) -> str:
    """``prompt`` followed by the instructions to call ``tools`` with JSON."""
    return f"{prompt}\n\n{TOOL_USE_SYSTEM.format(tool_list=describe_tools(tools))}"


def parse_prompted_tool_calls(text: str) -> list[ToolCall]:
    """Tool calls in a ``{"tool": ..., "input": {...}}`` answer (or a list of them); [] if none."""
    stripped = _FENCE.sub("", text.strip())
    if not stripped.startswith(("{", "[")):
        return []
    try:
        data = json.loads(stripped)
    except ValueError:
        return []
    items = data if isinstance(data, list) else [data]
    calls: list[ToolCall] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("tool"), str):
            return []
        calls.append(new_tool_call(item["tool"], item.get("input", {})))
    return calls


def to_prompted_messages(messages: list[Message], tools: list[ToolSpec]) -> list[Message]:
    """History in plain role/content form: instructions in the first system message, tool calls
    as JSON text, results as user messages."""
    out: list[Message] = []
    for m in messages:
        if m["role"] == "tool":
            out.append({"role": "user", "content": f"Tool result ({m.get('name', 'tool')}): {m['content']}"})
        elif m.get("tool_calls"):
            calls = [{"tool": c["name"], "input": c["arguments"]} for c in m["tool_calls"]]
            payload = json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False)
            out.append({"role": "assistant", "content": (m["content"] + "\n" + payload).strip()})
        else:
            out.append({"role": m["role"], "content": m["content"]})
    if out and out[0]["role"] == "system":
        out[0] = {"role": "system", "content": with_tool_instructions(out[0]["content"], tools)}
    else:
        out.insert(0, {"role": "system", "content": TOOL_USE_SYSTEM.format(tool_list=describe_tools(tools))})
    return out


def _as_tool_calls(completion: Completion) -> Completion:
    calls = parse_prompted_tool_calls(completion.text)
    return dataclasses.replace(completion, tool_calls=calls, text="") if calls else completion


class PromptedTools(Provider):
    """``inner`` with tool calls through the prompted-JSON protocol; it looks native to callers."""

    supports_native_tools: ClassVar[bool] = True

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.default_model = inner.default_model

    async def complete(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> Completion:
        if not tools:
            return await self.inner.complete(messages, None, params)
        return _as_tool_calls(await self.inner.complete(to_prompted_messages(messages, tools), None, params))

    async def stream(
        self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams
    ) -> AsyncIterator[StreamEvent]:
        if not tools:
            async for event in self.inner.stream(messages, None, params):
                yield event
            return
        # A tool call arrives as JSON text: hold back an answer that starts like JSON until it
        # is complete, so no protocol text reaches the user.
        hold = True
        held: list[str] = []
        async for event in self.inner.stream(to_prompted_messages(messages, tools), None, params):
            if isinstance(event, Completion):
                completion = _as_tool_calls(event)
                if held and not completion.tool_calls:
                    yield "".join(held)
                yield completion
                return
            if not hold:
                yield event
                continue
            held.append(event)
            head = "".join(held).lstrip()
            if head and not head.startswith(("{", "[", "`")):
                hold = False
                yield "".join(held)
                held.clear()

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __repr__(self) -> str:
        return f"<PromptedTools {self.inner!r}>"
