"""A failed row is never a silent null: an operation that returns with failed rows says so in one warning line
(``FailedRowsWarning``: how many, the first reason, where to read them all), once per call."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest
from pydantic import BaseModel

import aiforge  # noqa: F401 - registers the accessor
from aiforge import ChatAgent
from aiforge.core.errors import BadRequestError, FailedRowsWarning
from aiforge.core.types import Message
from aiforge.providers.scripted import ScriptedProvider

KEY = "sk-failedrows-0123456789abcdef"
TOO_LONG = (
    "This model's maximum context length is 8192 tokens. However, your messages resulted in 9100 tokens.\n"
    "Please reduce the length of the messages."
)
TEXTS = ["short one", "LONG row " * 5, "short two", "LONG again", "short three"]


def context_limited(messages: list[Message]) -> str:
    """Rows marked LONG are over the model's context (the provider refuses them); the rest get an answer."""
    text = messages[-1]["content"]
    if "LONG" in text:
        raise BadRequestError(TOO_LONG, provider="scripted", status_code=400)
    if "Extract" in text:
        return '{"name": "Ada"}'
    if "Is it clear?" in text:
        return '{"score": 4, "reason": "clear enough"}'
    return "true" if "Keep" in text else '"pos"'


def agent_of(reply: Callable[[list[Message]], str] = context_limited) -> ChatAgent:
    return ChatAgent(provider=ScriptedProvider(default=reply), memory="none", MAX_RETRIES=0)


class Name(BaseModel):
    name: str


def failed_rows_warnings(record: pytest.WarningsRecorder) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, FailedRowsWarning)]


def test_map_with_rows_over_the_context_warns_once_with_the_count_the_first_reason_and_where() -> None:
    frame = pd.DataFrame({"text": TEXTS}, index=[f"r{i}" for i in range(5)])
    with pytest.warns(FailedRowsWarning) as record:
        result = frame.aiforge.map("Summarise: {text}", agent=agent_of(), concurrency=4)
    assert failed_rows_warnings(record) == [
        "2 of 5 rows failed (first: BadRequestError: This model's maximum context length is 8192 tokens. However, "
        "your messages resulted in 9100 tokens.); see result.attrs['aiforge'].failed"
    ]
    assert len(record) == 1  # and no other warning
    assert result["response"].isna().tolist() == [False, True, False, True, False]
    assert [f.index for f in result.attrs["aiforge"].failed] == ["r1", "r3"]


def test_the_first_reason_is_the_first_failed_row_whatever_order_the_rows_finished_in() -> None:
    def reply(messages: list[Message]) -> str:
        text = messages[-1]["content"]
        if "row" in text:
            raise BadRequestError(f"refused {text.split()[-1]}", provider="scripted", status_code=400)
        return "ok"

    # Twelve rows in flight at once fail in whatever order they finish; the warning names row 0's reason.
    frame = pd.DataFrame({"text": [f"row {i}" for i in range(12)]})
    provider = ScriptedProvider(default=reply, delay=0.01)
    with pytest.warns(FailedRowsWarning, match=r"^12 of 12 rows failed \(first: BadRequestError: refused 0 "):
        frame.aiforge.map("{text}", agent=ChatAgent(provider=provider, memory="none", MAX_RETRIES=0), concurrency=12)


@pytest.mark.parametrize(
    "operation",
    [
        lambda frame, agent: frame.aiforge.classify("Sentiment: {text}", ["pos", "neg"], agent=agent),
        lambda frame, agent: frame.aiforge.filter("Keep {text}?", agent=agent),
        lambda frame, agent: frame.aiforge.extract("text", output=Name, agent=agent),
        lambda frame, agent: frame["text"].aiforge.map("Summarise: {value}", agent=agent),
        lambda frame, agent: frame.aiforge.judge("Is it clear?", column="text", agent=agent),
    ],
    ids=["classify", "filter", "extract", "Series.map", "judge"],
)
def test_every_row_operation_warns_once_when_rows_failed(operation: Callable[[pd.DataFrame, ChatAgent], Any]) -> None:
    frame = pd.DataFrame({"text": TEXTS})
    with pytest.warns(FailedRowsWarning) as record:
        operation(frame, agent_of())
    (message,) = failed_rows_warnings(record)
    assert message.startswith("2 of 5 rows failed (first: BadRequestError: This model's maximum context length")


def test_the_warning_is_one_line_without_a_path_nor_a_key() -> None:
    def leaky(messages: list[Message]) -> str:
        raise BadRequestError(f"invalid request (sent with key {KEY})\ntraceback-like second line", status_code=400)

    with pytest.warns(FailedRowsWarning) as record:
        pd.Series(["a", "b"]).aiforge.map("{value}", agent=agent_of(leaky))
    (warning,) = record
    shown = warnings.formatwarning(warning.message, warning.category, warning.filename, warning.lineno, warning.line)
    assert shown.startswith("FailedRowsWarning: 2 of 2 rows failed (first: BadRequestError: invalid request")
    assert shown.count("\n") == 1 and shown.endswith("see result.attrs['aiforge'].failed\n")
    assert KEY not in shown and "traceback-like" not in shown and __file__ not in shown


def test_the_warning_points_at_the_callers_line() -> None:
    with pytest.warns(FailedRowsWarning) as record:
        pd.Series(["LONG"]).aiforge.map("{value}", agent=agent_of())
    assert record[0].filename == __file__


def test_run_batch_does_not_warn_its_caller_reads_failed_on_the_result() -> None:
    # filterwarnings=error: a warning here fails the test.
    batch = agent_of().run_batch(TEXTS, prompt="Summarise: {value}")
    assert len(batch.failed) == 2


def test_no_warning_when_no_row_failed() -> None:
    result = pd.DataFrame({"text": ["short one", "short two"]}).aiforge.map("{text}", agent=agent_of())
    assert result["response"].notna().all()


def test_a_join_whose_questions_failed_warns_with_the_same_class() -> None:
    tickets = pd.DataFrame({"text": ["LONG: my kettle leaks", "LONG complaint about the lamp"]})
    products = pd.DataFrame({"name": ["kettle", "lamp"]})
    with pytest.warns(FailedRowsWarning, match=r"^join: 2 question\(s\) got no answer") as record:
        joined = tickets.aiforge.join(products, "Is {left.text} about {right.name}?", agent=agent_of())
    assert len(record) == 1 and joined.empty and joined.attrs["aiforge"].failed
