"""``ResponseCache``: complete, successful replies stored by their fingerprint, so a repeated request costs nothing.

The caller's contract: ``put`` only the serialised form of a complete, successful reply (no error, no
interrupted stream, no truncated answer the caller would retry), keyed by ``reply_fingerprint(...)``. The
cache stores what it is given and cannot tell a partial reply from a whole one.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiforge.store.db import Store


@dataclass(frozen=True, slots=True)
class CacheStats:
    """Counts since this ``ResponseCache`` was made (hits, misses, saved cost) and the rows in the store."""

    hits: int
    misses: int
    entries: int
    saved_cost: float
    """The summed original cost (USD) of the replies served from the cache."""


class ResponseCache:
    """Replies by fingerprint in a ``Store``; safe to share between threads, tasks and processes."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._counts = threading.Lock()
        self._hits = 0
        self._misses = 0
        self._saved_cost = 0.0

    def get(self, key: str) -> dict[str, Any] | None:
        """The payload stored under ``key``, or None; counts a hit or a miss."""
        entry = self.entry(key)
        return None if entry is None else entry[0]

    def entry(self, key: str) -> tuple[dict[str, Any], float] | None:
        """``(payload, original cost in USD)`` stored under ``key``, or None; counts a hit or a miss."""
        with self.store.read() as conn:
            rows = conn.execute("SELECT payload, cost FROM responses WHERE key = ?", (key,)).fetchall()
        with self._counts:
            if not rows:
                self._misses += 1
                return None
            self._hits += 1
            self._saved_cost += rows[0][1]
        return json.loads(rows[0][0]), rows[0][1]

    def put(self, key: str, payload: Mapping[str, Any], *, cost: float) -> None:
        """Store a complete, successful reply's JSON payload; a key already stored keeps its first payload.

        ``cost`` is what the reply cost (USD) when it was made, kept so a hit can report it.
        """
        if not (math.isfinite(cost) and cost >= 0):
            raise ValueError(f"The cost of a cached reply must be a finite number >= 0, not {cost!r}.")
        # ensure_ascii: a lone surrogate in a reply becomes a JSON escape that round-trips, where raw text
        # could not be bound as UTF-8 at all.
        text = json.dumps(dict(payload), separators=(",", ":"), allow_nan=False)
        with self.store.write() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO responses (key, payload, cost, created) VALUES (?, ?, ?, ?)",
                (key, text, float(cost), time.time()),
            )

    def clear(self) -> None:
        """Delete every stored reply and reset the counters."""
        with self.store.write() as conn:
            conn.execute("DELETE FROM responses")
        with self._counts:
            self._hits = self._misses = 0
            self._saved_cost = 0.0

    def stats(self) -> CacheStats:
        """Hits, misses and saved cost of this cache object, and the number of replies stored."""
        with self.store.read() as conn:
            entries = conn.execute("SELECT count(*) FROM responses").fetchall()[0][0]
        with self._counts:
            return CacheStats(self._hits, self._misses, entries, self._saved_cost)
