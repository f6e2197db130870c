"""``Checkpoint``: finished items survive a crash; a checkpoint of another batch is refused unless restarted."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from aiforge.core.errors import CheckpointMismatchError
from aiforge.store import Checkpoint, Store, batch_fingerprint, fingerprint
from tests.store import workers

SETTINGS = {"provider": "openai", "model": "gpt-4o-mini", "temperature": 0}
ITEMS = [fingerprint(f"review {i}") for i in range(5)]


def test_recorded_items_are_done_after_reopening(tmp_path: Path) -> None:
    batch = batch_fingerprint(ITEMS, SETTINGS)
    checkpoint = Checkpoint(Store(tmp_path / "c.sqlite"), batch)
    checkpoint.record(0, payload={"text": "good"})
    checkpoint.record(3, error="RateLimitError: slow down")
    done = Checkpoint(Store(tmp_path / "c.sqlite"), batch).done()
    assert sorted(done) == [0, 3]
    assert (done[0].status, done[0].payload, done[0].error, done[0].item) == ("ok", {"text": "good"}, None, ITEMS[0])
    assert (done[3].status, done[3].payload, done[3].error) == ("failed", None, "RateLimitError: slow down")


def test_recording_an_item_again_replaces_it(tmp_path: Path) -> None:
    checkpoint = Checkpoint(Store(tmp_path / "c.sqlite"), batch_fingerprint(ITEMS, SETTINGS))
    checkpoint.record(1, error="timeout")
    checkpoint.record(1, payload={"text": "fine now"})
    assert checkpoint.done()[1].status == "ok"
    assert len(checkpoint.done()) == 1


def test_an_index_outside_the_batch_is_refused(tmp_path: Path) -> None:
    checkpoint = Checkpoint(Store(tmp_path / "c.sqlite"), batch_fingerprint(ITEMS, SETTINGS))
    with pytest.raises(IndexError, match="not in this batch of 5 items"):
        checkpoint.record(5, payload={})


@pytest.mark.parametrize(
    ("items", "settings", "expected"),
    [
        (ITEMS[:4], SETTINGS, "it had 5 items, this batch has 4"),
        (ITEMS, {**SETTINGS, "model": "gpt-4o"}, "the settings differ"),
        ([*ITEMS[:2], fingerprint("edited"), *ITEMS[3:]], SETTINGS, "the inputs differ, first at item 2"),
    ],
)
def test_a_checkpoint_of_another_batch_is_refused_saying_what_differs(
    tmp_path: Path, items: list[str], settings: dict[str, object], expected: str
) -> None:
    path = tmp_path / "c.sqlite"
    first = Checkpoint(Store(path), batch_fingerprint(ITEMS, SETTINGS))
    for index in range(4):
        first.record(index, payload={"n": index})
    with pytest.raises(CheckpointMismatchError) as caught:
        Checkpoint(Store(path), batch_fingerprint(items, settings))
    message = str(caught.value)
    assert expected in message and str(path) in message
    assert "restart=True (its 4 finished items are discarded)" in message
    assert isinstance(caught.value, ValueError)
    assert sorted(Checkpoint(Store(path), batch_fingerprint(ITEMS, SETTINGS)).done()) == [0, 1, 2, 3]


def test_restart_discards_the_checkpoint_of_another_batch(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    Checkpoint(Store(path), batch_fingerprint(ITEMS, SETTINGS)).record(0, payload={"n": 0})
    other = batch_fingerprint(ITEMS[:2], SETTINGS)
    assert Checkpoint(Store(path), other, restart=True).done() == {}
    assert Checkpoint(Store(path), other).done() == {}
    with pytest.raises(CheckpointMismatchError):
        Checkpoint(Store(path), batch_fingerprint(ITEMS, SETTINGS))


def test_restart_of_the_same_batch_starts_it_over(tmp_path: Path) -> None:
    batch = batch_fingerprint(ITEMS, SETTINGS)
    Checkpoint(Store(tmp_path / "c.sqlite"), batch).record(0, payload={"n": 0})
    assert Checkpoint(Store(tmp_path / "c.sqlite"), batch, restart=True).done() != {}


def test_kill_9_mid_batch_keeps_every_committed_item_and_an_intact_file(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    items = [fingerprint(i) for i in range(100_000)]
    spawn = multiprocessing.get_context("spawn")
    progress = spawn.Value("q", 0, lock=False)
    child = spawn.Process(target=workers.record_until_killed, args=(str(path), items, progress))
    child.start()
    deadline = time.monotonic() + 120
    while progress.value < 300 and time.monotonic() < deadline and child.is_alive():
        time.sleep(0.01)
    os.kill(child.pid, signal.SIGKILL)
    child.join()
    committed = progress.value
    assert child.exitcode == -signal.SIGKILL and 300 <= committed < len(items)

    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    done = Checkpoint(Store(path), batch_fingerprint(items, {"model": "m"})).done()
    assert set(range(committed)) <= set(done) <= set(range(committed + 1))
    assert all(record.payload == {"text": "x" * 500, "index": index} for index, record in done.items())
