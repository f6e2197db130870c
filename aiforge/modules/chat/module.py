"""The reference page's home of ``ChatAgent``; it lives in ``aiforge.chat.agent``."""

from aiforge.chat.agent import ChatAgent

__all__ = ["ChatAgent"]
