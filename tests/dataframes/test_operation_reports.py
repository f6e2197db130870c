"""Every operation's report reads the same four fields (``core.report.OperationReport``), whatever the operation."""

from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest
from pydantic import BaseModel

import aiforge  # noqa: F401 - registers the accessor
from aiforge import ChatAgent
from aiforge.core.report import OperationReport
from aiforge.providers.scripted import ScriptedProvider
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
