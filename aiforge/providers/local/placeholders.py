"""Worked examples for the reply protocol's instructions, and the checks that a reply did not copy them.

SmolLM2-135M copies what its instructions show: told ``{"answer": "<your answer>"}`` and
``{"order_id": <text>}`` it answered ``<your answer>`` and called the tool with ``{{order_id}}`` in 6
of 6 tries (issue 22). So the instructions show a call with real values (the argument's own
example, "like A-1001", which the tool's description gives for an argument without one of its own, or
one by its type) instead of placeholders, and every reply is checked:
a string that is a placeholder (``<...>``, ``{{...}}``, ``...``) or an example value the user never
wrote is copied text, not output. ``PlaceholderGuard`` holds back streamed answer text while it
could still turn into one, so a copy never reaches the screen either.
"""

from __future__ import annotations

import re
from typing import Any

from aiforge.core.types import Message, ToolSpec

EXAMPLE_ANSWER = "The Pacific is the largest ocean on Earth."
"""The worked example of a direct answer: a fact no tool is needed for, unlike anything a tool returns."""

_BY_TYPE: dict[str, Any] = {
    "string": "example",
    "integer": 3,
    "number": 2.5,
    "boolean": True,
    "array": [],
    "object": {},
}
# "like A-1001", "e.g. "km"", "such as "UTC"": the first example the argument's description gives.
_QUOTED_EXAMPLE = re.compile(r"(?:e\.g\.|for example|such as|like)[:,]?\s*[\"“']([^\"”']+)[\"”']", re.IGNORECASE)
_BARE_EXAMPLE = re.compile(r"(?:e\.g\.|for example|such as|like)[:,]?\s*([\w@./:+-]*\w)", re.IGNORECASE)

_ANGLE = re.compile(r"<[^<>\n]{1,40}>")
_KNOWN_ANGLE = re.compile(
    r"<\s*(?:your[\w ]*|text|number|integer|value|true or false|answer|tool[\w ]*|arguments?|[a-z]+_[a-z_]+)\s*>",
    re.IGNORECASE,
)
_DOUBLE_BRACES = re.compile(r"\{\{[^{}]*\}\}")
_ONLY_DOTS = re.compile(r"[\s\[\]{}()]*[.…]+[\s.…\[\]{}()]*")  # "...", "[...]", "{...}" and nothing else


def example_value(spec: Any) -> tuple[Any, bool]:
    """A real value for an argument of JSON schema ``spec``, and whether a reply repeating it copied it.

    The schema's own example, default or first allowed value comes first (a reply may rightly
    repeat those), then the first example the description gives ("like A-1001"), then one by type.
    """
    if not isinstance(spec, dict):
        return _BY_TYPE["string"], True
    if isinstance(spec.get("examples"), list) and spec["examples"]:
        return spec["examples"][0], True
    if isinstance(spec.get("enum"), list) and spec["enum"]:
        return spec["enum"][0], False
    for key in ("const", "default"):
        if spec.get(key) is not None:
            return spec[key], False
    kind = spec.get("type")
    kind = next((k for k in kind if k != "null"), "string") if isinstance(kind, list) else kind or "string"
    described = str(spec.get("description") or "")
    found = _QUOTED_EXAMPLE.search(described) or _BARE_EXAMPLE.search(described)
    if found:
        text = found.group(1).strip()
        if kind == "string":
            return text, True
        try:
            number = float(text)
        except ValueError:
            pass
        else:
            return (int(number) if kind == "integer" else number), True
    return _BY_TYPE.get(kind, _BY_TYPE["string"]), True


def argument_spec(tool: ToolSpec, name: str) -> Any:
    """The schema of ``tool``'s argument ``name``; without a description of its own, the tool's
    sentence about it is its description ("... sku: e.g. A-1001" of a one-line docstring)."""
    spec = (tool.get("parameters") or {}).get("properties", {}).get(name)
    if not isinstance(spec, dict) or spec.get("description"):
        return spec
    note = re.search(rf"(?<![\w-]){re.escape(name)}\b[^\n;]{{0,120}}", tool.get("description") or "")
    return {**spec, "description": note.group(0)} if note else spec


def example_arguments(tool: ToolSpec) -> dict[str, Any]:
    """The arguments of the worked example call of ``tool``."""
    properties = (tool.get("parameters") or {}).get("properties", {})
    return {name: example_value(argument_spec(tool, name))[0] for name in properties}


def example_strings(tools: list[ToolSpec]) -> set[str]:
    """The example argument strings the instructions show: an argument repeating one copied it."""
    shown: set[str] = set()
    for tool in tools:
        for name in (tool.get("parameters") or {}).get("properties", {}):
            value, copyable = example_value(argument_spec(tool, name))
            if copyable and isinstance(value, str):
                shown.add(value)
    return shown


def is_placeholder(text: str) -> bool:
    """True when ``text`` is or holds a placeholder as instructions write one: ``<your answer>``, ``{{id}}``."""
    stripped = text.strip()
    if not stripped or _ONLY_DOTS.fullmatch(stripped):
        return bool(stripped)
    if _ANGLE.fullmatch(stripped) or _KNOWN_ANGLE.search(stripped) or _DOUBLE_BRACES.search(stripped):
        return True
    return False


def user_text(messages: list[Message]) -> str:
    """What the user wrote in the conversation, lower-cased: an example value found here is the user's own."""
    return "\n".join((m.get("content") or "") for m in messages if m["role"] in ("user", "system")).lower()


def copied_value(value: Any, examples: set[str], said: str) -> str | None:
    """The first string in ``value`` (nested) that was copied from the instructions, or None."""
    if isinstance(value, str):
        if is_placeholder(value):
            return value
        key = value.strip()
        # also a piece of an example: given "(3 + 4) * 2" the model wrote "(3 + 4)"
        if len(key) >= 3 and key.lower() not in said and any(key in example for example in examples):
            return value
        return None
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in items:
        if (copied := copied_value(item, examples, said)) is not None:
            return copied
    return None


_NO_PLACEHOLDER = r'[^<>{}"\\\n\r\t]'


def forbid_placeholders(schema: Any) -> Any:
    """``schema`` whose free strings cannot hold ``<``, ``>``, ``{`` or ``}``: the grammar of a retry."""
    if isinstance(schema, list):
        return [forbid_placeholders(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: forbid_placeholders(value) for key, value in schema.items()}
    if out.get("type") == "string" and not {"enum", "const", "pattern", "format"} & out.keys():
        # llama.cpp's grammar ignores maxLength beside a pattern: the pattern carries the bounds.
        # A pattern's characters are written raw inside the JSON string: no quote, backslash or newline.
        low, high = out.pop("minLength", 0), out.pop("maxLength", None)
        bounds = f"{{{low},{'' if high is None else high}}}" if low or high is not None else "*"
        out["pattern"] = f"^{_NO_PLACEHOLDER}{bounds}$"
    return out


class PlaceholderGuard:
    """Fed an answer's text as it streams; hands back the text that cannot turn into a placeholder.

    Held back: text from an unclosed ``<`` or ``{`` on, and the whole answer while it is the start
    of an example the instructions show. Once a placeholder appears, ``cut`` is set, the answer is
    what was shown before it (``text``) and decoding should stop.
    """

    def __init__(self, examples: set[str] | None = None, enabled: bool = True) -> None:
        self.enabled = enabled
        self.examples = examples or set()
        self.text = ""
        self.cut = False
        self._shown = 0

    def feed(self, piece: str) -> str:
        """Take more answer text; return what may be shown now."""
        if not self.enabled:
            return piece
        if self.cut:
            return ""
        self.text += piece
        if _KNOWN_ANGLE.search(self.text) or _DOUBLE_BRACES.search(self.text):
            # What was shown ends before the placeholder: its opening character was held back.
            self.cut = True
            self.text = self.text[: self._shown]
            return ""
        return self._show(self._safe_end())

    def finish(self) -> str:
        """The held text once the answer is complete, unless it is a copy (then ``cut`` is set)."""
        if not self.enabled or self.cut:
            return ""
        stripped = self.text.strip()
        if is_placeholder(stripped) or stripped in self.examples:
            self.cut = True
            self.text = self.text[: self._shown]
            return ""
        return self._show(len(self.text))

    @property
    def copied(self) -> bool:
        """True when the answer was a copy with nothing of its own shown before it: decode it again."""
        return self.cut and not self.text[: self._shown].strip()

    def _safe_end(self) -> int:
        stripped = self.text.lstrip()
        if not stripped or _ONLY_DOTS.fullmatch(stripped) or any(e.startswith(stripped) for e in self.examples):
            return 0
        end = len(self.text)
        for opener, closer in (("<", ">"), ("{", "}")):
            at = self.text.find(opener, self.text.rfind(closer) + 1)  # the first opener left unclosed
            if at >= 0 and len(self.text) - at <= 40:
                end = min(end, at)
        return end

    def _show(self, upto: int) -> str:
        if upto <= self._shown:
            return ""
        piece, self._shown = self.text[self._shown : upto], upto
        return piece
