"""``Sessions``: named conversations kept in a ``Store``, so a conversation outlives its kernel.

A session row holds one conversation whole (id, history, summary, memory mode) and is replaced in one
statement at the end of a turn: a reader sees the turn before or the turn after, never half of one.
``version`` grows by one with every save, so a process can tell in one indexed read whether another process
has moved the session on, and a save can be made conditional on the version it started from
(``expected_version``): two processes writing one session then never overwrite each other's turns.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiforge.store.db import Store


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """A session as stored: its current conversation and how many turns have saved it."""

    name: str
    conversation_id: str
    history: list[dict[str, Any]]
    summary: str | None
    memory_mode: str
    version: int
    updated: float


class Sessions:
    """The sessions of one ``Store``."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def load(self, name: str) -> SessionRecord | None:
        """The session ``name``, or None if it was never saved."""
        with self.store.read() as conn:
            rows = conn.execute(
                "SELECT name, conversation_id, history, summary, memory_mode, version, updated "
                "FROM sessions WHERE name = ?",
                (name,),
            ).fetchall()
        if not rows:
            return None
        row = rows[0]
        return SessionRecord(row[0], row[1], json.loads(row[2]), row[3], row[4], row[5], row[6])

    def version(self, name: str) -> int:
        """The session's save count (0 if never saved): cheap, for telling whether another process saved it."""
        with self.store.read() as conn:
            rows = conn.execute("SELECT version FROM sessions WHERE name = ?", (name,)).fetchall()
        return rows[0][0] if rows else 0

    def save(
        self, name: str, *, conversation_id: str, history: Sequence[Mapping[str, Any]], summary: str | None,
        memory_mode: str, expected_version: int | None = None,
    ) -> int | None:
        """Replace the session with this conversation in one transaction; returns its new version.

        With ``expected_version`` (0: never saved) the save happens only if the stored version is still that
        one; otherwise nothing is written and the result is None (another process saved in between).
        """
        text = json.dumps(list(history), separators=(",", ":"), allow_nan=False)
        arguments: tuple[Any, ...] = (name, conversation_id, text, summary, memory_mode, time.time())
        if expected_version is None:
            condition = ""
        elif expected_version == 0:
            condition = " WHERE 0"  # never saved, as far as the caller knows: any existing row is a conflict
        else:
            condition, arguments = " WHERE sessions.version = ?", (*arguments, expected_version)
        with self.store.write() as conn:
            version = conn.execute(
                "INSERT INTO sessions (name, conversation_id, history, summary, memory_mode, version, updated) "
                "VALUES (?, ?, ?, ?, ?, 1, ?) ON CONFLICT (name) DO UPDATE SET "
                "conversation_id = excluded.conversation_id, history = excluded.history, "
                "summary = excluded.summary, memory_mode = excluded.memory_mode, "
                f"version = sessions.version + 1, updated = excluded.updated{condition} RETURNING version",
                arguments,
            ).fetchall()
        return int(version[0][0]) if version else None

    def names(self) -> list[str]:
        """Every saved session, most recently updated first."""
        with self.store.read() as conn:
            return [row[0] for row in conn.execute("SELECT name FROM sessions ORDER BY updated DESC").fetchall()]

    def delete(self, name: str) -> None:
        """Forget the session (its turns stay in the log)."""
        with self.store.write() as conn:
            conn.execute("DELETE FROM sessions WHERE name = ?", (name,))
