"""Tool calls whose values come from the conversation, and answers that are not tool-call text.

With a user's ``stock_level(sku)`` whose description's example is ``A-1001``, SmolLM2-135M asked
about B-2002 to E-5005 called the tool with ``A-1002``, ``A-1003`` or ``A-1005``, variants of the
example (12 of 20 calls), and answered a question with the protocol-like ``check_stock_level_c-3003``
(issue 30). So, with tools offered:

- an argument value that is a code (one token with a digit: ``D-4004``, ``12345``, ``INV-7/2``;
  not an expression such as ``100-7``) is grounded only when the user, the system prompt or a tool
  result wrote it (case-insensitive, as a whole token). A string argument whose own example is such
  a code is decoded as one of the codes the conversation holds (an ``enum`` in the grammar), so a
  variant of the example cannot be written; any other code the model writes that the conversation
  does not hold is never sent: the reply is decoded again with the codes the conversation holds,
  and with none, the model answers without the tool. Words (``Tokyo`` -> ``Asia/Tokyo``, ``pounds``
  -> ``lb``), numbers, booleans and values the schema enumerates are not checked.
- an answer that is tool-call text (a JSON object, ``name(...)``, or one token naming a tool or
  written in snake_case, ``check_stock_level_c-3003``) is held back while it streams and never
  returned: the reply is decoded again as a call of the tool it names, or else as an answer alone.
"""

from __future__ import annotations

import json
import re
from typing import Any

from aiforge.core.types import Message, ToolCall, ToolSpec
from aiforge.providers.local.placeholders import argument_spec, example_value

_CODE = re.compile(r"[^\W_](?:[\w\-./#:@]*[^\W_])?")
_EXPRESSION = re.compile(r"[\d.]+(?:[-+*/^%x][\d.]+)+")  # "100-7", "7/2", "2024-01-05": not codes
_CALL = re.compile(r"[A-Za-z_][\w.]*\(.*\)\s*;?", re.DOTALL)
_CALL_START = re.compile(r"[A-Za-z_][\w.]*\(")
_SNAKE = re.compile(r"[^\W_]_[^\W_]")
_NOT_CHECKED = frozenset({"enum", "const"})
MAX_CHOICES = 64
"""Most codes offered as a string argument's values: the latest ones of a long conversation."""


def is_code(value: str) -> bool:
    """True for a code-like value: one token holding a digit (``A-1001``, ``12345``), not arithmetic."""
    text = value.strip()
    return bool(_CODE.fullmatch(text)) and any(c.isdigit() for c in text) and not _EXPRESSION.fullmatch(text)


def grounding_text(messages: list[Message]) -> str:
    """What the user, the system prompt and the tools wrote: where an argument's code must come from.

    The model's own words (its answers and earlier calls) are not evidence: a code it invented once
    would otherwise ground itself.
    """
    return "\n".join(m.get("content") or "" for m in messages if m["role"] in ("user", "system", "tool"))


def codes_in(text: str) -> list[str]:
    """The codes ``text`` holds, latest first, each once (case-insensitively), at most ``MAX_CHOICES``."""
    seen: dict[str, str] = {}
    for token in reversed(_CODE.findall(text)):
        if is_code(token) and token.lower() not in seen:
            seen[token.lower()] = token
    return list(seen.values())[:MAX_CHOICES]


def is_grounded(value: str, text: str) -> bool:
    """True when ``value`` appears in ``text`` as a whole token, ignoring case."""
    pattern = rf"(?<![^\W_]){re.escape(value.strip())}(?![^\W_])"
    return re.search(pattern, text, re.IGNORECASE) is not None


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return [s for item in items for s in _strings(item)]


def _properties(tool: ToolSpec) -> dict[str, Any]:
    properties = (tool.get("parameters") or {}).get("properties")
    return properties if isinstance(properties, dict) else {}


def ungrounded_arguments(call: ToolCall, tools: list[ToolSpec], text: str) -> list[str]:
    """The arguments of ``call`` holding a code that ``text`` (``grounding_text``) does not."""
    spec = next((t for t in tools if t["name"] == call["name"]), None)
    properties = _properties(spec) if spec is not None else {}
    arguments = call.get("arguments")
    if not isinstance(arguments, dict):
        return []
    out = []
    for name, value in arguments.items():
        schema = properties.get(name)
        if isinstance(schema, dict) and _NOT_CHECKED & schema.keys():
            continue
        if any(is_code(s) and not is_grounded(s, text) for s in _strings(value)):
            out.append(name)
    return out


def code_arguments(tool: ToolSpec) -> list[str]:
    """The string arguments of ``tool`` whose example (schema or description, "e.g. A-1001") is a code."""
    out = []
    for name, schema in _properties(tool).items():
        if (
            not isinstance(schema, dict)
            or schema.get("type") != "string"
            or {"enum", "const", "pattern"} & schema.keys()
        ):
            continue
        example, _ = example_value(argument_spec(tool, name))
        if isinstance(example, str) and is_code(example):
            out.append(name)
    return out


def argument_choices(
    tools: list[ToolSpec], text: str, extra: dict[str, list[str]] | None = None
) -> dict[str, dict[str, list[str]]]:
    """Per tool, the string arguments to decode as one of the codes ``text`` holds, with those codes.

    Those are the arguments whose example is a code, and ``extra``'s (tool name -> arguments that
    held an ungrounded code). Empty when ``text`` holds no code: then nothing can be chosen from.
    """
    codes = codes_in(text)
    if not codes:
        return {}
    out: dict[str, dict[str, list[str]]] = {}
    for tool in tools:
        properties = _properties(tool)
        names = [*code_arguments(tool), *(extra or {}).get(tool["name"], [])]
        restricted = {
            name: codes
            for name in dict.fromkeys(names)
            if isinstance(properties.get(name), dict) and properties[name].get("type") == "string"
        }
        if restricted:
            out[tool["name"]] = restricted
    return out


def is_tool_call_text(text: str, tools: list[ToolSpec]) -> bool:
    """True when an answer is tool-call text, not words for the user: JSON, ``name(...)``, or one token
    naming a tool or written in snake_case (``check_stock_level_c-3003``)."""
    stripped = text.strip()
    if not stripped:
        return False
    if stripped[0] in "{[":
        if re.match(r'\{\s*"(?:tool|name|arguments|answer|function)"', stripped):
            return True
        try:
            return isinstance(json.loads(stripped), dict | list)
        except ValueError:
            return False
    if _CALL.fullmatch(stripped):
        return True
    if any(c.isspace() for c in stripped):
        return False
    lowered = stripped.lower()
    return _SNAKE.search(stripped) is not None or any(t["name"].lower() in lowered for t in tools)


def meant_tool(text: str, tools: list[ToolSpec]) -> ToolSpec | None:
    """The tool tool-call text meant: the one it names (the longest name, so ``stock_level`` beats
    ``stock``), else the only one offered."""
    lowered = text.lower()
    named = [t for t in tools if t["name"].lower() in lowered]
    if named:
        return max(named, key=lambda t: len(t["name"]))
    return tools[0] if len(tools) == 1 else None


def trailing_results(messages: list[Message]) -> str:
    """The tool results the conversation ends with, as an answer: the result alone, or one line per tool."""
    results: list[Message] = []
    for message in reversed(messages):
        if message["role"] != "tool":
            break
        results.insert(0, message)
    if len(results) == 1:
        return (results[0].get("content") or "").strip()
    return "\n".join(f"{m.get('name') or 'tool'}: {(m.get('content') or '').strip()}" for m in results)


class ToolTextGuard:
    """Fed an answer's text as it streams; holds it back while it could still be tool-call text.

    Held: the first word, and the whole answer when it opens with ``{``, ``[`` or ``name(``. Once
    the answer is whole, ``finish`` releases it unless it is tool-call text (then ``cut`` is set),
    or, given the conversation as ``codes_from`` (before any tool result), one of its codes alone:
    asked "Check the stock level for C-3003.", the answer ``C-3003`` was a call's argument.
    """

    def __init__(self, tools: list[ToolSpec], enabled: bool = True, codes_from: str = "") -> None:
        self.tools = tools
        self.enabled = enabled
        self.codes_from = codes_from
        self.text = ""
        self.cut = False
        self._released = False

    def feed(self, piece: str) -> str:
        """Take more answer text; return what may be shown now."""
        if not self.enabled or self._released:
            return piece
        self.text += piece
        if self._may_be_tool_text(self.text.lstrip()):
            return ""
        self._released = True
        return self.text

    def finish(self) -> str:
        """The held text once the answer is complete, unless it is tool-call text."""
        if not self.enabled or self._released:
            return ""
        echo = bool(self.codes_from) and is_code(self.text) and is_grounded(self.text, self.codes_from)
        if echo or is_tool_call_text(self.text, self.tools):
            self.cut = True
            return ""
        return self.text

    @staticmethod
    def _may_be_tool_text(text: str) -> bool:
        return not text or text[0] in "{[" or _CALL_START.match(text) is not None or not any(c.isspace() for c in text)
