"""``aiforge.modules.chat``: the chat module, ``ChatAgent`` and its response types (``ChatResponse``,
``ToolCallRecord``). ``from aiforge import ChatAgent`` is the same class; this path and its modules ``module``,
``agent``, ``prompts``, ``schemas`` and ``widget`` re-export ``aiforge.chat``.
"""

from aiforge.chat import ChatAgent, ChatResponse, ToolCallRecord

__all__ = ["ChatAgent", "ChatResponse", "ToolCallRecord"]
