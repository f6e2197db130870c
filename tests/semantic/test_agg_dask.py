"""ddf.aiforge.agg on a LocalCluster of 2 worker processes against fakellm: partitions reduce, the client folds."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

pytest.importorskip("distributed")
pytestmark = pytest.mark.slow  # a LocalCluster of 2 worker processes (seconds to start, more under load)

import dask.dataframe as dd  # noqa: E402
from distributed import Client  # noqa: E402

import aiforge  # noqa: E402,F401 - registers the accessors
from aiforge.core.tokens import CHARS_PER_TOKEN  # noqa: E402
from aiforge.core.types import UsageError  # noqa: E402
from fakellm import LLMServer, RecordedRequest, Reply, estimate_input_tokens  # noqa: E402
from tests.support.dask_cluster import local_client, openai_env  # noqa: E402

KEY = "sk-dask-agg-secret-0123456789"
WINDOW = 700
PADDING = "(counted one by one; nothing else to report about them)" * 2
SETTINGS = {"provider": "openai", "model": "gpt-4o-mini", "MAX_RETRIES": 0, "CONTEXT_WINDOW": WINDOW, "MAX_TOKENS": 40}


def answer(request: RecordedRequest) -> Reply:
    """A chunk of rows answers its row count, a fold the sum of its parts' (see tests/semantic/test_aggregate)."""
    text = request.last_user_text
    if "Answer for part" in text:
        rows = sum(int(n) for n in re.findall(r"rows=(\d+)", text))
    else:
        rows = len(re.findall(r"^\[\d+\] ", text, flags=re.MULTILINE))
    return Reply(output={"rows": rows}) if request.output_schema else Reply(text=f"rows={rows} {PADDING}")


def count_of(text: str) -> int:
    return int(re.match(r"rows=(\d+)", text).group(1))  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer(default=answer) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server: LLMServer) -> Iterator[Client]:
    with local_client(openai_env(server, KEY)) as dask_client:
        yield dask_client


@pytest.fixture(autouse=True)
def client_env(monkeypatch: pytest.MonkeyPatch, server: LLMServer) -> None:
    """The fold across partitions runs in the test process."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)


def frame(count: int) -> pd.DataFrame:
    index = pd.Index(range(count), name="id")
    return pd.DataFrame(
        {"review": [f"review #{i}: the product works, more or less" for i in index], "shop": ["a", "b"] * (count // 2)},
        index=index,
    )


def assert_every_request_under_the_window(server: LLMServer) -> None:
    for request in server.requests:
        reserved = request.body["max_completion_tokens"]
        chars = sum(len(message["content"]) for message in request.messages)
        assert chars / CHARS_PER_TOKEN + reserved <= WINDOW
        assert estimate_input_tokens(request.body) + reserved <= WINDOW


def test_partitions_reduce_their_rows_and_the_client_folds_them(client: Client, server: LLMServer) -> None:
    server.reset()
    ddf = dd.from_pandas(frame(400), npartitions=4)
    result = ddf.aiforge.agg("How many {review}s are there?", **SETTINGS)

    assert count_of(result) == 400  # every row of every partition read once
    report: Any = result.attrs["aiforge"]
    assert report.partitions.partitions == 4 and report.partitions.requests > 4
    assert report.requests == server.request_count
    assert report.partitions.largest_request <= report.request_limit and report.largest_request <= report.request_limit
    assert_every_request_under_the_window(server)


def test_by_gives_a_series_by_group_folded_across_partitions(client: Client, server: LLMServer) -> None:
    server.reset()
    ddf = dd.from_pandas(frame(200), npartitions=3)
    result = ddf.aiforge.agg("How many {review}s are there?", by="shop", **SETTINGS)

    assert result.index.tolist() == ["a", "b"] and result.map(count_of).tolist() == [100, 100]
    assert_every_request_under_the_window(server)


def test_a_key_in_the_settings_is_refused_before_any_partition_runs(server: LLMServer) -> None:
    ddf = dd.from_pandas(frame(20), npartitions=2)
    server.reset()
    with pytest.raises(UsageError, match="OPENAI_API_KEY: a key passed here would travel") as caught:
        ddf.aiforge.agg("How many {review}s are there?", OPENAI_API_KEY=KEY, **SETTINGS)
    assert KEY not in str(caught.value)
    assert server.request_count == 0


def test_a_checkpoint_keeps_each_partition_in_a_file_beside_it_and_a_rerun_asks_nothing(
    client: Client, server: LLMServer, tmp_path: Path
) -> None:
    """Partitions reduce on worker processes, perhaps on other hosts: one writer a file (SQLite's write-ahead log
    needs every writer of a file on one host); the fold on the client keeps its levels in the named file."""
    server.reset()
    ddf = dd.from_pandas(frame(200), npartitions=3)
    checkpoint = tmp_path / "agg.sqlite"
    first = ddf.aiforge.agg("How many {review}s are there?", checkpoint=checkpoint, **SETTINGS)
    assert count_of(first) == 200 and server.request_count > 3
    beside = sorted(path.name for path in tmp_path.glob("agg.partition-*.sqlite"))
    assert len(beside) == 3 and checkpoint.exists()
    server.reset()
    again = ddf.aiforge.agg("How many {review}s are there?", checkpoint=checkpoint, **SETTINGS)
    assert count_of(again) == 200 and server.request_count == 0
