"""The chat panel's old home, kept as a public import path: ``ChatPanel`` lives in ``aiforge.jupyter.panel``.

The reference page (``aiforge/modules/chat/widget.py``) names this module; it only re-exports the panel and the
built-in tools it offers by default.
"""

from __future__ import annotations

from aiforge.jupyter.panel import (
    ENTER_TO_SEND_JS,
    ChatPanel,
    builtin_tools,
    calculator,
    current_time,
    research,
    unit_converter,
)

__all__ = ["ENTER_TO_SEND_JS", "ChatPanel", "builtin_tools", "calculator", "current_time", "research", "unit_converter"]
