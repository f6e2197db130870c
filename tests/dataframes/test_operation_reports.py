"""Every operation's report reads the same four fields (``core.report.OperationReport``), whatever the operation, is
written by the one base, and is at ``df.aiforge.last_report`` too (the one place for ``agg(output=int)``'s)."""

import copy
import html
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pytest
from pydantic import BaseModel

import aiforge  # noqa: F401 - registers the accessor
from aiforge import ChatAgent
from aiforge.batch.results import BatchResult
from aiforge.core.report import OperationReport
from aiforge.providers.scripted import ScriptedProvider
from aiforge.semantic.agg.report import AggReport
from tests.support.ranking_judge import ranking_judge

FRAME = pd.DataFrame({"review": ["good value", "broke on day one", "fine"], "truth": ["pos", "neg", "pos"]})
RIGHT = pd.DataFrame({"name": ["kettle", "toaster"]})


class Person(BaseModel):
    name: str


def _report(result: Any) -> Any:
    return result.attrs["aiforge"] if hasattr(result, "attrs") else result


OPERATIONS: dict[str, Callable[[], Any]] = {
    "map": lambda: FRAME.aiforge.map("Say {review}", provider="scripted"),
    "classify": lambda: FRAME.aiforge.classify("{review}", ["pos", "neg"], provider="scripted"),
    "filter": lambda: FRAME.aiforge.filter("Is {review} good?", provider="scripted"),
    "extract": lambda: FRAME.aiforge.extract("review", output=Person, provider="scripted"),
    "judge": lambda: FRAME.aiforge.judge("helpful", column="review", provider="scripted"),
    "agg": lambda: FRAME.aiforge.agg("What do the {review}s say?", provider="scripted"),
    "embed": lambda: FRAME.aiforge.embed("review", provider="scripted"),
    "dedup": lambda: FRAME.aiforge.dedup("review", provider="scripted"),
    "cluster": lambda: FRAME.aiforge.cluster("review", 2, provider="scripted"),
    "topk": lambda: FRAME.aiforge.topk(
        "the best review: {review}", 1, provider=ScriptedProvider(default=ranking_judge(len))
    ),
    "join": lambda: FRAME.aiforge.join(RIGHT, "{left.review} / {right.name}?", provider="scripted"),
    "evaluate": lambda: FRAME.aiforge.evaluate(
        {"p": "{review}"}, truth="truth", labels=["pos", "neg"], provider="scripted"
    ),
    "run_batch": lambda: ChatAgent(provider="scripted").run_batch(["a", "b"]),
}


@pytest.mark.filterwarnings("ignore")  # failed rows of a scripted answer, chat-model vectors: not what is read here
@pytest.mark.parametrize("name", list(OPERATIONS))
def test_every_operations_report_reads_cost_tokens_requests_and_failed(name: str) -> None:
    report = _report(OPERATIONS[name]())
    assert isinstance(report, OperationReport)
    assert isinstance(report.total_cost, float | int) and report.total_cost >= 0
    assert isinstance(report.total_tokens, int) and report.total_tokens >= 0
    assert isinstance(report.requests, int) and report.requests >= 0
    assert len(report.failed) >= 0


SHARED = ("requests", "failed", "total_tokens", "total_cost")


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", [name for name in OPERATIONS if name not in ("run_batch", "evaluate")])
def test_every_operations_report_is_written_by_the_one_base_own_fields_first_then_the_four(name: str) -> None:
    report = _report(OPERATIONS[name]())
    written = repr(report)
    assert written.startswith(f"{type(report).__name__}(")
    tail = ", ".join(f"{field}={value}" for field, value in report.shared_fields().items())
    assert written.endswith(f", {tail})"), written
    assert f"requests={report.requests}, failed={len(report.failed)}" in written
    assert f"total_cost={report.total_cost:.6f}" in written
    if isinstance(report, BatchResult):
        return  # its line says more: rows skipped by the budget, cache hits, wall time (test_batches)
    line = str(report)
    assert line.endswith(
        f"{report.requests} requests · {len(report.failed)} failed · {report.total_tokens} tokens · "
        f"${report.total_cost:.6f}"
    )
    assert report._repr_html_() == f"<div><b>{report.title}</b> · {html.escape(line)}</div>"


def test_a_report_declares_only_its_own_fields_and_the_base_writes_them() -> None:
    @dataclass(repr=False)
    class Counted(OperationReport):
        title = "Counted"
        rows: int
        note: str | None = None
        hidden: list[int] = field(default_factory=list, repr=False)
        requests: int = 2
        total_cost: float = 0.5
        total_tokens: int = 7
        failed: list[Any] = field(default_factory=list)

    report = Counted(3, hidden=[1, 2])
    assert repr(report) == "Counted(rows=3, requests=2, failed=0, total_tokens=7, total_cost=0.500000)"
    assert str(report) == "rows 3 · 2 requests · 0 failed · 7 tokens · $0.500000"
    assert "note='why'" in repr(Counted(3, note="why"))  # None means "does not apply": left out
    assert copy.deepcopy(report) is report  # shared when pandas deep-copies .attrs


def test_packings_stats_are_a_report_of_the_packed_requests() -> None:
    with pytest.warns(UserWarning, match="no packed request answered"):  # the scripted model answers no pack
        batch = ChatAgent(provider="scripted").run_batch(["a", "b", "c", "d"], pack=2)
    packing = batch.packing
    assert isinstance(packing, OperationReport)
    assert packing.requests == 2 and packing.total_tokens == packing.input_tokens + packing.output_tokens
    assert repr(packing).startswith("PackingStats(size=2, rows=4, ")


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", [name for name in OPERATIONS if name != "run_batch"])
def test_the_frame_keeps_its_last_operations_report_at_last_report(name: str) -> None:
    result = OPERATIONS[name]()
    assert FRAME.aiforge.last_report is _report(result)


def test_agg_with_an_output_type_returns_that_type_and_leaves_its_report_at_last_report() -> None:
    frame = FRAME.copy()
    assert frame.aiforge.last_report is None  # a copy does not take its original's
    count = frame.aiforge.agg("How many {review}s are good?", output=int, provider=ScriptedProvider(default="2"))
    assert type(count) is int and count == 2
    report = frame.aiforge.last_report
    assert isinstance(report, AggReport) and report.requests == 1 and report.chunks == 1
    assert frame.head(2).aiforge.last_report is None


def test_a_grouped_agg_leaves_its_report_on_the_grouped_frame_and_a_series_on_itself() -> None:
    frame = FRAME.copy()
    answers = frame.groupby("truth").aiforge.agg("Sum up {review}", provider="scripted")
    assert frame.aiforge.last_report is answers.attrs["aiforge"]
    reviews = frame["review"]
    flag = reviews.aiforge.agg("Any refund asked in {value}?", output=bool, provider=ScriptedProvider(default="false"))
    assert flag is False
    assert isinstance(reviews.aiforge.last_report, AggReport)
    # A copy does not take it: keep the Series the call ran on (pandas 3 makes a new one at each frame["review"];
    # pandas 2 without copy-on-write may hand back the cached one, which keeps it).
    assert reviews.copy().aiforge.last_report is None
