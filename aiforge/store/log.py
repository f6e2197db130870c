"""``TurnLog``: every turn of every agent, one row each, searchable (SQLite FTS5) and summable by day.

A row holds what the turn sent and got back, never a key: the context and the produced messages, the tool
calls, tokens, cost, latency and the trace. A turn only queues its row (a few microseconds; a turn that finds
``MAX_QUEUED_CHARS`` of text queued waits for the writer, so the queue cannot outgrow memory); one writer
thread per store gathers rows for up to ``LINGER_S`` and writes them in one transaction, because a commit
per row (0.2 ms) was a quarter of a scripted batch item's time. A read (``query``) first waits for the queue, so
``logs()`` right after a turn sees it; rows still queued at exit are written by an ``atexit`` hook. Only a
process killed outright loses the rows of its last few milliseconds; a failed write is logged as a warning
and never fails a turn.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from aiforge.core.file_markers import shown
from aiforge.store.db import Store, flush_before_close
from aiforge.store.log_search import match_expression

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = (
    "id", "time", "session", "conversation_id", "kind", "provider", "model", "prompt", "reply", "messages_in",
    "messages_out", "tool_calls", "input_tokens", "output_tokens", "cost", "latency_ms", "trace_id", "trace",
    "queue_ms",
)
_JSON_COLUMNS = ("messages_in", "messages_out", "tool_calls", "trace")
_INSERT = f"INSERT INTO log ({', '.join(COLUMNS[1:])}) VALUES ({', '.join('?' * (len(COLUMNS) - 1))})"
logger = logging.getLogger("aiforge.store")
LINGER_S = 0.05
"""How long the writer gathers rows before a transaction, unless a reader is waiting for them."""
MAX_QUEUED_CHARS = 4_000_000
"""Text a store's queue holds at most: a turn that finds it full waits until the writer takes the queue.

Only turns faster than the log's insert (the scripted provider in a tight loop, 0.2 ms a turn) ever fill it;
without the bound such a loop queued rows faster than they were written (6 KB each, 7 MB per 1 000 turns) for
as long as it ran."""


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
    """The turn's own time; its waits are ``queue_ms``."""
    trace_id: str
    trace: Sequence[Mapping[str, Any]]
    time: float = 0.0
    queue_ms: float = 0.0
    """What the turn waited for its turn: a batch's free worker, the rate pacer, the local engine's queue."""

    @classmethod
    def of_turn(
        cls, response: Any, sent: Sequence[Mapping[str, Any]], produced: Sequence[Mapping[str, Any]], *,
        session: str | None, kind: str,
    ) -> LogEntry:
        """One turn's entry: ``response`` its ``ChatResponse``, ``sent`` the context sent, ``produced`` its output."""
        return cls(
            session=session,
            conversation_id=response.conversation_id,
            kind=kind,
            provider=response.provider,
            model=response.model,
            prompt=shown(str(sent[-1]["content"])),  # a file by its name; messages_in keeps what was sent
            reply=response.message,
            messages_in=sent,
            messages_out=produced,
            tool_calls=[call.model_dump() for call in response.tool_calls],
            input_tokens=response.input_tokens,
            output_tokens=response.output_tokens,
            cost=response.cost,
            latency_ms=response.latency_ms,
            queue_ms=response.queue_ms,
            trace_id=response.trace_id,
            trace=response.trace,
        )


def _json(value: Any) -> str:
    # default=str: a tool may return an object; the log keeps its text rather than failing the turn.
    return json.dumps(value, separators=(",", ":"), default=str)


class _Writer:
    """The writer thread of one store's log: queued rows, written together."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.pending: list[tuple[Any, ...]] = []
        self.queued_chars = 0
        self.busy = False
        self.readers = 0
        self.changed = threading.Condition()
        self.pid = 0

    def put(self, row: tuple[Any, ...]) -> None:
        with self.changed:
            if self.pid != os.getpid():  # first use, or a forked child: threads do not survive fork
                self.pid, self.pending, self.queued_chars, self.busy = os.getpid(), [], 0, False
                threading.Thread(target=self._run, name="aiforge-log", daemon=True).start()
            while self.queued_chars >= MAX_QUEUED_CHARS:
                self.changed.wait()
            self.pending.append(row)
            self.queued_chars += sum(len(value) for value in row if isinstance(value, str))
            self.changed.notify_all()

    def flush(self) -> None:
        """Wait until every queued row is written."""
        with self.changed:
            self.readers += 1
            self.changed.notify_all()
            try:
                while self.pid == os.getpid() and (self.pending or self.busy):
                    self.changed.wait()
            finally:
                self.readers -= 1

    def _must_write_now(self) -> bool:
        return self.readers > 0 or self.queued_chars >= MAX_QUEUED_CHARS

    def _run(self) -> None:
        while True:
            with self.changed:
                while not self.pending:
                    self.changed.wait()
                self.changed.wait_for(self._must_write_now, timeout=LINGER_S)
                rows, self.pending, self.queued_chars, self.busy = self.pending, [], 0, True
            try:
                with self.store.write() as conn:
                    conn.executemany(_INSERT, rows)
            except Exception as exc:  # noqa: BLE001 - the log must never fail (or stop logging) a turn
                logger.warning("aiforge: %d log rows not written to %s: %s", len(rows), self.store.name, exc)
            finally:
                with self.changed:
                    self.busy = False
                    self.changed.notify_all()


_writers: weakref.WeakKeyDictionary[Store, _Writer] = weakref.WeakKeyDictionary()
_writers_lock = threading.Lock()


def flush_all() -> None:
    """Write every queued row of every store (at exit, and before a store is closed)."""
    with _writers_lock:
        writers = list(_writers.values())
    for writer in writers:
        writer.flush()


atexit.register(flush_all)
flush_before_close(flush_all)


class TurnLog:
    """The log of one ``Store``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        with _writers_lock:
            writer = _writers.get(store)
            if writer is None:
                writer = _writers[store] = _Writer(store)
        self._writer = writer

    def flush(self) -> None:
        """Wait until every turn recorded so far is in the file."""
        self._writer.flush()

    def record(self, entry: LogEntry) -> None:
        """Queue one turn for the writer thread (its JSON is made here, from the turn's data as it is now)."""
        row = (
            entry.time or time.time(), entry.session, entry.conversation_id, entry.kind, entry.provider,
            entry.model, entry.prompt, entry.reply, _json(list(entry.messages_in)), _json(list(entry.messages_out)),
            _json(list(entry.tool_calls)), entry.input_tokens, entry.output_tokens, entry.cost, entry.latency_ms,
            entry.trace_id, _json(list(entry.trace)), entry.queue_ms,
        )
        self._writer.put(row)

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

        ``search`` looks in the prompt and the reply: words (all must occur; ``doesn't``, ``e-mail`` as typed), or
        an FTS5 query (``"a phrase"``, ``refund OR return``, ``prefix*``) when the text is a valid one
        (``log_search``); a search with no word in it is a ``UsageError``. ``since`` / ``until`` take a
        datetime, an ISO date or time, or epoch seconds.
        """
        where: list[str] = []
        args: list[str | float] = []
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
            args.append(match_expression(search))
        sql = f"SELECT {', '.join('log.' + c for c in COLUMNS)} FROM {source}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY log.time DESC, log.id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(int(limit))
        self.flush()
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
