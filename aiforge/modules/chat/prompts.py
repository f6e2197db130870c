"""Prompt templates of the chat module."""

from __future__ import annotations

import json
from typing import Any

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful AI assistant. Answer questions clearly and concisely. "
    "If you don't know something, say so honestly."
)

TOOL_USE_SYSTEM = """\
You can use these tools:
{tool_list}

To use a tool, reply with ONLY a JSON object and nothing else:
{{"tool": "<tool name>", "input": {{<arguments>}}}}
You will then receive the tool's result and can call another tool or answer.
When you do not need a tool, answer the user directly in plain text, without JSON."""

SUMMARIZE_MEMORY_PROMPT = """\
Summarize the conversation below for your own memory, in at most {max_words} words. Keep every \
fact, name, number, decision and open question the user may refer to later; drop pleasantries.
{previous}
Conversation:
{transcript}

Summary:"""

SUMMARY_PREFIX = "Summary of the earlier conversation:\n"

TOOL_LIMIT_RESULT = (
    "Not executed: the limit of {limit} tool-call rounds for this turn was reached."
)
TOOL_LIMIT_MESSAGE = (
    "I stopped after {limit} rounds of tool calls (max_tool_iterations={limit}) before reaching "
    "a final answer."
)


def describe_tools(tools: list[dict[str, Any]]) -> str:
    """One line per tool for TOOL_USE_SYSTEM: name, description, argument schema."""
    lines = []
    for spec in tools:
        props = spec["parameters"].get("properties", {})
        args = json.dumps({k: v.get("type", "any") for k, v in props.items()})
        lines.append(f"- {spec['name']}: {spec['description']} Arguments: {args}")
    return "\n".join(lines)
