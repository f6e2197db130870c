"""The reference page's home of the prompt templates; they live in ``aiforge.chat.prompts``."""

from aiforge.chat.prompts import (
    DEFAULT_SYSTEM_PROMPT,
    SUMMARIZE_MEMORY_PROMPT,
    SUMMARY_PREFIX,
    TOOL_LIMIT_MESSAGE,
    TOOL_LIMIT_RESULT,
    TOOL_USE_SYSTEM,
)

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "SUMMARIZE_MEMORY_PROMPT",
    "SUMMARY_PREFIX",
    "TOOL_LIMIT_MESSAGE",
    "TOOL_LIMIT_RESULT",
    "TOOL_USE_SYSTEM",
]
