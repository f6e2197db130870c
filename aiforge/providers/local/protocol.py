"""Tools and structured answers for a model whose chat template knows neither: the constrained-JSON protocol.

The model must reply with JSON matching ``{"tool": name, "arguments": {...}}`` or
``{"answer": text}`` (``reply_schema``, enforced by llama.cpp's constrained decoding); with an
``output=`` type the answer is an object of its schema instead of text (``structured.py``).
The instructions show each call with real values, never placeholders (``placeholders.py``).
``chat_messages`` writes the conversation in the roles SmolLM2 knows. What the model sends back is
read by ``reply.py``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from aiforge.core.output import OutputSpec
from aiforge.core.types import Message, ToolCall, ToolSpec
from aiforge.providers.local.placeholders import EXAMPLE_ANSWER, example_arguments
from aiforge.providers.local.structured import (
    answer_placeholder,
    answer_schema,
    field_notes,
    output_instructions,
)


def _arguments_schema(tool: ToolSpec, choices: dict[str, list[str]] | None = None) -> dict[str, Any]:
    schema = copy.deepcopy(tool.get("parameters") or {}) or {"type": "object", "properties": {}}
    if schema.get("type") == "object":
        # Without this a small model invents extra arguments the tool does not take.
        schema.setdefault("additionalProperties", False)
    for name, values in (choices or {}).items():
        schema["properties"][name]["enum"] = values  # only what the conversation holds (grounding.py)
    return schema


ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}
"""The reply schema when the model must answer in text (it repeated a call it already has the result of)."""


def reply_schema(
    tools: list[ToolSpec],
    output: OutputSpec | None = None,
    choices: dict[str, dict[str, list[str]]] | None = None,
    answer: bool = True,
) -> dict[str, Any]:
    """The JSON schema a reply must match: one branch per tool call, one for the answer (text or ``output``).

    ``choices``: per tool, the string arguments whose value must be one of the given values;
    ``answer=False`` leaves the answer out: the reply must be a call.
    """
    branches: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {
                "tool": {"const": tool["name"]},
                "arguments": _arguments_schema(tool, (choices or {}).get(tool["name"])),
            },
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }
        for tool in tools
    ]
    if not answer and branches:
        return {"anyOf": branches}
    if output is None:
        return {"anyOf": [*branches, ANSWER_SCHEMA]}
    structured = answer_schema(output)
    defs = structured.pop("$defs", None)
    schema: dict[str, Any] = {"anyOf": [*branches, structured]} if branches else structured
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
