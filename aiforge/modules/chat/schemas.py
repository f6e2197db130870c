"""The reference page's home of the response types; they live in ``aiforge.chat.response``."""

from aiforge.chat.response import ChatResponse, ToolCallRecord

__all__ = ["ChatResponse", "ToolCallRecord"]
