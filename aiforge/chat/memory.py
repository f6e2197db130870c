"""Conversation memory on units: trimming and summarising never split a tool exchange.

A unit is a user message, or an assistant message together with the results of all its tool
calls. Providers reject an orphan tool call or result, so memory only ever drops whole units,
and a kept history always starts with a user message.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiforge.batch.request.call import new_conversation_id
from aiforge.chat.prompts import SUMMARIZE_MEMORY_PROMPT, SUMMARY_PREFIX
from aiforge.core import otel
from aiforge.core.types import Message, TraceRecord

if TYPE_CHECKING:
    import pandas as pd

    from aiforge.batch.request.call import Turn

logger = logging.getLogger("aiforge.chat")

MEMORY_MODES = ("buffer", "summary", "none")
SUMMARY_MAX_WORDS = 500


def split_units(messages: list[Message]) -> list[list[Message]]:
    """Group messages into units; tool results join the assistant message that called them."""
    units: list[list[Message]] = []
    for message in messages:
        if message["role"] == "tool" and units and (
            units[-1][0]["role"] == "assistant" and units[-1][0].get("tool_calls")
        ):
            units[-1].append(message)
        else:
            units.append([message])
    return units


def _drop_leading_non_user(units: list[list[Message]]) -> list[list[Message]]:
    start = 0
    while start < len(units) and units[start][0]["role"] != "user":
        start += 1
    return units[start:]


def trim_to_units(messages: list[Message], limit: int) -> list[Message]:
    """The most recent whole units holding at most ``limit`` messages, starting at a user message.

    A single unit larger than ``limit`` (a tool call with many results) is dropped whole
    rather than cut.
    """
    if len(messages) <= limit and (not messages or messages[0]["role"] == "user"):
        return messages
    units = split_units(messages)
    kept: list[list[Message]] = []
    size = 0
    for unit in reversed(units):
        if size + len(unit) > limit:
            break
        kept.append(unit)
        size += len(unit)
    kept.reverse()
    return [m for unit in _drop_leading_non_user(kept) for m in unit]


def split_for_summary(messages: list[Message], keep: int) -> tuple[list[Message], list[Message]]:
    """(older messages to summarise, the most recent whole units of at most ``keep`` messages)."""
    recent = trim_to_units(messages, keep)
    return messages[: len(messages) - len(recent)], recent


def transcript(messages: list[Message]) -> str:
    """A plain-text rendering of messages for the summariser."""
    lines = []
    for m in messages:
        if m["role"] == "tool":
            lines.append(f"Tool result ({m.get('name', 'tool')}): {m['content']}")
        elif m.get("tool_calls"):
            calls = ", ".join(f"{c['name']}({c['arguments']})" for c in m["tool_calls"])
            lines.append(f"Assistant: {m['content']} [called {calls}]".replace(":  [", ": ["))
        else:
            lines.append(f"{m['role'].capitalize()}: {m['content']}")
    return "\n".join(lines)


def limit_words(text: str, max_words: int = SUMMARY_MAX_WORDS) -> str:
    words = text.split()
    return text.strip() if len(words) <= max_words else " ".join(words[:max_words]) + " …"


class TurnLock:
    """Serialises turns of one conversation across threads and event loops.

    asyncio.Lock belongs to one loop, but sync calls from different threads run on different
    loops; a thread lock polled without blocking keeps every loop responsive and is released
    on cancellation.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()

    async def __aenter__(self) -> None:
        delay = 0.0005
        while not self._lock.acquire(blocking=False):
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.02)

    async def __aexit__(self, *exc: object) -> None:
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()


@dataclass(slots=True)
class Conversation:
    """One conversation's state: committed history (system prompt excluded) and summary."""

    id: str = field(default_factory=new_conversation_id)
    history: list[Message] = field(default_factory=list)
    summary: str | None = None
    lock: TurnLock = field(default_factory=TurnLock)


async def apply_memory(
    conversation: Conversation, history: list[Message], *, mode: str, k: int, turn: Turn, trace: list[TraceRecord]
) -> list[Message]:
    """The history to keep after a turn: trimmed to ``k`` units (buffer), or older units summarised (summary).

    The summary call runs on the turn's provider, is costed on the turn and traced; if it fails the
    answer stands and the older messages are kept verbatim until a later turn summarises them.
    """
    if mode == "buffer":
        return trim_to_units(history, k)
    if len(history) <= 2 * k:
        return history
    older, recent = split_for_summary(history, k)
    if not older:
        return history
    try:
        conversation.summary = await _summarize(conversation.summary, older, turn, trace)
    except Exception as exc:  # noqa: BLE001 - the answer is already good; retry next turn
        logger.warning("summary of older messages failed (%s); keeping them verbatim for now", type(exc).__name__)
        return history
    return recent


async def _summarize(previous: str | None, older: list[Message], turn: Turn, trace: list[TraceRecord]) -> str:
    started = time.perf_counter()
    prompt = SUMMARIZE_MEMORY_PROMPT.format(
        max_words=SUMMARY_MAX_WORDS,
        previous=f"Summary so far:\n{previous}\n" if previous else "",
        transcript=transcript(older),
    )
    messages: list[Message] = [
        {"role": "system", "content": "You write faithful, compact conversation summaries."},
        {"role": "user", "content": prompt},
    ]
    runtime, telemetry = turn.runtime, turn.runtime.telemetry
    if telemetry is None:
        completion = await runtime.provider.complete(messages, None, runtime.params)
        trace.append(turn.account(completion, kind="summary", node="summary", started=started))
    else:
        with otel.model_scope(telemetry, runtime.params, messages, kind="summary") as span:
            completion = await runtime.provider.complete(messages, None, runtime.params)
            trace.append(turn.account(completion, kind="summary", node="summary", started=started))
            otel.end_model_call(span, telemetry, completion, trace[-1]["cost"])
    return limit_words(completion.text)


def history_frame(system_prompt: str, conversation: Conversation) -> pd.DataFrame:
    """The conversation as rows (role, content, tool_calls, tool_call_id): system prompt, summary, then each message."""
    import pandas as pd

    rows: list[tuple[Any, ...]] = [("system", system_prompt, None, None)]
    if conversation.summary:
        rows.append(("system", SUMMARY_PREFIX + conversation.summary, None, None))
    for m in conversation.history:
        calls = m.get("tool_calls")
        described = [f"{c['name']}({c['arguments']})" for c in calls] if calls else None
        rows.append((m["role"], m["content"], described, m.get("tool_call_id")))
    return pd.DataFrame(rows, columns=["role", "content", "tool_calls", "tool_call_id"])
