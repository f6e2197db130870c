"""``Checkpoint``: the finished items of one batch, written as each lands, so a rerun does only the rest.

A store holds the checkpoints of several batches, each under the name of its part of the work (``""`` for a plain
``run_batch``; ``agg``'s levels, ``evaluate``'s candidates, a Dask job's partitions and ``topk``'s rounds name
theirs), so one file is the checkpoint of a whole call. Each ``record`` is its own committed transaction: a process
killed mid-batch loses only the items that were in flight; processes sharing a file wait for each other's writes
(WAL, ``db.BUSY_TIMEOUT_S``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
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
    """The checkpoint of ``batch`` in ``store``, under ``part``; ``restart=True`` discards one made for another batch.

    Raises ``CheckpointMismatchError`` when the store holds the checkpoint of a different batch (other
    item count, settings or inputs) under ``part`` and ``restart`` is False.
    """

    def __init__(
        self,
        store: Store,
        batch: BatchFingerprint,
        *,
        restart: bool = False,
        part: str = "",
        describe: Callable[[int], str | None] | None = None,
    ) -> None:
        self.describe = describe
        """Item index -> what a person knows it by (``b.pdf``), named when its input differs; None: nothing."""
        self.store = store
        self.batch = batch
        self.part = part
        # A part's items are its own: two parts of one file may be the same batch through different agents.
        self.key = f"{part}/{batch.key}" if part else batch.key
        with store.write() as conn:
            rows = conn.execute(
                "SELECT batch, items, inputs, settings FROM checkpoint_parts WHERE part = ?", (part,)
            ).fetchall()
            if rows and rows[0][0] == self.key:
                return
            if rows and not restart:
                raise CheckpointMismatchError(self._difference(conn, *rows[0]))
            if rows:
                conn.execute("DELETE FROM checkpoint_items WHERE batch = ?", (rows[0][0],))
                conn.execute("DELETE FROM checkpoint_jobs WHERE batch = ?", (rows[0][0],))
            conn.execute(
                "INSERT OR REPLACE INTO checkpoint_parts (part, batch, items, inputs, settings, created) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (part, self.key, len(batch.items), batch.inputs, batch.settings, time.time()),
            )

    def done(self) -> dict[int, CheckpointRecord]:
        """Every finished item (ok or failed) by index."""
        with self.store.read() as conn:
            rows = conn.execute(
                "SELECT idx, item, status, payload, error FROM checkpoint_items WHERE batch = ? ORDER BY idx",
                (self.key,),
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
                    self.key,
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
            rows = conn.execute("SELECT job_id FROM checkpoint_jobs WHERE batch = ?", (self.key,)).fetchall()
        return rows[0][0] if rows else None

    def record_job(self, job_id: str, provider: str) -> None:
        """Keep the Batch API job submitted for this batch, so a rerun attaches to it instead of submitting again."""
        with self.store.write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO checkpoint_jobs (batch, job_id, provider, submitted) VALUES (?, ?, ?, ?)",
                (self.key, job_id, provider, time.time()),
            )

    @staticmethod
    def stored_job(store: Store) -> tuple[str, str] | None:
        """``(job_id, provider)`` of the job submitted for the batch a checkpoint file holds, or None."""
        with store.read() as conn:
            rows = conn.execute(
                "SELECT j.job_id, j.provider FROM checkpoint_jobs j JOIN checkpoint_parts b ON j.batch = b.batch "
                "WHERE b.part = ''"
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
            named = None if changed is None or self.describe is None else self.describe(changed)
            where = "" if changed is None else f", first at item {changed}" + (f": {named} changed" if named else "")
            differences.append(f"the inputs differ{where}")
        (finished,) = conn.execute("SELECT count(*) FROM checkpoint_items WHERE batch = ?", (key,)).fetchall()[0]
        return (
            f"{self.store.name} holds the checkpoint of another batch{f' for {self.part}' if self.part else ''}: "
            f"{'; '.join(differences)}. Resuming would mix "
            f"the results of two batches. To start over, pass restart=True (its {finished} finished items are "
            f"discarded), or use another checkpoint file."
        )
