"""``checkpoint=`` is one kind of path everywhere: one SQLite file holding every batch of a call, each under its part's
name (``batch.resume``); a folder is refused in one line naming a file; a file written before keeps resuming."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest

import aiforge  # noqa: F401  (registers the accessors)
from aiforge import ChatAgent
from aiforge.batch.resume import CheckpointPart, checkpoint_file, interrupted_work
from aiforge.core.errors import CheckpointMismatchError, UsageError
from aiforge.providers.scripted import ScriptedProvider
from aiforge.store import Checkpoint, Store, batch_fingerprint, fingerprint
from aiforge.store.schema import APPLICATION_ID, MIGRATIONS

SETTINGS = {"provider": "openai", "model": "gpt-4o-mini"}
FRAME = pd.DataFrame({"review": [f"review {i}" for i in range(6)], "label": ["ok"] * 6})


def batch(*texts: str) -> object:
    return batch_fingerprint([fingerprint(text) for text in texts], SETTINGS)


def test_one_file_holds_several_batches_each_under_its_part(tmp_path: Path) -> None:
    store = Store(tmp_path / "call.sqlite")
    level0 = Checkpoint(store, batch("a", "b"), part="level0")  # type: ignore[arg-type]
    level1 = Checkpoint(store, batch("ab"), part="level1")  # type: ignore[arg-type]
    level0.record(1, payload={"text": "B"})
    level1.record(0, payload={"text": "AB"})
    assert list(Checkpoint(store, batch("a", "b"), part="level0").done()) == [1]  # type: ignore[arg-type]
    assert list(Checkpoint(store, batch("ab"), part="level1").done()) == [0]  # type: ignore[arg-type]


def test_another_batch_under_a_part_is_a_mismatch_naming_the_part_and_restart_replaces_only_it(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "call.sqlite")
    Checkpoint(store, batch("a"), part="p1").record(0, payload={"text": "A"})  # type: ignore[arg-type]
    Checkpoint(store, batch("b"), part="p2").record(0, payload={"text": "B"})  # type: ignore[arg-type]
    with pytest.raises(CheckpointMismatchError, match="holds the checkpoint of another batch for p1"):
        Checkpoint(store, batch("c"), part="p1")  # type: ignore[arg-type]
    assert Checkpoint(store, batch("c"), part="p1", restart=True).done() == {}  # type: ignore[arg-type]
    assert list(Checkpoint(store, batch("b"), part="p2").done()) == [0]  # type: ignore[arg-type]


def test_a_file_written_before_parts_keeps_its_batch(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    for statements in MIGRATIONS[:4]:
        for statement in statements:
            conn.execute(statement)
    old = batch("a", "b")
    conn.execute(
        "INSERT INTO checkpoint_batch (id, batch, items, inputs, settings, created) VALUES (1, ?, 2, ?, ?, 0)",
        (old.key, old.inputs, old.settings),  # type: ignore[attr-defined]
    )
    conn.execute(
        "INSERT INTO checkpoint_items (batch, idx, item, status, payload, error, finished) "
        "VALUES (?, 0, ?, 'ok', '{\"text\": \"A\"}', NULL, 0)",
        (old.key, old.items[0]),  # type: ignore[attr-defined]
    )
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    conn.close()
    assert list(Checkpoint(Store(path), old).done()) == [0]  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [True, "memory"])
def test_a_checkpoint_that_names_no_file_is_refused(value: object) -> None:
    with pytest.raises(UsageError, match=r"^run_batch: checkpoint= is a file path"):
        checkpoint_file(value)


def test_a_part_is_a_path_to_its_file() -> None:
    part = CheckpointPart("run.sqlite", "round1")
    assert checkpoint_file(part) == "run.sqlite" and part.part == "round1"


def agent() -> ChatAgent:
    return ChatAgent(provider=ScriptedProvider(default="ok"))


def calls(chat: ChatAgent) -> int:
    provider = chat.provider
    assert isinstance(provider, ScriptedProvider)
    return len(provider.calls)


@pytest.mark.parametrize(
    "call",
    [
        lambda data, **kw: data.aiforge.map("Say {review}", **kw),
        lambda data, **kw: data.aiforge.agg("What do the {review}s say?", **kw),
        lambda data, **kw: data.aiforge.evaluate({"p": "{review}"}, {"m": kw.pop("agent")}, truth="label", **kw),
    ],
    ids=["map", "agg", "evaluate"],
)
def test_every_operation_takes_the_same_kind_of_checkpoint(tmp_path: Path, call: object) -> None:
    """A folder is refused before a request; a file resumes: the same call again, memory cleared, asks nothing."""
    chat = agent()
    with pytest.raises(UsageError, match=rf"checkpoint= is one file .*{tmp_path} is a folder: pass a file"):
        call(FRAME, agent=chat, checkpoint=tmp_path)  # type: ignore[operator]
    assert calls(chat) == 0
    call(FRAME, agent=chat, checkpoint=tmp_path / "run.sqlite", cache=False)  # type: ignore[operator]
    asked = calls(chat)
    assert asked > 0 and [path.name for path in tmp_path.glob("*.sqlite")] == ["run.sqlite"]
    interrupted_work.clear()  # a restarted kernel: only the file remembers
    call(FRAME, agent=chat, checkpoint=tmp_path / "run.sqlite", cache=False)  # type: ignore[operator]
    assert calls(chat) == asked


def test_topk_refuses_a_folder_before_a_request(tmp_path: Path) -> None:
    chat = agent()
    with pytest.raises(UsageError, match=rf"^topk: checkpoint= is one file .*{tmp_path} is a folder"):
        FRAME.aiforge.topk("the best {review}", 2, agent=chat, checkpoint=tmp_path)
    assert calls(chat) == 0
