"""ddf.aiforge.dedup on a LocalCluster of 2 worker processes against the test server: the workers embed through
``/v1/embeddings``, the client blocks and asks the borderline pairs, and the ids equal the pandas accessor's."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest

pytest.importorskip("distributed")
pytestmark = pytest.mark.slow  # a LocalCluster of 2 worker processes (seconds to start, more under load)

import dask.dataframe as dd  # noqa: E402
from distributed import Client  # noqa: E402

import aiforge  # noqa: E402,F401 - registers the accessors
from aiforge import ChatAgent  # noqa: E402
from aiforge.core.types import UsageError  # noqa: E402
from fakellm import LLMServer, RecordedRequest, Reply  # noqa: E402
from tests.dataframes.test_dedup import FRAME, TICKETS, TRUTH  # noqa: E402
from tests.support.dask_cluster import local_client, openai_env  # noqa: E402

KEY = "sk-dask-dedup-secret-0123456789"
SETTINGS = {"provider": "openai", "model": "gpt-4o-mini", "cache": False, "MAX_RETRIES": 0}


def same_ticket(request: RecordedRequest) -> Reply:
    """The model every test wishes it had: two tickets are duplicates when they are the same planted ticket."""
    asked = request.last_user_text
    left, right = (part.split("\n\n")[0] for part in asked.split("text:\n")[1:3])
    truth = dict(TICKETS)
    same = truth[left] == truth[right]
    properties = (request.output_schema or {}).get("properties", {})
    return Reply(output={"value": same} if "value" in properties else same)


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer(default=same_ticket) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server: LLMServer) -> Iterator[Client]:
    with local_client(openai_env(server, KEY)) as dask_client:
        yield dask_client


@pytest.fixture(autouse=True)
def client_env(monkeypatch: pytest.MonkeyPatch, server: LLMServer) -> None:
    """The client (the confirmation batch, the pandas reference) asks the same server."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)


def requests_to(server: LLMServer, path: str) -> int:
    return sum(request.path.endswith(path) for request in server.requests)


def test_dask_dedup_with_confirm_equals_pandas_and_asks_only_borderline_pairs(
    client: Client, server: LLMServer
) -> None:
    ddf = dd.from_pandas(FRAME, npartitions=4)
    server.reset()
    ids = ddf.aiforge.dedup("ticket", threshold=0.9, confirm=True, **SETTINGS)
    assert isinstance(ids, pd.Series) and ids.tolist() == TRUTH.tolist() and ids.index.tolist() == FRAME.index.tolist()
    report = ids.attrs["aiforge"]
    assert requests_to(server, "/embeddings") == 4 == report.embedding.requests  # one per partition
    assert requests_to(server, "/chat/completions") == report.asked == 3 == report.confirmed
    assert report.embedding.embedded == len(FRAME) and report.total_tokens > 0
    held = ddf.compute()  # Dask's string dtypes, as the ids carry them
    agent = ChatAgent(memory="none", **{k: v for k, v in SETTINGS.items() if k != "cache"})
    expected = held.aiforge.dedup("ticket", threshold=0.9, confirm=True, agent=agent, cache=False)
    pd.testing.assert_series_equal(ids, expected)
    joined = ddf.merge(ids.to_frame(), left_index=True, right_index=True).compute()
    assert joined["duplicate_of"].to_dict() == TRUTH.to_dict()


def test_dask_dedup_finds_duplicates_across_partitions_and_refuses_keys(client: Client) -> None:
    # One partition per pair of rows: every planted rewording sits in another partition than its original.
    ddf = dd.from_pandas(FRAME, npartitions=8)
    ids = ddf.aiforge.dedup("ticket", threshold=0.8, **SETTINGS)
    assert ids.tolist() == TRUTH.tolist() and ids.attrs["aiforge"].asked == 0
    with pytest.raises(UsageError, match="OPENAI_API_KEY: a key passed here would travel"):
        ddf.aiforge.dedup("ticket", OPENAI_API_KEY=KEY, provider="openai")
    with pytest.raises(UsageError, match="tickets"):
        ddf.aiforge.dedup("tickets")
