"""Prompt templates of the chat module.

``TOOL_USE_SYSTEM`` (the prompted-JSON tool instructions) lives with the protocol it explains,
in ``aiforge.providers.prompted``.
"""

from __future__ import annotations

from aiforge.providers.prompted import TOOL_USE_SYSTEM

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "SUMMARIZE_MEMORY_PROMPT",
    "SUMMARY_PREFIX",
    "TOOL_LIMIT_MESSAGE",
    "TOOL_LIMIT_RESULT",
    "TOOL_USE_SYSTEM",
]

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful AI assistant. Answer questions clearly and concisely. "
    "If you don't know something, say so honestly."
)

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

