"""Tools and structured answers for a model whose chat template knows neither: the constrained-JSON protocol.

The model must reply with JSON matching ``{"tool": name, "arguments": {...}}`` or
``{"answer": text}`` (``reply_schema``, enforced by llama.cpp's constrained decoding); with an
``output=`` type the answer is an object of its schema instead of text (``structured.py``).
The instructions show each call with real values, never placeholders (``placeholders.py``).
``chat_messages`` writes the conversation in the roles SmolLM2 knows, ``AnswerStream`` streams
only the answer text out of the growing JSON (``JsonAnswerStream`` the answer's JSON), and
``parse_reply`` turns a reply, complete or cut off, into text or a ``ToolCall``.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from aiforge.core.output import OutputSpec
from aiforge.core.types import Message, ToolCall, ToolSpec, new_tool_call
from aiforge.providers.local.placeholders import EXAMPLE_ANSWER, copied_value, example_arguments
from aiforge.providers.local.structured import (
    answer_placeholder,
    answer_schema,
    field_notes,
    output_instructions,
)


def _arguments_schema(tool: ToolSpec) -> dict[str, Any]:
    schema = copy.deepcopy(tool.get("parameters") or {}) or {"type": "object", "properties": {}}
    if schema.get("type") == "object":
        # Without this a small model invents extra arguments the tool does not take.
        schema.setdefault("additionalProperties", False)
    return schema


ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}
"""The reply schema when the model must answer in text (it repeated a call it already has the result of)."""


def reply_schema(tools: list[ToolSpec], output: OutputSpec | None = None) -> dict[str, Any]:
    """The JSON schema a reply must match: one branch per tool call, one for the answer (text or ``output``)."""
    branches: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"tool": {"const": tool["name"]}, "arguments": _arguments_schema(tool)},
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }
        for tool in tools
    ]
    if output is None:
        return {"anyOf": [*branches, ANSWER_SCHEMA]}
    answer = answer_schema(output)
    defs = answer.pop("$defs", None)
    schema: dict[str, Any] = {"anyOf": [*branches, answer]} if branches else answer
    if defs:
        schema["$defs"] = defs
    return schema


def tool_instructions(tools: list[ToolSpec], output: OutputSpec | None = None) -> str:
    """How the model is told about the tools and the JSON it must reply with."""
    lines = ["You can use these tools:"]
    for tool in tools:
        lines.append(f"- {tool['name']}: {tool.get('description', '')}".rstrip())
        for arg, spec in (tool.get("parameters") or {}).get("properties", {}).items():
            if isinstance(spec, dict) and spec.get("description"):
                lines.append(f"    {arg}: {spec['description']}")
    lines.append("Reply with one JSON object and nothing else.")
    for tool in tools:
        # Real values, not placeholders: this small model copies whatever the example shows.
        call = {"tool": tool["name"], "arguments": example_arguments(tool)}
        lines.append(f"For example, to use {tool['name']}: {json.dumps(call, ensure_ascii=False)}")
    if output is None:
        lines.append(f"For example, to answer the user directly: {json.dumps({'answer': EXAMPLE_ANSWER})}")
    else:
        lines += [f"To answer the user directly: {answer_placeholder(output)}", *field_notes(output)]
    return "\n".join(lines)


def _call_json(call: ToolCall) -> str:
    return json.dumps({"tool": call["name"], "arguments": call.get("arguments") or {}}, ensure_ascii=False)


def _answer_json(content: str, output: OutputSpec | None) -> str:
    """An earlier answer as the model would have written it under the reply protocol."""
    answer: Any = content
    if output is not None:
        try:
            answer = json.loads(content)
        except ValueError:
            pass  # an answer from a turn without output=: it stays text
    return json.dumps({"answer": answer}, ensure_ascii=False)


def chat_messages(
    messages: list[Message], tools: list[ToolSpec] | None, output: OutputSpec | None = None
) -> list[dict[str, str]]:
    """The conversation in roles SmolLM2's template knows (system, user, assistant).

    Tool calls become the JSON the model would have written, tool results become user messages
    (the last ones asking for an answer), and with tools offered the instructions open the latest
    user message, where this small model follows them best. A structured answer without tools is
    asked for in the system message (measured on tests/data/reviews.csv: 6 of 10 sentiments right
    there, 4 of 10 before or after the user's text).
    """
    out: list[dict[str, str]] = []
    names_by_id: dict[str, str] = {}
    last_user = -1
    results_at = -1  # index of the user message collecting consecutive tool results
    for message in messages:
        role, content = message["role"], message.get("content") or ""
        if role == "tool":
            name = message.get("name") or names_by_id.get(message.get("tool_call_id", ""), "the tool")
            line = f"Result of {name}: {content}"
            if results_at == len(out) - 1 and results_at >= 0:
                out[results_at]["content"] += "\n" + line
            else:
                out.append({"role": "user", "content": line})
                results_at = len(out) - 1
            continue
        if role == "assistant" and message.get("tool_calls"):
            calls = message["tool_calls"]
            names_by_id.update((call["id"], call["name"]) for call in calls)
            content = "\n".join(_call_json(call) for call in calls)
        elif role == "assistant" and (tools or output is not None):
            content = _answer_json(content, output)
        elif role == "user":
            last_user = len(out)
        out.append({"role": role, "content": content})
    if results_at == len(out) - 1 >= 0:
        # Ending on a result, this small model otherwise often calls a tool again.
        out[-1]["content"] += "\nAnswer the question with this result."
    if tools:
        instructions = tool_instructions(tools, output)
        if last_user >= 0:
            out[last_user]["content"] = f"{instructions}\n\n{out[last_user]['content']}"
        else:
            out.insert(0, {"role": "system", "content": instructions})
    elif output is not None:
        instructions = output_instructions(output)
        if out and out[0]["role"] == "system":
            out[0]["content"] = f"{out[0]['content']}\n\n{instructions}"
        else:
            out.insert(0, {"role": "system", "content": instructions})
    return out


_ANSWER_OPENING = re.compile(r'\s*\{\s*"answer"\s*:\s*"')
_VALUE_OPENING = re.compile(r'\s*\{\s*"answer"\s*:\s*(?=\S)')
_TOOL_OPENING = re.compile(r'\s*\{\s*"tool"\s*:\s*"((?:[^"\\]|\\.)*)"')
_HIGH_SURROGATE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}$")


def _json_string_prefix(body: str) -> str:
    """The decoded text of a JSON string body that may still be growing (stops at its closing quote)."""
    cut, i = 0, 0
    while i < len(body):
        char = body[i]
        if char == '"':
            cut = i
            break
        if char == "\\":
            width = 6 if body[i + 1 : i + 2] == "u" else 2
            if i + width > len(body):
                break
            i += width
        else:
            i += 1
        cut = i
    piece = body[:cut]
    if _HIGH_SURROGATE.search(piece):  # wait for the low half of the pair
        piece = piece[:-6]
    text: str = json.loads(f'"{piece}"', strict=False)
    return text


class AnswerStream:
    """Follows a reply's raw JSON as it is decoded and yields the ``answer`` text, never the JSON."""

    _opening = _ANSWER_OPENING

    def __init__(self) -> None:
        self.raw = ""
        self.text = ""
        self._body_start: int | None = None

    @property
    def is_answer(self) -> bool:
        return self._body_start is not None

    def feed(self, delta: str) -> str:
        """Add decoded JSON; return the answer it completes (empty for a tool call)."""
        self.raw += delta
        if self._body_start is None:
            opening = self._opening.match(self.raw)
            if opening is None:
                return ""
            self._body_start = opening.end()
        return self._answer_piece()

    def _answer_piece(self) -> str:
        text = _json_string_prefix(self.raw[self._body_start :])
        new, self.text = text[len(self.text) :], text
        return new


class JsonAnswerStream(AnswerStream):
    """Follows a structured reply as it is decoded and yields the answer's own JSON text, never the wrapper."""

    _opening = _VALUE_OPENING

    def __init__(self) -> None:
        super().__init__()
        self._depth = 0
        self._in_string = False
        self._escaped = False
        self.complete = False

    def _answer_piece(self) -> str:
        start = scanned = (self._body_start or 0) + len(self.text)
        while scanned < len(self.raw) and not self.complete:
            self._track(self.raw[scanned])
            scanned += 1
        new = self.raw[start:scanned]
        self.text += new
        return new

    def _track(self, char: str) -> None:
        """Follow nesting and strings so the answer ends at its own closing brace, not the wrapper's."""
        if self._in_string:
            if self._escaped:
                self._escaped = False
            elif char == "\\":
                self._escaped = True
            elif char == '"':
                self._in_string = False
        elif char == '"':
            self._in_string = True
        elif char in "{[":
            self._depth += 1
        elif char in "}]":
            self._depth -= 1
            self.complete = self._depth == 0


def repeats_a_call(call: ToolCall, messages: list[Message]) -> bool:
    """True when ``call`` was already made, with the same arguments, since the last user message."""
    for message in reversed(messages):
        if message["role"] == "user":
            return False
        for earlier in message.get("tool_calls") or ():
            if earlier["name"] == call["name"] and earlier.get("arguments") == call["arguments"]:
                return True
    return False


def parse_reply(stream: AnswerStream) -> tuple[str, list[ToolCall]]:
    """The answer text or the tool call in a constrained reply, also when it was cut off."""
    try:
        data = json.loads(stream.raw)
    except ValueError:
        data = None
    if isinstance(data, dict) and "tool" in data:
        return "", [new_tool_call(str(data["tool"]), data.get("arguments"))]
    if isinstance(data, dict) and "answer" in data:
        answer = data["answer"]
        # a structured answer is the JSON text as decoded, so the streamed pieces add up to it
        return (answer if isinstance(answer, str) else stream.text), []
    if stream.is_answer:  # cut off by max_tokens inside the answer
        return stream.text, []
    opening = _TOOL_OPENING.match(stream.raw)
    if opening is not None:  # cut off inside a tool call: let the agent report it to the model
        name = json.loads(f'"{opening.group(1)}"')
        return "", [new_tool_call(name, stream.raw)]
    return "", []


def reply_problem(
    text: str,
    tool_calls: list[ToolCall],
    copied: bool,
    messages: list[Message],
    examples: set[str],
    said: str,
    structured: bool,
) -> str | None:
    """Why a constrained reply must be decoded again: "placeholder", "copy" (of an example value),
    "repeat" (a call already answered); None when it stands. ``copied``: the answer was a copy."""
    if tool_calls:
        arguments = tool_calls[0]["arguments"]
        if isinstance(arguments, dict | list) and copied_value(arguments, set(), said) is not None:
            return "placeholder"
        if isinstance(arguments, dict | list) and copied_value(arguments, examples, said) is not None:
            return "copy"
        # A small model tends to call again for a result it already has: make it answer.
        return "repeat" if repeats_a_call(tool_calls[0], messages) else None
    if copied:
        return "placeholder"
    if structured:
        try:
            answer = json.loads(text)
        except ValueError:
            return None  # cut off: validation above the provider reports it
        return "placeholder" if copied_value(answer, set(), said) is not None else None
    return None
