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
    (
        # Sessions: one row per named conversation, replaced whole at the end of each turn (last turn wins).
        """CREATE TABLE sessions (
            name TEXT PRIMARY KEY,
            conversation_id TEXT NOT NULL,
            history TEXT NOT NULL,
            summary TEXT,
            memory_mode TEXT NOT NULL,
            version INTEGER NOT NULL,
            updated REAL NOT NULL
        ) WITHOUT ROWID""",
        # The log: one row per turn of any agent (batch items included).
        """CREATE TABLE log (
            id INTEGER PRIMARY KEY,
            time REAL NOT NULL,
            session TEXT,
            conversation_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            prompt TEXT NOT NULL,
            reply TEXT NOT NULL,
            messages_in TEXT NOT NULL,
            messages_out TEXT NOT NULL,
            tool_calls TEXT NOT NULL,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            cost REAL NOT NULL,
            latency_ms REAL NOT NULL,
            trace_id TEXT NOT NULL,
            trace TEXT NOT NULL
        )""",
        "CREATE INDEX log_time ON log (time)",
        "CREATE INDEX log_conversation ON log (conversation_id, id)",
        # Full-text search over the prompt and reply of each turn; rowid is log.id.
        "CREATE VIRTUAL TABLE log_text USING fts5(prompt, reply, content='log', content_rowid='id')",
        """CREATE TRIGGER log_text_insert AFTER INSERT ON log BEGIN
            INSERT INTO log_text (rowid, prompt, reply) VALUES (new.id, new.prompt, new.reply);
        END""",
        """CREATE TRIGGER log_text_delete AFTER DELETE ON log BEGIN
            INSERT INTO log_text (log_text, rowid, prompt, reply) VALUES ('delete', old.id, old.prompt, old.reply);
        END""",
    ),
    (
        # The Batch API job a checkpointed submit_batch made for its batch: a rerun attaches instead of paying twice.
        """CREATE TABLE checkpoint_jobs (
            batch TEXT PRIMARY KEY,
            job_id TEXT NOT NULL,
            provider TEXT NOT NULL,
            submitted REAL NOT NULL
        ) WITHOUT ROWID""",
    ),
    (
        # What a turn waited for its turn (a batch's free worker, the rate pacer, the local engine's queue),
        # kept out of latency_ms. Rows logged before it have 0: their latency_ms still holds any wait.
        "ALTER TABLE log ADD COLUMN queue_ms REAL NOT NULL DEFAULT 0",
    ),
    (
        # Several batches in one checkpoint file, each under its part's name ('' for a plain run_batch): agg's levels,
        # evaluate's candidates and topk's rounds share the one file checkpoint= names. A
        # file written before keeps its batch as part ''; checkpoint_batch is no longer read.
        """CREATE TABLE checkpoint_parts (
            part TEXT PRIMARY KEY,
            batch TEXT NOT NULL,
            items INTEGER NOT NULL,
            inputs TEXT NOT NULL,
            settings TEXT NOT NULL,
            created REAL NOT NULL
        ) WITHOUT ROWID""",
        "INSERT INTO checkpoint_parts SELECT '', batch, items, inputs, settings, created FROM checkpoint_batch",
        "DELETE FROM checkpoint_batch",
    ),
)

SCHEMA_VERSION = len(MIGRATIONS)
"""The version this aiforge writes; a file at a higher version was written by a newer aiforge."""
