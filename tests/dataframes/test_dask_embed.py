"""ddf.aiforge.embed on a LocalCluster of 2 worker processes against fakellm's /v1/embeddings."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")
pytestmark = pytest.mark.slow  # a LocalCluster of 2 worker processes (seconds to start, more under load)

import dask.dataframe as dd  # noqa: E402
from distributed import Client  # noqa: E402

import aiforge  # noqa: E402,F401 - registers the accessors
from aiforge import ChatAgent  # noqa: E402
from aiforge.core.types import UsageError  # noqa: E402
from aiforge.dataframes.dask import job_summary  # noqa: E402
from aiforge.semantic.embed_column import embedding_matrix  # noqa: E402
from fakellm import LLMServer  # noqa: E402
from tests.support.dask_cluster import local_client, openai_env  # noqa: E402

KEY = "sk-dask-embed-secret-0123456789"


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer(strict=True, latency=0.01) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server: LLMServer) -> Iterator[Client]:
    # The key reaches workers through their environment only, as on a real cluster.
    with local_client(openai_env(server, KEY), threads_per_worker=2) as dask_client:
        yield dask_client


@pytest.fixture(autouse=True)
def local_env(monkeypatch: pytest.MonkeyPatch, server: LLMServer) -> None:
    """The test process computes the pandas reference against the same server."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)


def frame(count: int) -> pd.DataFrame:
    index = pd.Index(range(500, 500 + count), name="id")
    texts = [None if i % 7 == 0 else f"review {i % 5} of product {i}" for i in index]
    return pd.DataFrame({"review": texts, "stars": [i % 5 for i in index]}, index=index)


def test_embed_is_lazy_with_the_right_meta_and_equals_the_pandas_accessor(client: Client, server: LLMServer) -> None:
    data = frame(60)
    ddf = dd.from_pandas(data, npartitions=6)
    server.reset()
    result = ddf.aiforge.embed("review", provider="openai", cache=False)
    assert server.request_count == 0
    assert result.name == "review_embedding" and result.dtype == object
    computed = result.compute()
    assert server.request_count == 6  # one request a partition
    assert list(computed.index) == list(data.index)
    expected = data.aiforge.embed("review", agent=ChatAgent(provider="openai", memory="none"), cache=False)
    assert [v is None for v in computed] == [v is None for v in expected] == data["review"].isna().tolist()
    assert np.array_equal(embedding_matrix(computed.dropna()), embedding_matrix(expected.dropna()))
    summary = job_summary(result)
    assert summary.partitions == 6 and summary.rows == 60
    sent = [text for request in server.requests[:6] for text in request.body["input"]]
    assert summary.total_tokens == sum(len(text) // 4 + 1 for text in sent)  # fakellm's count
    assert summary.total_cost == pytest.approx(summary.total_tokens * 0.02 / 1e6)


def test_requests_in_flight_across_the_cluster_never_exceed_concurrency(client: Client, server: LLMServer) -> None:
    ddf = dd.from_pandas(frame(80), npartitions=8)
    server.reset()
    ddf.aiforge.embed("review", provider="openai", cache=False, concurrency=1).compute()
    assert server.request_count == 8 and server.max_in_flight == 1


def test_an_unknown_column_or_a_key_is_refused_before_the_graph(client: Client) -> None:
    ddf = dd.from_pandas(frame(4), npartitions=1)
    with pytest.raises(UsageError, match="embed: no column 'reviews'"):
        ddf.aiforge.embed("reviews")
    with pytest.raises(UsageError, match="OPENAI_API_KEY: a key passed here"):
        ddf.aiforge.embed("review", OPENAI_API_KEY=KEY)
    with pytest.raises(UsageError, match="embed does not take max_cost=; of the batch options it takes cache="):
        ddf.aiforge.embed("review", max_cost=1.0)
