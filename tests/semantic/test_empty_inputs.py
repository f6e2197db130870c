"""Every operation on an empty DataFrame or Series returns at once, with no request: an empty result of its
documented shape (columns, dtypes, index, its report in ``.attrs["aiforge"]``), or agg's and evaluate's one-line
UsageError. Each call runs in a thread joined with a generous timeout: a hang fails the test instead of the run."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pytest
from pydantic import BaseModel

import aiforge  # noqa: F401 - registers the accessors
from aiforge import ChatAgent
from aiforge.batch.results import BatchResult
from aiforge.core.types import UsageError
from aiforge.providers.scripted import ScriptedProvider
from aiforge.semantic.clusters import ClusterReport
from aiforge.semantic.embeddings import EmbeddingReport
from aiforge.semantic.join import JoinReport
from aiforge.semantic.near_duplicates import DedupReport
from aiforge.semantic.topk import TopKRun

HANG_GUARD = 60.0
"""Seconds a call may take before it counts as hung: a guard against never returning, not a speed limit."""

INDEX = pd.Index([], dtype="str", name="id")
FRAME = pd.DataFrame({"text": pd.Series([], dtype="str"), "truth": pd.Series([], dtype="str")}, index=INDEX)
SERIES = pd.Series([], dtype="str", name="text", index=INDEX)
TEXT = str(SERIES.dtype)
"""The dtype of text: ``str`` from pandas 3, ``object`` before (the lowest pandas CI tests)."""
RIGHT = pd.DataFrame({"name": ["printer", "laptop"]}, index=pd.Index(["P1", "P2"], name="product"))
LABELS = ["urgent", "routine"]


class Person(BaseModel):
    name: str
    age: int


@dataclass(frozen=True)
class Shape:
    """What an empty result looks like: its type, columns and dtypes (or a Series' name and dtype), rows, report."""

    kind: type
    dtypes: dict[str, str] = field(default_factory=dict)
    name: str | None = None
    dtype: str | None = None
    report: type | None = BatchResult
    rows: int = 0
    pairs: bool = False
    """A join's index: (left, right) labels rather than the input's."""


def called_in_time(call: Callable[[], Any]) -> Any:
    """``call()``'s result (or its exception, raised here); a call still running after HANG_GUARD fails the test."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = call()
        except BaseException as error:  # noqa: BLE001 - handed to the test thread
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(HANG_GUARD)
    if thread.is_alive():
        pytest.fail(f"the call on empty input had not returned after {HANG_GUARD:.0f} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


Operation = Callable[[ChatAgent], Any]

OPERATIONS: dict[str, tuple[Operation, Shape | str]] = {
    "df.map": (
        lambda a: FRAME.aiforge.map("Say {text}", agent=a), Shape(pd.DataFrame, {"response": "string"})
    ),
    "df.map output=": (
        lambda a: FRAME.aiforge.map("Who is in {text}?", output=Person, agent=a),
        Shape(pd.DataFrame, {"name": "string", "age": "Int64"}),
    ),
    "s.map": (lambda a: SERIES.aiforge.map("Say {value}", agent=a), Shape(pd.DataFrame, {"response": "string"})),
    "df.classify": (
        lambda a: FRAME.aiforge.classify("Triage {text}", LABELS, agent=a),
        Shape(pd.Series, name="label", dtype="category"),
    ),
    "s.classify": (
        lambda a: SERIES.aiforge.classify("Triage {value}", LABELS, agent=a),
        Shape(pd.Series, name="label", dtype="category"),
    ),
    "df.filter": (
        lambda a: FRAME.aiforge.filter("Is {text} urgent?", agent=a),
        Shape(pd.DataFrame, {"text": TEXT, "truth": TEXT}),
    ),
    "s.filter": (
        lambda a: SERIES.aiforge.filter("Is {value} urgent?", agent=a), Shape(pd.Series, name="text", dtype=TEXT)
    ),
    "df.extract": (
        lambda a: FRAME.aiforge.extract("text", output=Person, agent=a),
        Shape(pd.DataFrame, {"name": "string", "age": "Int64"}),
    ),
    "s.extract": (
        lambda a: SERIES.aiforge.extract(Person, agent=a), Shape(pd.DataFrame, {"name": "string", "age": "Int64"})
    ),
    "df.judge": (
        lambda a: FRAME.aiforge.judge("Is it polite?", column="text", agent=a),
        Shape(pd.DataFrame, {"score": "Int64", "reason": "string"}),
    ),
    "s.judge": (
        lambda a: SERIES.aiforge.judge("Is it polite?", agent=a),
        Shape(pd.DataFrame, {"score": "Int64", "reason": "string"}),
    ),
    "df.embed": (
        lambda a: FRAME.aiforge.embed("text", agent=a),
        Shape(pd.Series, name="text_embedding", dtype="object", report=EmbeddingReport),
    ),
    "s.embed": (
        lambda a: SERIES.aiforge.embed(agent=a),
        Shape(pd.Series, name="text_embedding", dtype="object", report=EmbeddingReport),
    ),
    "df.dedup": (
        lambda a: FRAME.aiforge.dedup("text", agent=a),
        Shape(pd.Series, name="duplicate_of", dtype=TEXT, report=DedupReport),
    ),
    "s.dedup confirm=": (
        lambda a: SERIES.aiforge.dedup(confirm=True, agent=a),
        Shape(pd.Series, name="duplicate_of", dtype=TEXT, report=DedupReport),
    ),
    "df.cluster": (
        lambda a: FRAME.aiforge.cluster("text", 3, agent=a),
        Shape(pd.Series, name="cluster", dtype="Int64", report=ClusterReport),
    ),
    "s.cluster": (
        lambda a: SERIES.aiforge.cluster(2, agent=a),
        Shape(pd.Series, name="cluster", dtype="Int64", report=ClusterReport),
    ),
    "df.topk listwise": (
        lambda a: FRAME.aiforge.topk("the most urgent: {text}", 3, agent=a),
        Shape(pd.DataFrame, {"text": TEXT, "truth": TEXT, "rank": "int64"}, report=TopKRun),
    ),
    "df.topk pairwise": (
        lambda a: FRAME.aiforge.topk("the most urgent: {text}", 3, method="pairwise", agent=a),
        Shape(pd.DataFrame, {"text": TEXT, "truth": TEXT, "rank": "int64"}, report=TopKRun),
    ),
    "s.topk": (
        lambda a: SERIES.aiforge.topk("the most urgent: {value}", 1, agent=a),
        Shape(pd.DataFrame, {"text": TEXT, "rank": "int64"}, report=TopKRun),
    ),
    "df.join left side empty": (
        lambda a: FRAME.aiforge.join(RIGHT, "Is {left.text} about {right.name}?", agent=a),
        Shape(pd.DataFrame, {"text": TEXT, "truth": TEXT, "name": TEXT}, report=JoinReport, pairs=True),
    ),
    "df.join right side empty": (
        lambda a: RIGHT.aiforge.join(FRAME, "Is {right.text} about {left.name}?", agent=a),
        Shape(pd.DataFrame, {"name": TEXT, "text": TEXT, "truth": TEXT}, report=JoinReport, pairs=True),
    ),
    "df.join right side empty, candidates": (
        lambda a: RIGHT.aiforge.join(FRAME, "Is {right.text} about {left.name}?", strategy="candidates", agent=a),
        Shape(pd.DataFrame, {"name": TEXT, "text": TEXT, "truth": TEXT}, report=JoinReport, pairs=True),
    ),
    # how="left" keeps every left row, each with no right row.
    "df.join right side empty, how=left": (
        lambda a: RIGHT.aiforge.join(FRAME, "Is {right.text} about {left.name}?", how="left", agent=a),
        Shape(pd.DataFrame, {"name": TEXT, "text": TEXT, "truth": TEXT}, report=JoinReport, rows=2, pairs=True),
    ),
    "df.agg": (lambda a: FRAME.aiforge.agg("What do the {text}s say?", agent=a), "agg: there are no rows"),
    "df.agg by=": (lambda a: FRAME.aiforge.agg("Sum up {text}", by="truth", agent=a), "agg: there are no rows"),
    "s.agg": (lambda a: SERIES.aiforge.agg("Sum up {value}", agent=a), "agg: there are no rows"),
    "groupby.agg": (lambda a: FRAME.groupby("truth").aiforge.agg("Sum up {text}", agent=a), "agg: there are no rows"),
    "df.evaluate": (
        lambda a: FRAME.aiforge.evaluate({"plain": "Triage {text}"}, {"scripted": a}, truth="truth", labels=LABELS),
        "evaluate: the truth column 'truth' has no value",
    ),
}


@pytest.fixture
def fake() -> Iterator[ScriptedProvider]:
    provider = ScriptedProvider()
    yield provider
    assert provider.calls == [] and provider.embed_calls == []  # nothing was asked of the model


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_an_operation_on_empty_input_returns_at_once_with_its_empty_shape(
    operation: str, fake: ScriptedProvider
) -> None:
    call, expected = OPERATIONS[operation]
    agent = ChatAgent(provider=fake, memory="none")
    if isinstance(expected, str):
        with pytest.raises(UsageError, match=expected) as raised:
            called_in_time(lambda: call(agent))
        assert "\n" not in str(raised.value)
        return
    result = called_in_time(lambda: call(agent))
    assert type(result) is expected.kind
    assert len(result) == expected.rows
    if expected.kind is pd.DataFrame:
        assert {column: str(dtype) for column, dtype in result.dtypes.items()} == expected.dtypes
    else:
        assert (result.name, str(result.dtype)) == (expected.name, expected.dtype)
    if expected.pairs:
        assert list(result.index.names) == ["left", "right"]
    else:
        pd.testing.assert_index_equal(result.index, INDEX)
    assert type(result.attrs["aiforge"]) is expected.report


def test_classify_on_empty_input_keeps_its_labels_as_categories(fake: ScriptedProvider) -> None:
    agent = ChatAgent(provider=fake, memory="none")
    labels = called_in_time(lambda: FRAME.aiforge.classify("Triage {text}", LABELS, agent=agent))
    assert list(labels.cat.categories) == LABELS


@pytest.mark.parametrize("items", [[], FRAME, SERIES], ids=["list", "DataFrame", "Series"])
def test_run_batch_of_nothing_returns_an_empty_batch_result(items: Any, fake: ScriptedProvider) -> None:
    agent = ChatAgent(provider=fake, memory="none")
    batch = called_in_time(lambda: agent.run_batch(items, prompt="Say {text}" if items is FRAME else None))
    assert isinstance(batch, BatchResult)
    assert (len(batch), batch.results, batch.failed, batch.total_cost) == (0, [], [], 0)


@pytest.mark.slow  # a LocalCluster of 2 worker processes
def test_the_dask_accessor_on_an_empty_frame_returns_at_once_with_no_request() -> None:
    pytest.importorskip("distributed")
    import dask.dataframe as dd

    from fakellm import LLMServer, Reply
    from tests.support.dask_cluster import local_client, openai_env

    empty = dd.from_pandas(FRAME.reset_index(drop=True)[["text"]], npartitions=1)
    with LLMServer(default=lambda request: Reply(text="never asked")) as server, local_client(
        openai_env(server, "sk-empty-0123456789")
    ):
        mapped = called_in_time(lambda: empty.aiforge.map("Say {text}", provider="openai").compute())
        labels = called_in_time(lambda: empty.aiforge.classify("Triage {text}", LABELS, provider="openai").compute())
        kept = called_in_time(lambda: empty.aiforge.filter("Is {text} urgent?", provider="openai").compute())
        people = called_in_time(lambda: empty.aiforge.extract("text", Person, provider="openai").compute())
        vectors = called_in_time(lambda: empty.aiforge.embed("text", provider="openai").compute())
        ids = called_in_time(lambda: empty.aiforge.dedup("text", provider="openai"))
        with pytest.raises(UsageError, match="agg: there are no rows"):
            called_in_time(lambda: empty.aiforge.agg("Sum up {text}", provider="openai"))
        assert server.request_count == 0
    assert (len(mapped), list(mapped.columns), str(mapped["response"].dtype)) == (0, ["response"], "string")
    assert (len(labels), str(labels.dtype), list(labels.cat.categories)) == (0, "category", LABELS)
    assert (len(kept), list(kept.columns)) == (0, ["text"])
    assert (len(people), list(people.columns)) == (0, ["name", "age"])
    assert (len(vectors), vectors.name) == (0, "text_embedding")
    assert (len(ids), ids.name) == (0, "duplicate_of")
