"""The chat module's public path (the reference page's): ``ChatAgent`` and its response types.

The code lives in ``aiforge.chat``; this package and its modules ``module``, ``agent``, ``prompts``, ``schemas``
and ``widget`` (the reference page's file structure) only re-export it.
"""

from aiforge.chat import ChatAgent, ChatResponse, ToolCallRecord

__all__ = ["ChatAgent", "ChatResponse", "ToolCallRecord"]
