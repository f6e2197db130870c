"""``Store``: WAL, schema versions, errors for files it cannot use, and the forms of a store setting."""

from __future__ import annotations

import ast
import multiprocessing
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import aiforge.store
from aiforge.core.errors import StoreError
from aiforge.core.types import ConfigError
from aiforge.store import ResponseCache, Store
from aiforge.store.schema import APPLICATION_ID, SCHEMA_VERSION
from tests.store import workers


def test_a_new_file_is_in_wal_mode_at_the_current_schema_version(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite")
    with store.read() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchall() == [("wal",)]
        assert conn.execute("PRAGMA application_id").fetchall() == [(APPLICATION_ID,)]
    assert store.schema_version == SCHEMA_VERSION


def test_a_missing_folder_is_created(tmp_path: Path) -> None:
    assert Store(tmp_path / "a" / "b" / "s.sqlite").path.exists()


def test_reopening_a_file_keeps_its_rows(tmp_path: Path) -> None:
    ResponseCache(Store(tmp_path / "s.sqlite")).put("k", {"text": "hi"}, cost=0.5)
    assert ResponseCache(Store(tmp_path / "s.sqlite")).get("k") == {"text": "hi"}


def test_a_file_from_a_newer_schema_is_a_clear_error_naming_file_and_versions(tmp_path: Path) -> None:
    path = tmp_path / "newer.sqlite"
    Store(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 3}")
    with pytest.raises(StoreError) as caught:
        Store(path, rebuild_if_corrupt=True)
    message = str(caught.value)
    assert str(path) in message and f"version {SCHEMA_VERSION + 3}" in message and f"up to {SCHEMA_VERSION}" in message
    assert "pip install -U aiforge-kit" in message
    assert isinstance(caught.value, ConfigError)


def test_another_programs_database_is_refused_and_never_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "theirs.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE precious (x)")
        conn.execute("INSERT INTO precious VALUES (42)")
    with pytest.raises(StoreError, match="another program"):
        Store(path, rebuild_if_corrupt=True)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT x FROM precious").fetchall() == [(42,)]


def test_a_file_that_is_not_sqlite_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"id,name\n1,not a database\n" * 200)
    with pytest.raises(StoreError) as caught:
        Store(path)
    assert str(path) in str(caught.value) and "Move or delete it" in str(caught.value)
    assert path.read_bytes().startswith(b"id,name")


def test_a_corrupt_file_is_rebuilt_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"\x00garbage" * 1000)
    cache = ResponseCache(Store(path, rebuild_if_corrupt=True))
    assert cache.get("k") is None
    cache.put("k", {"text": "fresh"}, cost=0.0)
    assert cache.get("k") == {"text": "fresh"}


def test_pages_corrupted_after_opening_give_a_store_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    store = Store(path)
    cache = ResponseCache(store)
    for i in range(300):
        cache.put(f"k{i}", {"text": "x" * 200}, cost=0.0)
    store.close()
    data = bytearray(path.read_bytes())
    page = 4096
    data[2 * page :] = b"\xff" * (len(data) - 2 * page)
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match="not a readable aiforge store"):
        ResponseCache(Store(path)).get("k150")


def test_many_threads_share_one_store_connection_safely(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite")
    errors: list[BaseException] = []

    def schema_reads() -> None:
        try:
            for _ in range(200):
                assert store.schema_version == SCHEMA_VERSION
        except BaseException as exc:  # noqa: BLE001 - reported to the main thread
            errors.append(exc)

    threads = [threading.Thread(target=schema_reads) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_setting_true_uses_the_users_cache_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    cache_store = Store.for_setting(True)
    data_store = Store.for_setting(True, kind="data")
    assert cache_store.path == tmp_path / "xdg-cache" / "aiforge" / "cache.sqlite"
    assert cache_store.rebuild_if_corrupt
    assert data_store.path == tmp_path / "xdg-data" / "aiforge" / "store.sqlite"
    assert not data_store.rebuild_if_corrupt


def test_setting_a_path_gives_one_store_per_file_in_the_process(tmp_path: Path) -> None:
    first = Store.for_setting(tmp_path / "s.sqlite")
    assert Store.for_setting(str(tmp_path / "s.sqlite")) is first
    assert first.path == tmp_path / "s.sqlite" and not first.rebuild_if_corrupt
    first.close()
    assert Store.for_setting(tmp_path / "s.sqlite") is not first


def test_setting_memory_is_one_store_shared_by_the_process() -> None:
    store = Store.for_setting("memory")
    assert store is Store.for_setting("memory") and store.path is None


@pytest.mark.parametrize("off", [False, None])
def test_setting_off_gives_no_store(off: bool | None) -> None:
    assert Store.for_setting(off) is None


@pytest.mark.parametrize("bad", ["", 3, ["a.sqlite"]])
def test_a_wrong_setting_is_a_config_error(bad: object) -> None:
    with pytest.raises(ConfigError, match="True, False, 'memory' or a file path"):
        Store.for_setting(bad)  # type: ignore[arg-type]


def test_a_folder_as_store_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="Cannot open the aiforge store"):
        Store(tmp_path)


def test_import_aiforge_loads_neither_sqlite3_nor_platformdirs() -> None:
    probe = "import sys, aiforge; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    loaded = set(out.split())
    assert not loaded & {"sqlite3", "platformdirs", "aiforge.store"}


def test_the_store_imports_only_aiforge_core() -> None:
    root = Path(aiforge.store.__file__).parent
    targets = set()
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("aiforge"):
                targets.add(node.module)
            elif isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names if alias.name.startswith("aiforge")}
    assert {target.split(".")[1] for target in targets} <= {"core", "store"}


def test_a_forked_child_uses_the_parents_store_through_its_own_connection(tmp_path: Path) -> None:
    cache = ResponseCache(Store(tmp_path / "s.sqlite"))
    cache.put("before", {"text": "parent"}, cost=0.0)
    pid = os.fork()
    if pid == 0:  # the child must leave through os._exit whatever happens, never return into pytest
        code = 1
        try:
            if cache.get("before") == {"text": "parent"}:
                cache.put("after", {"text": "child"}, cost=0.0)
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert cache.get("after") == {"text": "child"}


def test_processes_opening_one_new_file_at_once_all_open_it(tmp_path: Path) -> None:
    # Switching a new file to WAL needs it alone; SQLite then answers "database is locked" at once instead
    # of waiting: 4 processes opening 30 new files together met it about once in twelve opens. And a process
    # reading the schema version while another migrated the file once took it for another program's database.
    spawn = multiprocessing.get_context("spawn")
    paths = [str(tmp_path / f"{n}.sqlite") for n in range(30)]
    barrier, errors = spawn.Barrier(4), spawn.Queue()
    children = [spawn.Process(target=workers.open_new_stores, args=(paths, barrier, errors)) for _ in range(4)]
    for child in children:
        child.start()
    for child in children:
        child.join(timeout=120)
    met = []
    while not errors.empty():
        met.append(errors.get())
    assert met == []
    assert [child.exitcode for child in children] == [0, 0, 0, 0]
