"""The agent a DataFrame or semantic operation runs with: the one the caller passed, or one built from settings.

``df.aiforge.map``, ``embed``, ``agg``, ``join``, ``topk``, ``dedup`` and the rest take ``agent=`` or the settings
to build one with (``provider="openai", model=...``), never both: settings beside an agent would be ignored
silently, so they are a UsageError. The agent built has ``memory="none"``: each row (or chunk, or pair) is its
own conversation. A keyword that is neither a setting nor an agent's parameter is a UsageError with a
did-you-mean among the options and the settings (``checkpiont=`` -> ``checkpoint=``, ``modle=`` -> ``MODEL=``).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from aiforge.batch.options import OPERATION_OPTIONS
from aiforge.core.settings import check_overrides
from aiforge.core.types import UsageError

if TYPE_CHECKING:
    from aiforge.chat.agent import ChatAgent


def operation_agent(agent: ChatAgent | None, settings: dict[str, Any], cascade: Any = None) -> ChatAgent:
    """``agent``, or a ``ChatAgent(memory="none", **settings)`` when it is None; settings with an agent fail. With
    ``cascade=`` (an ``aiforge.Cascade``) and neither an agent nor settings, the cascade's strong agent (``then``)
    runs the batch: none is built only to be passed over.

    >>> operation_agent(None, {"provider": "scripted"}).memory_mode
    'none'
    """
    from aiforge.chat.agent import ChatAgent

    # A name that is neither a setting nor the agent's parameter: one line, with the option or setting meant.
    check_overrides(settings, inspect.signature(ChatAgent.__init__).parameters, options=OPERATION_OPTIONS)
    strong = getattr(cascade, "then", None)
    if agent is None and not settings and isinstance(strong, ChatAgent):
        return strong
    if agent is None:
        return ChatAgent(memory="none", **settings)
    if settings:
        raise UsageError(
            f"Settings ({', '.join(settings)}) configure the agent built when agent=None; "
            "set them on the agent you pass instead."
        )
    return agent
