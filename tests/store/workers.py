"""Functions run in spawned child processes by the store tests (they must be importable by module name)."""

from __future__ import annotations

from typing import Any

from aiforge.store import Checkpoint, ResponseCache, Store, batch_fingerprint


def put_replies(path: str, keys: list[str]) -> None:
    """Put one reply per key into the cache file at ``path``, each in its own transaction."""
    cache = ResponseCache(Store(path))
    for key in keys:
        cache.put(key, {"text": f"reply to {key}"}, cost=0.001)


def record_until_killed(path: str, items: list[str], progress: Any) -> None:
    """Record every item of a batch as finished, publishing the count of committed records in ``progress``."""
    checkpoint = Checkpoint(Store(path), batch_fingerprint(items, {"model": "m"}))
    for index in range(len(items)):
        checkpoint.record(index, payload={"text": "x" * 500, "index": index})
        progress.value = index + 1
