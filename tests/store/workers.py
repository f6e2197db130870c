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


def open_new_stores(paths: list[str], barrier: Any, errors: Any) -> None:
    """Open each store file in turn, all processes at once (``barrier``); put the errors met in ``errors``."""
    for path in paths:
        barrier.wait()
        try:
            Store(path).close()
        except Exception as exc:  # noqa: BLE001 - the test reports every one
            errors.put(f"{type(exc).__name__}: {exc}")
