"""``ResponseCache``: hits and misses, idempotent puts, and no corruption or duplicates under concurrency."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from pathlib import Path

import pytest

from aiforge.store import ResponseCache, Store, reply_fingerprint
from tests.store import workers


@pytest.fixture
def cache(tmp_path: Path) -> ResponseCache:
    return ResponseCache(Store(tmp_path / "cache.sqlite"))


def rows_of(path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        return conn.execute("SELECT key, payload FROM responses ORDER BY key").fetchall()


def test_a_stored_reply_is_a_hit_and_an_unknown_key_a_miss(cache: ResponseCache) -> None:
    cache.put("k", {"text": "hello", "usage": {"input_tokens": 3}}, cost=0.25)
    assert cache.get("k") == {"text": "hello", "usage": {"input_tokens": 3}}
    assert cache.get("other") is None
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.entries, stats.saved_cost) == (1, 1, 1, 0.25)


def test_putting_a_key_again_keeps_the_first_reply_and_one_row(cache: ResponseCache) -> None:
    cache.put("k", {"text": "first"}, cost=0.1)
    cache.put("k", {"text": "second"}, cost=0.2)
    assert cache.get("k") == {"text": "first"}
    assert cache.stats().entries == 1


def test_clear_deletes_replies_and_resets_counts(cache: ResponseCache) -> None:
    cache.put("k", {"text": "x"}, cost=0.1)
    cache.get("k")
    cache.clear()
    assert cache.get("k") is None
    assert cache.stats().entries == 0 and cache.stats().hits == 0


@pytest.mark.parametrize("cost", [-0.1, float("nan"), float("inf")])
def test_a_cost_that_is_not_a_finite_non_negative_number_is_refused(cache: ResponseCache, cost: float) -> None:
    with pytest.raises(ValueError, match="finite number >= 0"):
        cache.put("k", {"text": "x"}, cost=cost)


def test_a_reply_with_a_lone_surrogate_round_trips(cache: ResponseCache) -> None:
    cache.put("k", {"text": "bad \udcff byte, café"}, cost=0.0)
    assert cache.get("k") == {"text": "bad \udcff byte, café"}


def test_many_threads_writing_one_cache_leave_one_intact_row_per_key(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(Store(path))
    keys = [f"key-{i}" for i in range(100)]
    errors: list[BaseException] = []

    def write_and_read(offset: int) -> None:
        try:
            for i in range(200):
                key = keys[(i + offset) % len(keys)]
                cache.put(key, {"text": f"reply to {key}"}, cost=0.001)
                assert cache.get(key) == {"text": f"reply to {key}"}
        except BaseException as exc:  # noqa: BLE001 - reported to the main thread
            errors.append(exc)

    threads = [threading.Thread(target=write_and_read, args=(n * 7,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert rows_of(path) == sorted((key, f'{{"text":"reply to {key}"}}') for key in keys)


@pytest.mark.slow
def test_several_processes_writing_one_file_leave_one_intact_row_per_key(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    keys = [f"key-{i:03}" for i in range(120)]
    spawn = multiprocessing.get_context("spawn")
    # Overlapping slices: every key is written by two processes at about the same time.
    slices = [keys[n * 30 : n * 30 + 60] for n in range(4)]
    children = [spawn.Process(target=workers.put_replies, args=(str(path), part)) for part in slices]
    for child in children:
        child.start()
    for child in children:
        child.join(timeout=120)
        assert child.exitcode == 0
    assert [key for key, _ in rows_of(path)] == keys
    assert ResponseCache(Store(path)).get("key-042") == {"text": "reply to key-042"}


def test_the_memory_store_is_shared_by_every_cache_and_thread_of_the_process() -> None:
    writer = ResponseCache(Store.for_setting("memory"))
    writer.clear()
    thread = threading.Thread(target=writer.put, args=("k", {"text": "shared"}), kwargs={"cost": 0.0})
    thread.start()
    thread.join()
    reader = ResponseCache(Store.for_setting("memory"))
    assert reader.get("k") == {"text": "shared"}
    assert ResponseCache(Store(":memory:")).get("k") is None


def test_no_key_or_auth_header_is_ever_written(tmp_path: Path) -> None:
    secret = "sk-live-DO-NOT-STORE-9f8e7d"
    settings = {
        "provider": "openai",
        "base_url": f"https://user:{secret}@gateway.example.com/v1?api-key={secret}",
        "api_key": secret,
        "headers": {"Authorization": f"Bearer {secret}"},
        "model": "gpt-4o-mini",
        "temperature": 0.0,
    }
    key = reply_fingerprint(
        provider=settings["provider"],
        endpoint=settings["base_url"],
        model=settings["model"],
        params={"temperature": settings["temperature"]},
        messages=[{"role": "user", "content": "Hi"}],
    )
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(Store(path))
    cache.put(key, {"text": "Hello"}, cost=0.01)
    assert cache.get(key) == {"text": "Hello"}
    written = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert key.encode() in written
    assert secret.encode() not in written and b"Bearer" not in written
