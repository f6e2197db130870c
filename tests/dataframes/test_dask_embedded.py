"""The embedded model on a LocalCluster of 2 worker processes: one agent and one loaded model per worker."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pandas as pd
import pytest

pytest.importorskip("distributed")

import dask.dataframe as dd  # noqa: E402
from distributed import Client  # noqa: E402

import aiforge  # noqa: E402,F401 - registers the accessors
from aiforge.batch import embedded  # noqa: E402
from aiforge.batch.embedded import EmbeddedModelWarning  # noqa: E402
from aiforge.core.errors import ChatModelVectorsWarning
from aiforge.dataframes.dask import job_summary  # noqa: E402
from tests.support.dask_cluster import local_client  # noqa: E402

pytestmark = pytest.mark.embedded

# One llama.cpp thread per worker: two workers fill the machine's two cores.
SETTINGS = {"provider": "local", "LOCAL_THREADS": 1, "MAX_TOKENS": 32, "cache": False}


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    with local_client() as dask_client:
        yield dask_client


def loaded_agents() -> list[tuple[int, bool]]:
    """This worker's agents: (id, whether its model is in memory)."""
    from aiforge.dataframes import partition

    return [(id(agent), agent.provider.engine.loaded) for agent in partition._agents.values()]


def test_each_worker_loads_the_model_once_and_reuses_its_agent(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    frame = pd.DataFrame({"city": ["Paris", "Rome", "Oslo", "Lima"]}, index=[10, 11, 12, 13])
    ddf = dd.from_pandas(frame, npartitions=4)
    first = ddf.aiforge.map("Say one word about {city}.", **SETTINGS).compute()
    assert first.index.tolist() == [10, 11, 12, 13] and first["response"].notna().all()
    agents = client.run(loaded_agents)
    assert sorted(len(found) for found in agents.values()) == [1, 1], "each worker ran a partition"
    assert all(found[0][1] for found in agents.values())
    monkeypatch.setattr(embedded, "_warned", False)  # a fresh client process
    with pytest.warns(EmbeddedModelWarning) as caught:
        capital = ddf.aiforge.classify("Is {city} a capital?", labels=["yes", "no"], **SETTINGS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmbeddedModelWarning)
        answers = capital.compute()  # the workers stay quiet: the client warned for them
    assert len(caught) == 1 and client.run(lambda: embedded._warned) == {w: True for w in agents}
    assert answers.index.tolist() == [10, 11, 12, 13] and set(answers) <= {"yes", "no"}
    assert job_summary(capital).failed == []
    assert client.run(loaded_agents) == agents


def test_dedup_on_the_embedded_models_vectors_warns_once_on_the_client(client: Client) -> None:
    frame = pd.DataFrame({"review": ["Great kettle", "Great kettle!", "Broke after a week", "Lovely lamp"]})
    with pytest.warns(ChatModelVectorsWarning) as caught:
        ids = dd.from_pandas(frame, npartitions=2).aiforge.dedup(
            "review", threshold=0.99, EMBEDDING_PROVIDER="local", **SETTINGS
        )
    assert [str(w.message).split(",")[0] for w in caught] == ["dedup: SmolLM2-135M-Instruct is a chat model"]
    assert ids.index.tolist() == [0, 1, 2, 3] and ids.attrs["aiforge"].embedding.embedded == 4
