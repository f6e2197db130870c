"""The chat module: ``ChatAgent`` and its response types."""

from aiforge.modules.chat.module import ChatAgent
from aiforge.modules.chat.schemas import ChatResponse, ToolCallRecord

__all__ = ["ChatAgent", "ChatResponse", "ToolCallRecord"]
