"""ddf.aiforge on a LocalCluster of 2 worker processes against the test server: results, limits, keys, faults."""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import BaseModel

pytest.importorskip("distributed")
pytestmark = pytest.mark.slow  # a LocalCluster of 2 worker processes (seconds to start, more under load)

import dask.dataframe as dd  # noqa: E402
from distributed import Client  # noqa: E402

import aiforge  # noqa: E402,F401 - registers the accessors
from aiforge import ChatAgent  # noqa: E402
from aiforge.core.report import OperationReport  # noqa: E402
from aiforge.dataframes.dask import JobSummary, job_summary  # noqa: E402
from fakellm import LLMServer, RecordedRequest, Reply  # noqa: E402
from tests.support.dask_cluster import local_client, openai_env  # noqa: E402

KEY = "sk-dask-secret-0123456789"
LABELS = ["pos", "neg", "neutral"]


class Review(BaseModel):
    sentiment: str
    stars: int


def answer(request: RecordedRequest) -> Reply:
    """Structured requests get a value derived from the row's number; text requests echo the row."""
    text = request.last_user_text
    number = int(text.rsplit("#", 1)[1].split()[0])
    schema = request.output_schema
    if not schema:
        return Reply(text=f"echo {number}")
    kind = schema.get("type")
    if kind == "object" and "properties" in schema and "value" in schema["properties"]:
        inner = schema["properties"]["value"]
        if "enum" in inner:
            return Reply(output={"value": LABELS[number % 3]})
        return Reply(output={"value": number % 2 == 0})
    if "enum" in schema:
        return Reply(output=LABELS[number % 3])
    if kind == "boolean":
        return Reply(output=number % 2 == 0)
    return Reply(output={"sentiment": LABELS[number % 3], "stars": number % 5})


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer(default=answer, latency=0.002) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server: LLMServer) -> Iterator[Client]:
    # The key reaches workers through their environment only, as on a real cluster.
    with local_client(openai_env(server, KEY)) as dask_client:
        yield dask_client


@pytest.fixture(autouse=True)
def worker_env(monkeypatch: pytest.MonkeyPatch, server: LLMServer) -> None:
    """The test process runs the pandas reference against the same server."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)


SETTINGS = {"provider": "openai", "model": "gpt-4o-mini", "cache": False, "MAX_RETRIES": 0}


def rows(count: int) -> pd.DataFrame:
    index = pd.Index(range(1000, 1000 + count), name="id")
    return pd.DataFrame({"review": [f"review #{i} of the product" for i in index]}, index=index)


def pandas_agent() -> ChatAgent:
    return ChatAgent(memory="none", **{k: v for k, v in SETTINGS.items() if k != "cache"})


def test_map_is_lazy_and_equals_the_pandas_accessor(client: Client, server: LLMServer) -> None:
    frame = rows(40)
    ddf = dd.from_pandas(frame, npartitions=4)
    server.reset()
    result = ddf.aiforge.map("Summarise: {review}", **SETTINGS)
    assert server.request_count == 0 and list(result.columns) == ["response"]
    computed = result.compute()
    expected = frame.aiforge.map("Summarise: {review}", agent=pandas_agent(), cache=False)
    pd.testing.assert_frame_equal(computed, expected)


def test_classify_filter_extract_equal_pandas(client: Client) -> None:
    frame = rows(30)
    ddf = dd.from_pandas(frame, npartitions=3)
    agent = pandas_agent()
    labels = ddf.aiforge.classify("Sentiment of {review}", labels=LABELS, **SETTINGS).compute()
    pd.testing.assert_series_equal(
        labels, frame.aiforge.classify("Sentiment of {review}", labels=LABELS, agent=agent, cache=False)
    )
    kept = ddf.aiforge.filter("Is it even? {review}", **SETTINGS).compute()
    # Dask stores text columns as its own string dtype: compare with the same rows as Dask holds them.
    held = ddf.compute()
    pd.testing.assert_frame_equal(kept, held.aiforge.filter("Is it even? {review}", agent=agent, cache=False))
    assert len(kept) == 15
    fields = ddf.aiforge.extract("review", Review, **SETTINGS).compute()
    pd.testing.assert_frame_equal(fields, frame.aiforge.extract("review", Review, agent=agent, cache=False))


def test_the_summary_gathers_every_partition(client: Client) -> None:
    result = dd.from_pandas(rows(24), npartitions=3).aiforge.map("Summarise: {review}", **SETTINGS)
    result.persist().compute()
    summary = job_summary(result)
    assert isinstance(summary, JobSummary)
    assert (summary.partitions, summary.rows, summary.failed) == (3, 24, [])
    assert summary.total_tokens > 0


def test_to_parquet_writes_the_new_columns(client: Client, tmp_path: Path) -> None:
    frame = rows(20)
    dd.from_pandas(frame, npartitions=2).aiforge.extract("review", Review, **SETTINGS).to_parquet(tmp_path / "out")
    written = pd.read_parquet(tmp_path / "out").sort_index()
    assert len(written) == 20 and list(written.columns) == ["sentiment", "stars"]


def test_a_key_in_the_settings_is_refused_before_it_reaches_the_graph(client: Client) -> None:
    with pytest.raises(ValueError, match="workers' environment"):
        dd.from_pandas(rows(4), npartitions=1).aiforge.map("{review}", OPENAI_API_KEY=KEY)


def test_the_key_is_absent_from_everything_the_scheduler_holds(client: Client) -> None:
    result = dd.from_pandas(rows(20), npartitions=2).aiforge.map("Summarise: {review}", **SETTINGS).persist()
    result.compute()

    def held(dask_scheduler: Any) -> bytes:
        import cloudpickle

        tasks = [(repr(ts), ts.run_spec, repr(ts.run_spec)) for ts in dask_scheduler.tasks.values()]
        return cloudpickle.dumps((tasks, dask_scheduler.get_logs(), repr(dask_scheduler.extensions)))

    scheduler_data = client.run_on_scheduler(held)
    assert len(scheduler_data) > 1000 and KEY.encode() not in scheduler_data
    assert KEY not in repr(result.dask) and KEY.encode() not in pickle.dumps(dict(result.dask))
    assert KEY not in str(client.get_worker_logs())


def test_requests_in_flight_across_the_cluster_never_exceed_concurrency(client: Client, server: LLMServer) -> None:
    server.reset()
    server.latency = 0.02
    try:
        result = dd.from_pandas(rows(120), npartitions=6).aiforge.map("{review}", concurrency=3, **SETTINGS)
        assert len(result.compute()) == 120
    finally:
        server.latency = 0.002
    # 2 workers each running a partition at a time: 1 lease each at least, 3 in all at most.
    assert 2 <= server.max_in_flight <= 3


def set_pacing_window(seconds: float) -> None:
    from aiforge.providers import pacing

    pacing.WINDOW = seconds


def test_rpm_is_shared_by_the_workers_so_together_they_stay_under_the_limit(client: Client, server: LLMServer) -> None:
    # The limits' "minute" shrunk to 2 s on both sides; no headers, so only the RPM setting paces.
    client.run(set_pacing_window, 2.0)
    server.reset()
    server.rpm, server.rate_window, server.rate_headers = 60, 2.0, False
    try:
        started = time.perf_counter()
        result = dd.from_pandas(rows(150), npartitions=2).aiforge.map("{review}", RPM=60, **SETTINGS)
        assert result.compute()["response"].notna().all()
        wall = time.perf_counter() - started
    finally:
        server.rpm, server.rate_window, server.rate_headers = None, 60.0, True
        client.run(set_pacing_window, 60.0)
    # Each worker paces at 30 a window: 2 x 30 fit the server's 60; 2 x 60 would have met 429s.
    assert server.rate_limited == 0
    assert wall > 2.0


@pytest.mark.slow
def test_ten_thousand_rows_in_twenty_partitions_equal_pandas(client: Client, server: LLMServer) -> None:
    frame = rows(10_000)
    server.latency = 0.0
    try:
        result = dd.from_pandas(frame, npartitions=20).aiforge.map("Summarise: {review}", concurrency=8, **SETTINGS)
        server.reset()
        computed = result.compute()
        assert server.max_in_flight <= 8
        expected = frame.aiforge.map("Summarise: {review}", agent=pandas_agent(), concurrency=8, cache=False)
    finally:
        server.latency = 0.002
    pd.testing.assert_frame_equal(computed, expected)
    assert job_summary(result).rows == 10_000


@pytest.mark.slow
def test_a_worker_killed_mid_partition_is_retried_and_answered_rows_are_not_asked_again(
    client: Client, server: LLMServer, tmp_path: Path
) -> None:
    frame = rows(400)
    server.reset()
    server.latency = 0.01
    pids = client.run(os.getpid)
    victim = next(iter(pids.values()))
    killed: list[int] = []

    def kill_after_some_answers() -> None:
        server.wait_for_requests(60, timeout=60)
        killed.append(server.request_count)
        os.kill(victim, signal.SIGKILL)

    killer = threading.Thread(target=kill_after_some_answers)
    killer.start()
    try:
        result = dd.from_pandas(frame, npartitions=4).aiforge.map(
            "Summarise: {review}", concurrency=4, checkpoint=tmp_path / "checkpoint.sqlite", **SETTINGS
        )
        computed = result.compute(retries=2)
    finally:
        killer.join()
        server.latency = 0.002
    assert killed, "the worker was not killed mid-run"
    assert computed.index.tolist() == frame.index.tolist()
    assert computed["response"].tolist() == [f"echo {i}" for i in frame.index]
    asked = Counter(request.last_user_text for request in server.requests)
    again = [text for text, count in asked.items() if count > 1]
    # Only a request in flight when the worker died (at most its 2 leases) can be asked again.
    assert len(again) <= 2, again
    assert len(asked) == 400


def test_compute_shows_one_bar_on_the_client_over_the_partitions(
    client: Client, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from aiforge.dataframes.dask import compute

    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    ddf = dd.from_pandas(rows(9), npartitions=3)
    result = ddf.aiforge.map("Say {review}", **SETTINGS)

    computed = compute(result)

    err = capsys.readouterr().err
    assert computed["response"].tolist() == [f"echo {i}" for i in range(1000, 1009)]
    assert "aiforge partitions" in err and "3/3" in err and "aiforge batch" not in err
    assert job_summary(result).partitions == 3


def test_rows_repeated_within_a_partition_are_asked_once_and_the_summary_adds_up_what_was_saved(
    client: Client, server: LLMServer
) -> None:
    frame = rows(24)
    frame["review"] = [f"review #{1000 + i % 4} of the product" for i in range(24)]  # 4 prompts per 8-row partition
    server.reset()
    result = dd.from_pandas(frame, npartitions=3).aiforge.map("Summarise: {review}", **SETTINGS)
    computed = result.persist().compute()
    assert server.request_count == 3 * 4  # deduplicated within each partition, not across them
    assert computed["response"].tolist() == [f"echo {1000 + i % 4}" for i in range(24)]
    saved = job_summary(result).saved
    assert (saved.requests, saved.naive_requests, saved.by_source["dedup"].requests) == (12, 24, 12)
    assert saved.input_tokens > 0 and job_summary(result).cached == 12
    assert isinstance(job_summary(result), OperationReport) and job_summary(result).requests == server.request_count
