"""Reading a reply of the constrained-JSON protocol (``protocol.py``) as it streams and once it is whole.

``AnswerStream`` streams only the answer text out of the growing JSON (``JsonAnswerStream`` the answer's
JSON), ``parse_reply`` turns a reply, complete or cut off, into text or a ``ToolCall``, and ``reply_problem``
says when a reply must be decoded again (a copied placeholder, a call already answered).
"""

from __future__ import annotations

import json
import re

from aiforge.core.types import Message, ToolCall, new_tool_call
from aiforge.providers.local.placeholders import copied_value

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
