"""``TurnLog``: every turn of every agent, one row each, searchable (SQLite FTS5) and summable by day.

A row holds what the turn sent and got back, never a key: the context and the produced messages, the tool
calls, tokens, cost, latency and the trace. Rows are written in their own short transaction after the turn
has committed, so logging never changes what a turn does; ``logs()`` reads them as a DataFrame.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from aiforge.store.db import Store

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = (
    "id", "time", "session", "conversation_id", "kind", "provider", "model", "prompt", "reply", "messages_in",
    "messages_out", "tool_calls", "input_tokens", "output_tokens", "cost", "latency_ms", "trace_id", "trace",
)
_JSON_COLUMNS = ("messages_in", "messages_out", "tool_calls", "trace")


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One turn, as the log stores it (``time`` in seconds since the epoch)."""

    session: str | None
    conversation_id: str
    kind: str
    """``"chat"`` for a conversation turn, ``"batch"`` for a ``run_batch`` item."""
    provider: str
    model: str
    prompt: str
    reply: str
    messages_in: Sequence[Mapping[str, Any]]
    messages_out: Sequence[Mapping[str, Any]]
    tool_calls: Sequence[Mapping[str, Any]]
    input_tokens: int
    output_tokens: int
    cost: float
    latency_ms: float
    trace_id: str
    trace: Sequence[Mapping[str, Any]]
    time: float = 0.0


def _json(value: Any) -> str:
    # default=str: a tool may return an object; the log keeps its text rather than failing the turn.
    return json.dumps(value, separators=(",", ":"), default=str)


class TurnLog:
    """The log of one ``Store``."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def record(self, entry: LogEntry) -> None:
        """Append one turn."""
        row = (
            entry.time or time.time(), entry.session, entry.conversation_id, entry.kind, entry.provider,
            entry.model, entry.prompt, entry.reply, _json(list(entry.messages_in)), _json(list(entry.messages_out)),
            _json(list(entry.tool_calls)), entry.input_tokens, entry.output_tokens, entry.cost, entry.latency_ms,
            entry.trace_id, _json(list(entry.trace)),
        )
        with self.store.write() as conn:
            conn.execute(f"INSERT INTO log ({', '.join(COLUMNS[1:])}) VALUES ({', '.join('?' * 17)})", row)

    def query(
        self,
        *,
        session: str | None = None,
        conversation_id: str | None = None,
        model: str | None = None,
        since: datetime | str | float | None = None,
        until: datetime | str | float | None = None,
        search: str | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Matching turns, newest first, as dicts (JSON columns decoded).

        ``search`` is an FTS5 query over the prompt and the reply (words, ``"a phrase"``, ``OR``, ``prefix*``);
        ``since`` / ``until`` take a datetime, an ISO date or time, or epoch seconds.
        """
        where, args = [], []
        for column, value in (("session", session), ("conversation_id", conversation_id), ("model", model)):
            if value is not None:
                where.append(f"log.{column} = ?")
                args.append(value)
        if since is not None:
            where.append("log.time >= ?")
            args.append(_epoch(since))
        if until is not None:
            where.append("log.time < ?")
            args.append(_epoch(until))
        source = "log"
        if search:
            source = "log JOIN log_text ON log_text.rowid = log.id"
            where.append("log_text MATCH ?")
            args.append(search)
        sql = f"SELECT {', '.join('log.' + c for c in COLUMNS)} FROM {source}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY log.time DESC, log.id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(int(limit))
        with self.store.read() as conn:
            rows = conn.execute(sql, args).fetchall()
        records = []
        for row in rows:
            record = dict(zip(COLUMNS, row, strict=True))
            for column in _JSON_COLUMNS:
                record[column] = json.loads(record[column])
            records.append(record)
        return records

    def frame(self, **filters: Any) -> pd.DataFrame:
        """``query(**filters)`` as a ``LogFrame`` (a DataFrame with ``costs_by_day()``), ``time`` as datetimes."""
        from aiforge.store.log_frame import LogFrame

        return LogFrame.of(self.query(**filters), COLUMNS)


def _epoch(value: datetime | str | float) -> float:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, str):
        return datetime.fromisoformat(value).timestamp()
    return float(value)
