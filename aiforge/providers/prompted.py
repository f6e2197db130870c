"""Tools for a provider without native tool calling, through the prompted-JSON protocol.

``PromptedTools(inner)`` is a provider that looks native to its caller: it appends tool-use
instructions to the system prompt, sends the history in plain role/content form, parses a
``{"tool": ..., "input": {...}}`` reply back into tool calls, and keeps that JSON out of the
stream. With ``params.output`` set (tools or not) it asks for the structured answer the same way,
with ``OutputSpec.instructions()`` in the system prompt, and strips a ```json fence from the answer.
Without tools or output it passes every call straight through.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import AsyncIterator
from typing import ClassVar

from aiforge.core.aio import closing_iterator
from aiforge.core.output import OutputSpec
from aiforge.core.types import CallParams, Completion, Message, ToolCall, ToolSpec, new_tool_call
from aiforge.providers.base import Provider, StreamEvent, StructuredOutputMode

TOOL_USE_SYSTEM = """\
You can use these tools:
{tool_list}

To use a tool, reply with ONLY a JSON object and nothing else:
{{"tool": "<tool name>", "input": {{<arguments>}}}}
You will then receive the tool's result and can call another tool or answer.
When you do not need a tool, answer the user directly in plain text, without JSON."""

_PLAIN_ANSWER = "answer the user directly in plain text, without JSON."
_STRUCTURED_ANSWER = "give your final answer as the JSON described below."
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)
_FENCE_OPENING = re.compile(r"^```(?:json)?\s*", re.IGNORECASE)
_HELD_TAIL = re.compile(r"[\s`]*$")  # could still be the closing fence


def describe_tools(tools: list[ToolSpec]) -> str:
    """One line per tool for TOOL_USE_SYSTEM: name, description, argument schema."""
    lines = []
    for spec in tools:
        props = spec["parameters"].get("properties", {})
        args = json.dumps({k: v.get("type", "any") for k, v in props.items()})
        lines.append(f"- {spec['name']}: {spec['description']} Arguments: {args}")
    return "\n".join(lines)


def worked_examples(tools: list[ToolSpec]) -> str:
    """One example call per tool with real values: small models copy ``<tool name>`` and the like as is."""
    # Imported here: the local package is needed only once a prompted agent has tools.
    from aiforge.providers.local.placeholders import example_arguments

    return "\n".join(
        f"For example: {json.dumps({'tool': tool['name'], 'input': example_arguments(tool)}, ensure_ascii=False)}"
        for tool in tools
    )


def tool_use_system(tools: list[ToolSpec]) -> str:
    """TOOL_USE_SYSTEM for ``tools``, with a worked example of each call."""
    return f"{TOOL_USE_SYSTEM.format(tool_list=describe_tools(tools))}\n{worked_examples(tools)}"


def with_tool_instructions(prompt: str, tools: list[ToolSpec]) -> str:
    """``prompt`` followed by the instructions to call ``tools`` with JSON."""
    return f"{prompt}\n\n{tool_use_system(tools)}"


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


def prompt_instructions(tools: list[ToolSpec] | None, output: OutputSpec | None) -> str:
    """What the system prompt gains: the tool protocol and/or the structured answer's schema."""
    parts = []
    if tools:
        text = tool_use_system(tools)
        parts.append(text.replace(_PLAIN_ANSWER, _STRUCTURED_ANSWER) if output is not None else text)
    if output is not None:
        parts.append(output.instructions())
    return "\n\n".join(parts)


def to_prompted_messages(
    messages: list[Message], tools: list[ToolSpec] | None, output: OutputSpec | None = None
) -> list[Message]:
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
    instructions = prompt_instructions(tools, output)
    if out and out[0]["role"] == "system":
        out[0] = {"role": "system", "content": f"{out[0]['content']}\n\n{instructions}"}
    else:
        out.insert(0, {"role": "system", "content": instructions})
    return out


def unfenced(text: str) -> str:
    """``text`` without surrounding whitespace and the ```json fence a model puts around JSON."""
    return _FENCE.sub("", text.strip())


class _FenceStripper:
    """Streams a structured answer as it arrives, without the ```json fence around it.

    What streams is always a prefix of ``unfenced(full text)``: the opening fence is held until
    its line ends, and trailing backticks and whitespace until more text follows them.
    """

    def __init__(self) -> None:
        self.raw = ""
        self.sent = ""

    def feed(self, delta: str) -> str:
        self.raw += delta
        head = self.raw.lstrip()
        if head.startswith("`") and "\n" not in head:
            return ""
        body = _FENCE_OPENING.sub("", head)
        body = _HELD_TAIL.sub("", body, count=1)
        return self._send(body)

    def finish(self, text: str) -> str:
        return self._send(text)

    def _send(self, text: str) -> str:
        new = text[len(self.sent) :] if text.startswith(self.sent) else ""
        self.sent += new
        return new


def _final(completion: Completion, tools: list[ToolSpec] | None, output: OutputSpec | None) -> Completion:
    if tools:
        completion = _as_tool_calls(completion)
    if output is not None and not completion.tool_calls:
        completion = dataclasses.replace(completion, text=unfenced(completion.text))
    return completion


def _as_tool_calls(completion: Completion) -> Completion:
    calls = parse_prompted_tool_calls(completion.text)
    return dataclasses.replace(completion, tool_calls=calls, text="") if calls else completion


class PromptedTools(Provider):
    """``inner`` with tool calls through the prompted-JSON protocol; it looks native to callers."""

    supports_native_tools = True
    structured_output: ClassVar[StructuredOutputMode] = "prompted"

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.default_model = inner.default_model
        self.reads_files, self.file_rules = inner.reads_files, inner.file_rules  # its files go through inner's wire

    async def complete(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> Completion:
        if not tools and params.output is None:
            return await self.inner.complete(messages, None, params)
        prompted = to_prompted_messages(messages, tools, params.output)
        return _final(await self.inner.complete(prompted, None, params), tools, params.output)

    async def stream(
        self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams
    ) -> AsyncIterator[StreamEvent]:
        output = params.output
        if not tools and output is None:
            async with closing_iterator(self.inner.stream(messages, None, params)) as events:
                async for event in events:
                    yield event
            return
        prompted = self.inner.stream(to_prompted_messages(messages, tools, output), None, params)
        # Closed here, not by the garbage collector: a return on the Completion leaves it suspended.
        async with closing_iterator(prompted) as events:
            if not tools:
                stripper = _FenceStripper()
                async for event in events:
                    if isinstance(event, Completion):
                        completion = _final(event, None, output)
                        if rest := stripper.finish(completion.text):
                            yield rest
                        yield completion
                        return
                    if piece := stripper.feed(event):
                        yield piece
                return
            # A tool call arrives as JSON text: hold back an answer that starts like JSON until it
            # is complete, so no protocol text reaches the user. A structured answer is held whole:
            # until it ends, it cannot be told from a tool call.
            hold = True
            held: list[str] = []
            async for event in events:
                if isinstance(event, Completion):
                    completion = _final(event, tools, output)
                    shown = "".join(held) if output is None else completion.text
                    if held and shown and not completion.tool_calls:
                        yield shown
                    yield completion
                    return
                if not hold:
                    yield event
                    continue
                held.append(event)
                head = "".join(held).lstrip()
                if output is None and head and not head.startswith(("{", "[", "`")):
                    hold = False
                    yield "".join(held)
                    held.clear()

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __repr__(self) -> str:
        return f"<PromptedTools {self.inner!r}>"
