"""``Store``: the one SQLite file behind the response cache, batch checkpoints, sessions, the log and cassettes.

Concurrency. A ``Store`` holds one connection per process, guarded by a lock, and ``Store.for_setting`` hands
every agent of the process the same ``Store`` for a file. The sqlite3 module is built serialised
(``threadsafety == 3``), so the connection may be used from any thread; the lock makes each ``read()`` /
``write()`` block exclusive, so the user's threads and aiforge's background loop thread never interleave
statements of one transaction, and threads of one process never meet ``SQLITE_BUSY`` among themselves.
Blocks are short (one statement or one small transaction, microseconds on a warm file), so holding the lock
on the event loop thread costs nothing measurable; only another *process* holding the write lock makes a
block wait, for at most ``BUSY_TIMEOUT_S``. Other processes use their own connection: WAL lets readers run
beside the one writer, and ``synchronous=NORMAL`` makes every commit survive the process being killed (not
a power cut, which would lose at most the last commits, never the file).

A process forked with a ``Store`` open opens a new connection on first use in the child (SQLite must not
carry a connection across ``fork``); an in-memory store starts empty in the child.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from aiforge.core.errors import StoreError
from aiforge.core.types import ConfigError
from aiforge.store.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION

BUSY_TIMEOUT_S = 30.0
"""How long a block waits for another process's write lock before failing with ``database is locked``."""

MEMORY = ":memory:"
_SQLITE_BUSY, _SQLITE_CORRUPT, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 5, 11, 14, 26
_SIDE_FILES = ("-wal", "-shm", "-journal")
_USES = "the setting that chose it (CACHE, STORE or checkpoint=)"

_shared: dict[str, Store] = {}
_shared_lock = threading.Lock()
# Connections inherited through fork: never used, and never closed either, because closing one in the child
# could checkpoint and delete the -wal file the parent is still writing.
_inherited: list[sqlite3.Connection] = []


class Store:
    """One SQLite store file (or ``":memory:"``), opened, checked and migrated to ``SCHEMA_VERSION``.

    ``rebuild_if_corrupt=True`` deletes and recreates a file that is not a readable SQLite database: for
    files that only hold a cache. A valid database written by another program is never rebuilt.
    """

    def __init__(self, path: str | os.PathLike[str], *, rebuild_if_corrupt: bool = False) -> None:
        self.path: Path | None = None if os.fspath(path) == MEMORY else Path(path).expanduser()
        """The file, or None for an in-memory store."""
        self.rebuild_if_corrupt = rebuild_if_corrupt
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._closed = False
        self._conn = self._open()

    @classmethod
    def for_setting(
        cls, value: bool | str | os.PathLike[str] | None, *, kind: Literal["cache", "data"] = "cache"
    ) -> Store | None:
        """The process-wide store a setting names; None when the setting is off.

        ``True``: a file in the user's cache directory (``kind="cache"``, rebuilt if corrupt) or data directory
        (``kind="data"``, never rebuilt); a path: that file; ``"memory"``: one in-memory store shared by every
        agent of the process; ``False`` / ``None``: no store. The same file always gives the same ``Store``.
        """
        if value is None or value is False:
            return None
        rebuild = False
        if value is True:
            path, rebuild = default_path(kind), kind == "cache"
        elif isinstance(value, str) and value == "memory":
            path = MEMORY
        elif isinstance(value, str | os.PathLike) and os.fspath(value):
            path = str(Path(value).expanduser().resolve())
        else:
            raise ConfigError(
                f"A store setting (CACHE, STORE or checkpoint=) must be True, False, 'memory' or a file path, "
                f"not {value!r}."
            )
        with _shared_lock:
            store = _shared.get(path)
            if store is None or store._closed:
                store = _shared[path] = cls(path, rebuild_if_corrupt=rebuild)
            return store

    @property
    def name(self) -> str:
        """The file's path, or a description of the in-memory store, for messages."""
        return str(self.path) if self.path else "the in-memory store"

    @property
    def schema_version(self) -> int:
        """The schema version of the file (``SCHEMA_VERSION`` once opened)."""
        with self.read() as conn:
            return int(conn.execute("PRAGMA user_version").fetchall()[0][0])

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """The connection, for reads, with the lock held; fetch results inside the block."""
        if self._pid != os.getpid():
            self._reopen_after_fork()
        with self._lock:
            try:
                yield self._conn
            except sqlite3.DatabaseError as exc:
                self._raise_if_corrupt(exc)
                raise

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """The connection inside one write transaction, committed when the block ends, rolled back on error."""
        with self.read() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def close(self) -> None:
        """Close the connection; ``Store.for_setting`` opens a new one on the next call."""
        with self._lock:
            self._closed = True
            self._conn.close()

    def __repr__(self) -> str:
        return f"Store({self.name!r})"

    def _open(self) -> sqlite3.Connection:
        try:
            return self._connect()
        except sqlite3.DatabaseError as exc:
            if _primary_code(exc) == _SQLITE_CANTOPEN:
                raise StoreError(f"Cannot open the aiforge store {self.name} ({exc}); check {_USES}.") from exc
            if not (self.path and self.rebuild_if_corrupt and _primary_code(exc) in (_SQLITE_CORRUPT, _SQLITE_NOTADB)):
                self._raise_if_corrupt(exc)
                raise
        for suffix in ("", *_SIDE_FILES):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        return self._connect()

    def _connect(self) -> sqlite3.Connection:
        if self.path:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"Cannot create the folder of the aiforge store {self.name}: {exc}.") from exc
        conn = sqlite3.connect(
            self.path or MEMORY, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            _enter_wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
            self._migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        if self._checked_version(conn) == SCHEMA_VERSION:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Read again under the write lock: another process may have migrated the file meanwhile.
            version = self._checked_version(conn)
            for statements in MIGRATIONS[version:]:
                for statement in statements:
                    conn.execute(statement)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _checked_version(self, conn: sqlite3.Connection) -> int:
        """The file's schema version; ``StoreError`` for another program's database or a newer schema."""
        # One statement, so one snapshot: read one by one, the three could straddle another process's migration
        # (application_id still 0, then user_version and tables already there) and call the file foreign.
        app, version, tables = conn.execute(
            "SELECT (SELECT application_id FROM pragma_application_id), "
            "(SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_master)"
        ).fetchall()[0]
        foreign = app != APPLICATION_ID and (app != 0 or version != 0 or tables)
        if foreign:
            raise StoreError(
                f"{self.name} is an SQLite database of another program (application_id {app:#x}, "
                f"user_version {version}), not an aiforge store; aiforge leaves it untouched. "
                f"Choose another file in {_USES}."
            )
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.name} was written by a newer aiforge (store schema version {version}; this aiforge reads "
                f"versions up to {SCHEMA_VERSION}). Upgrade aiforge-kit (pip install -U aiforge-kit), or choose "
                f"another file in {_USES}."
            )
        return int(version)

    def _raise_if_corrupt(self, exc: sqlite3.DatabaseError) -> None:
        if _primary_code(exc) in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
            raise StoreError(
                f"{self.name} is not a readable aiforge store ({exc}). Move or delete it, with its -wal and -shm "
                f"files, and aiforge starts a new one (a cache at the default location is rebuilt by itself); "
                f"or choose another file in {_USES}."
            ) from exc

    def _reopen_after_fork(self) -> None:
        _inherited.append(self._conn)
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._conn = self._open()


_before_close: list[Callable[[], None]] = []
"""What ``close_shared`` runs first: the log registers the writing of its queued rows (``flush_before_close``)."""


def flush_before_close(flush: Callable[[], None]) -> None:
    """Have ``close_shared`` call ``flush`` before it closes a store, so rows queued above the store get written."""
    _before_close.append(flush)


def close_shared(under: str | os.PathLike[str]) -> None:
    """Close and forget the shared stores of files under a folder (a test's temporary store), log rows written."""
    for flush in _before_close:
        flush()
    folder = Path(under).resolve()
    with _shared_lock:
        for path, store in list(_shared.items()):
            if store.path is not None and store.path.is_relative_to(folder):
                store.close()
                del _shared[path]


def _enter_wal(conn: sqlite3.Connection) -> None:
    """Put the file in WAL mode, waiting up to ``BUSY_TIMEOUT_S`` while other processes open it too.

    Switching a new file to WAL needs it alone, and SQLite answers ``database is locked`` at once, without
    its busy wait, when another connection is in the middle of opening it: several processes opening one new
    file together (a batch's workers) would fail about one open in twelve.
    """
    deadline, pause = time.monotonic() + BUSY_TIMEOUT_S, 0.002
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if _primary_code(exc) != _SQLITE_BUSY or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _primary_code(exc: sqlite3.Error) -> int:
    return (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF


def default_path(kind: Literal["cache", "data"]) -> str:
    """The store file in the user's cache or data directory (platformdirs: XDG on Linux)."""
    import platformdirs

    if kind == "cache":
        return str(Path(platformdirs.user_cache_dir("aiforge")) / "cache.sqlite")
    return str(Path(platformdirs.user_data_dir("aiforge")) / "store.sqlite")
