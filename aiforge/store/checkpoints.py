"""``Checkpoint``: the finished items of one batch, written as each lands, so a rerun does only the rest.

A store holds the checkpoint of one batch. Each ``record`` is its own committed transaction: a process
killed mid-batch loses only the items that were in flight.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from aiforge.core.errors import CheckpointMismatchError
from aiforge.store.db import Store
from aiforge.store.fingerprint import BatchFingerprint

if TYPE_CHECKING:
    import sqlite3


@dataclass(frozen=True, slots=True)
class CheckpointRecord:
    """One finished item of a checkpointed batch."""

    index: int
    item: str
    """The item's fingerprint when it ran."""
    status: Literal["ok", "failed"]
    payload: dict[str, Any] | None
    """The caller's JSON payload of the result (None for a failure recorded without one)."""
    error: str | None
    """The error text of a failed item, None for an ok one."""


class Checkpoint:
    """The checkpoint of ``batch`` in ``store``; ``restart=True`` discards one made for another batch.

    Raises ``CheckpointMismatchError`` when the store holds the checkpoint of a different batch (other
    item count, settings or inputs) and ``restart`` is False.
    """

    def __init__(self, store: Store, batch: BatchFingerprint, *, restart: bool = False) -> None:
        self.store = store
        self.batch = batch
        with store.write() as conn:
            rows = conn.execute("SELECT batch, items, inputs, settings FROM checkpoint_batch").fetchall()
            if rows and rows[0][0] == batch.key:
                return
            if rows and not restart:
                raise CheckpointMismatchError(self._difference(conn, *rows[0]))
            conn.execute("DELETE FROM checkpoint_items")
            conn.execute("DELETE FROM checkpoint_jobs")
            conn.execute(
                "INSERT OR REPLACE INTO checkpoint_batch (id, batch, items, inputs, settings, created) "
                "VALUES (1, ?, ?, ?, ?, ?)",
                (batch.key, len(batch.items), batch.inputs, batch.settings, time.time()),
            )

    def done(self) -> dict[int, CheckpointRecord]:
        """Every finished item (ok or failed) by index."""
        with self.store.read() as conn:
            rows = conn.execute(
                "SELECT idx, item, status, payload, error FROM checkpoint_items WHERE batch = ? ORDER BY idx",
                (self.batch.key,),
            ).fetchall()
        return {
            index: CheckpointRecord(index, item, status, None if payload is None else json.loads(payload), error)
            for index, item, status, payload, error in rows
        }

    def record(self, index: int, *, payload: Mapping[str, Any] | None = None, error: str | None = None) -> None:
        """Write item ``index``'s result now: ok with its ``payload``, or failed with its ``error`` text.

        Recording an index again replaces its record (a failed item that succeeded on a rerun).
        """
        if not 0 <= index < len(self.batch.items):
            raise IndexError(f"Item {index} is not in this batch of {len(self.batch.items)} items.")
        text = None if payload is None else json.dumps(dict(payload), separators=(",", ":"), allow_nan=False)
        with self.store.write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO checkpoint_items (batch, idx, item, status, payload, error, finished) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    self.batch.key,
                    index,
                    self.batch.items[index],
                    "ok" if error is None else "failed",
                    text,
                    error,
                    time.time(),
                ),
            )

    def job(self) -> str | None:
        """The Batch API job id submitted for this batch (``record_job``), or None."""
        with self.store.read() as conn:
            rows = conn.execute("SELECT job_id FROM checkpoint_jobs WHERE batch = ?", (self.batch.key,)).fetchall()
        return rows[0][0] if rows else None

    def record_job(self, job_id: str, provider: str) -> None:
        """Keep the Batch API job submitted for this batch, so a rerun attaches to it instead of submitting again."""
        with self.store.write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO checkpoint_jobs (batch, job_id, provider, submitted) VALUES (?, ?, ?, ?)",
                (self.batch.key, job_id, provider, time.time()),
            )

    @staticmethod
    def stored_job(store: Store) -> tuple[str, str] | None:
        """``(job_id, provider)`` of the job submitted for the batch a checkpoint file holds, or None."""
        with store.read() as conn:
            rows = conn.execute(
                "SELECT j.job_id, j.provider FROM checkpoint_jobs j JOIN checkpoint_batch b ON j.batch = b.batch"
            ).fetchall()
        return (rows[0][0], rows[0][1]) if rows else None

    def _difference(self, conn: sqlite3.Connection, key: str, items: int, inputs: str, settings: str) -> str:
        """What differs between the stored batch and ``self.batch``, and how to start over."""
        now = self.batch
        differences = []
        if items != len(now.items):
            differences.append(f"it had {items} items, this batch has {len(now.items)}")
        if settings != now.settings:
            differences.append("the settings differ (provider, endpoint, model, parameters, prompt or output)")
        if inputs != now.inputs:
            changed = next(
                (
                    index
                    for index, item in conn.execute(
                        "SELECT idx, item FROM checkpoint_items WHERE batch = ? ORDER BY idx", (key,)
                    ).fetchall()
                    if index >= len(now.items) or item != now.items[index]
                ),
                None,
            )
            where = "" if changed is None else f", first at item {changed}"
            differences.append(f"the inputs differ{where}")
        (finished,) = conn.execute("SELECT count(*) FROM checkpoint_items WHERE batch = ?", (key,)).fetchall()[0]
        return (
            f"{self.store.name} holds the checkpoint of another batch: {'; '.join(differences)}. Resuming would mix "
            f"the results of two batches. To start over, pass restart=True (its {finished} finished items are "
            f"discarded), or use another checkpoint file."
        )
