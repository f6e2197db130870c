"""The log keeps a turn's own latency apart from its wait for a turn (``queue_ms``).

Against the fake HTTP server through the real SDK: a batch's pool (``concurrency``) and the rate pacer make
items wait; the assertions compare the recorded figures with each other and with the waits the code
requested (an ``asyncio.sleep`` never ends early), never with the wall clock.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import aiforge
from aiforge import ChatAgent
from aiforge.providers import pacing
from aiforge.store import Store
from aiforge.store.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
from fakellm import Fault, LLMServer, Reply

DELAY = 0.05
"""The server's answer time: the same for every request."""


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer(latency=DELAY) as srv:
        yield srv


def agent(server: LLMServer, key: str = "sk-test", **settings: object) -> ChatAgent:
    settings.setdefault("MAX_RETRIES", 0)
    return ChatAgent(provider="openai", OPENAI_API_KEY=key, OPENAI_BASE_URL=server.openai_base_url, **settings)


def batch_rows(items: list[str]) -> list[dict[str, float]]:
    """The logged batch turns in the order of ``items``."""
    log = aiforge.logs()
    by_prompt = {row["prompt"]: row for _, row in log[log["kind"] == "batch"].iterrows()}
    return [{"latency_ms": by_prompt[i]["latency_ms"], "queue_ms": by_prompt[i]["queue_ms"]} for i in items]


def test_a_batch_at_concurrency_1_logs_the_queue_apart_from_each_request(server: LLMServer) -> None:
    items = [f"item {i}" for i in range(4)]
    result = agent(server).run_batch(items, concurrency=1)
    rows = batch_rows(items)

    assert not result.failed and server.request_count == 4
    queue = [row["queue_ms"] for row in rows]
    latency = [row["latency_ms"] for row in rows]
    assert queue == sorted(queue) and queue[0] < queue[1] < queue[2] < queue[3]
    # Item n started once items 0..n-1 had finished: it waited at least their own time. (With the wait counted in
    # the latency too, item 2 would have to have waited item 0's time twice.) No comparison of one request's time
    # with another's: a busy machine can stall any one of them.
    for n in range(1, 4):
        assert queue[n] >= sum(latency[:n])
    assert all(latency_ms >= DELAY * 1000 for latency_ms in latency)  # each includes its server's answer
    assert [r.queue_ms for r in result.results] == queue and [r.latency_ms for r in result.results] == latency


def test_the_rate_pacer_s_wait_is_queue_ms_not_latency(server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    window = 2.0
    monkeypatch.setattr(pacing, "WINDOW", window)
    server.latency = 0.0
    items = ["first", "second", "third"]
    # The SDK's first use (imports, a client) blocks the loop for a while; done here, under another key (so
    # another pacer), it does not hold back the batch's later items.
    agent(server, key="sk-warm-up").chat("warm up")
    # RPM=2 in a 2 s window: 1.8 requests may go at once; the second waits 0.2 / 0.95 s and the third
    # 1.2 / 0.95 s for the bucket to refill (pacing.py), all three sent before any answer.
    result = agent(server, RPM=2).run_batch(items, concurrency=3)
    rows = batch_rows(items)

    # Lower bounds only (a sleep never ends early; a busy machine only adds to it).
    waits = sorted(row["queue_ms"] for row in rows)
    assert waits[1] >= 0.99 * 1000 * 0.2 / 0.95 and waits[2] >= 0.99 * 1000 * 1.2 / 0.95
    # The pacer's sleep, inside the turn, is not in its latency: a turn lies inside its batch, so its wait plus
    # its own time never exceed the batch's time; the longest wait counted twice would pass it.
    for row in rows:
        assert row["latency_ms"] + row["queue_ms"] <= 1000 * result.wall_time_s + 0.001
    assert server.request_count == 1 + 3


def test_a_chat_turn_that_waited_for_nothing_logs_no_queue(server: LLMServer) -> None:
    response = agent(server).chat("hello")
    (row,) = aiforge.logs().to_dict("records")
    assert row["queue_ms"] == response.queue_ms == 0.0 and row["latency_ms"] == response.latency_ms > 0


def test_a_log_written_before_queue_ms_gains_the_column_with_zero(tmp_path: Path) -> None:
    path = tmp_path / "v3.sqlite"
    conn = sqlite3.connect(path)
    for statements in MIGRATIONS[:3]:
        for statement in statements:
            conn.execute(statement)
    conn.execute(
        "INSERT INTO log (time, conversation_id, kind, provider, model, prompt, reply, messages_in, messages_out, "
        "tool_calls, input_tokens, output_tokens, cost, latency_ms, trace_id, trace) "
        "VALUES (1, 'c', 'chat', 'p', 'm', 'old prompt', 'old reply', '[]', '[]', '[]', 1, 2, 0, 850, 't', '[]')"
    )
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()

    store = Store(path)
    assert store.schema_version == SCHEMA_VERSION
    (row,) = aiforge.logs(store=path, search="old").to_dict("records")
    assert (row["latency_ms"], row["queue_ms"]) == (850, 0)
    store.close()


@pytest.mark.embedded
def test_the_embedded_model_s_queue_is_queue_ms_not_latency() -> None:
    local = ChatAgent(provider="local", MAX_TOKENS=8, TEMPERATURE=0)
    local.chat("warm up")  # loads the model
    items = ["Say one word.", "Say two words.", "Say three words."]
    # The engine decodes one request at a time (engine.SLOTS): the three items sent at once queue there.
    result = local.run_batch(items, concurrency=3)
    rows = batch_rows(items)

    assert not result.failed
    print(rows, result.wall_time_s)
    queue = sorted(row["queue_ms"] for row in rows)
    assert queue[-1] > 0
    # A turn lies inside its batch, so its wait plus its own time never exceed the batch's time (the figures the
    # code recorded, compared with each other, whatever the machine's speed). Counted in the latency as well, the
    # last item's wait for the two decodings before it would be in both: their sum would pass the batch's time.
    for row in rows:
        assert row["latency_ms"] + row["queue_ms"] <= 1000 * result.wall_time_s + 0.001


def test_a_streamed_turn_logs_the_pacer_s_wait_as_queue_ms_and_a_trace_step(
    server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pacing, "WINDOW", 2.0)
    server.latency = 0.0
    agent(server, key="sk-warm-up").chat("warm up")  # the SDK's first use, under another pacer
    paced = agent(server, RPM=2)
    assert "".join(paced.run_stream("first"))
    started = time.perf_counter()
    assert "".join(paced.run_stream("second"))  # RPM=2 in a 2 s window: it waits for the bucket (pacing.py)
    elapsed_ms = (time.perf_counter() - started) * 1000
    response = paced.last_response
    row = aiforge.logs().query("prompt == 'second'").iloc[0]

    assert response is not None and row["queue_ms"] == response.queue_ms > 0
    (wait,) = [r for r in response.trace if r["step"] == "wait"]
    assert wait["name"] == "pacer" and wait["latency_ms"] == pytest.approx(response.queue_ms)
    # The wait is in the turn (inside the streamed model call's time) but not in its latency.
    (call,) = [r for r in response.trace if r["step"] == "model"]
    assert call["start_ms"] <= wait["start_ms"] and call["latency_ms"] >= wait["latency_ms"]
    assert row["latency_ms"] == response.latency_ms and row["latency_ms"] + row["queue_ms"] <= elapsed_ms
    assert server.request_count == 1 + 2


def test_a_retry_s_backoff_is_latency_not_queue_ms(server: LLMServer) -> None:
    # A retry is the request's own time (it failed and went again), not a wait for a turn behind other requests.
    server.enqueue(Fault(500), Reply(text="second time lucky"))
    response = agent(server, MAX_RETRIES=1).chat("hello")
    row = aiforge.logs().iloc[0]

    (retry,) = [r for r in response.trace if r["step"] == "retry"]
    assert row["queue_ms"] == response.queue_ms == 0.0
    assert row["latency_ms"] == response.latency_ms >= retry["latency_ms"] + 2 * DELAY * 1000  # two answers
    assert [r["step"] for r in row["trace"]] == ["retry", "model"]  # the log keeps the trace
    assert server.request_count == 2
