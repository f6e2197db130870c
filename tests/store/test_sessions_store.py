"""Sessions and the log at the store level: the v1 -> v2 migration, where the default store lives, no secrets."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import aiforge
from aiforge import ChatAgent, ScriptedProvider
from aiforge.store import ResponseCache, Store
from aiforge.store.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
from aiforge.store.sessions import Sessions


def test_a_version_1_file_gains_the_session_and_log_tables_and_keeps_its_cache(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    for statement in MIGRATIONS[0]:
        conn.execute(statement)
    conn.execute("INSERT INTO responses VALUES ('k', '{\"reply\": \"kept\"}', 0.5, 0)")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()

    store = Store(path)
    assert store.schema_version == SCHEMA_VERSION and ResponseCache(store).get("k") == {"reply": "kept"}
    Sessions(store).save("s", conversation_id="c", history=[], summary=None, memory_mode="buffer")
    assert Sessions(store).version("s") == 1 and Sessions(store).names() == ["s"]
    store.close()


def test_the_default_store_is_in_the_user_data_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AIFORGE_STORE")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    ChatAgent(provider=ScriptedProvider(), session="default-place").chat("hello")
    assert (tmp_path / "data" / "aiforge" / "store.sqlite").exists()
    assert list(aiforge.logs("default-place")["prompt"]) == ["hello"]
    from aiforge.store.db import close_shared

    close_shared(tmp_path)


def test_no_key_reaches_the_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from fakellm import LLMServer

    secret = "sk-never-stored-0123456789"
    with LLMServer() as server:
        agent = ChatAgent(
            provider="openai", OPENAI_API_KEY=secret, OPENAI_BASE_URL=server.openai_base_url, session="keyless",
        )
        agent.chat("Hello")
        agent.run_batch(["a", "b"])
    store = Store.for_setting(agent.settings.STORE, kind="data")
    with store.read() as conn:  # the rows reach the main file too, not only the -wal
        conn.execute("PRAGMA wal_checkpoint(FULL)")
    files = list(Path(agent.settings.STORE).parent.iterdir())
    assert len(aiforge.logs()) == 3
    assert all(secret.encode() not in path.read_bytes() for path in files)
