"""The store's tables, as an ordered list of migrations: ``MIGRATIONS[n]`` takes a file from version n to n + 1.

A feature that needs new tables appends a migration; an existing migration is never edited, because files
already written by it are out there. ``PRAGMA user_version`` holds the version a file is at.
"""

from __future__ import annotations

APPLICATION_ID = 0x41494647
"""``PRAGMA application_id`` of every aiforge store ("AIFG"): tells an aiforge file from another program's."""

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        # Response cache: one row per reply fingerprint. WITHOUT ROWID keeps the hit path a single b-tree lookup.
        """CREATE TABLE responses (
            key TEXT PRIMARY KEY,
            payload TEXT NOT NULL,
            cost REAL NOT NULL,
            created REAL NOT NULL
        ) WITHOUT ROWID""",
        # Batch checkpoint: the batch the file was made for (one row), then one row per finished item.
        """CREATE TABLE checkpoint_batch (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            batch TEXT NOT NULL,
            items INTEGER NOT NULL,
            inputs TEXT NOT NULL,
            settings TEXT NOT NULL,
            created REAL NOT NULL
        )""",
        """CREATE TABLE checkpoint_items (
            batch TEXT NOT NULL,
            idx INTEGER NOT NULL,
            item TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
            payload TEXT,
            error TEXT,
            finished REAL NOT NULL,
            PRIMARY KEY (batch, idx)
        ) WITHOUT ROWID""",
    ),
)

SCHEMA_VERSION = len(MIGRATIONS)
"""The version this aiforge writes; a file at a higher version was written by a newer aiforge."""
