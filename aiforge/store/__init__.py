"""One SQLite store: the response cache and batch checkpoints (and, built on them, sessions, the log, cassettes).

Nothing here is imported by ``import aiforge``; sqlite3 and platformdirs load when a store is first used.
"""

from aiforge.core.errors import CheckpointMismatchError, StoreError
from aiforge.store.cache import CacheStats, ResponseCache
from aiforge.store.checkpoints import Checkpoint, CheckpointRecord
from aiforge.store.db import Store
from aiforge.store.fingerprint import BatchFingerprint, batch_fingerprint, fingerprint, reply_fingerprint

__all__ = [
    "BatchFingerprint",
    "CacheStats",
    "Checkpoint",
    "CheckpointMismatchError",
    "CheckpointRecord",
    "ResponseCache",
    "Store",
    "StoreError",
    "batch_fingerprint",
    "fingerprint",
    "reply_fingerprint",
]
