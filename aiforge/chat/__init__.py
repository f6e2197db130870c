"""The chat agent: ``ChatAgent`` (``agent``), its LangGraph loop (``graph``), ``ChatResponse`` (``response``).

Around them: memory, prompts, sessions, structured turns, tool running and record/replay. Running many items
is ``aiforge.batch``'s; ``ChatAgent`` uses it, it does not inherit it.
"""

from aiforge.chat.agent import ChatAgent
from aiforge.chat.response import ChatResponse, ToolCallRecord

__all__ = ["ChatAgent", "ChatResponse", "ToolCallRecord"]
