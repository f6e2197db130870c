"""A report adds nothing noticeable to pandas' operations: measured as a ratio against the same result without it."""

import timeit

import pandas as pd

import aiforge  # noqa: F401 - registers the accessor
from aiforge import ChatAgent
from aiforge.core.report import OperationReport
from aiforge.providers.scripted import ScriptedProvider

ROWS = 5_000


def _best(statement: object, repeats: int = 7, number: int = 20) -> float:
    return min(timeit.repeat(statement, repeat=repeats, number=number))  # type: ignore[arg-type]


def test_head_of_an_embedding_series_costs_what_a_plain_series_head_does() -> None:
    texts = pd.Series([f"review number {i}" for i in range(ROWS)], name="review")
    vectors = texts.aiforge.embed(agent=ChatAgent(provider=ScriptedProvider()))
    assert isinstance(vectors.attrs["aiforge"], OperationReport)
    plain = vectors.copy()
    plain.attrs = {}
    with_report, without = _best(lambda: vectors.head(5)), _best(lambda: plain.head(5))
    ratio = with_report / without
    assert vectors.head(5).attrs["aiforge"] is vectors.attrs["aiforge"]  # shared, never copied
    assert ratio < 3, f"head(5) with the report took {ratio:.1f}x the time without it"


def test_head_of_a_map_result_costs_what_a_plain_frames_head_does() -> None:
    frame = pd.DataFrame({"review": [f"review {i}" for i in range(ROWS)]})
    mapped = frame.aiforge.map("Say {review}", provider="scripted")
    assert isinstance(mapped.attrs["aiforge"], OperationReport)
    plain = mapped.copy()
    plain.attrs = {}
    ratio = _best(lambda: mapped.head(5)) / _best(lambda: plain.head(5))
    assert mapped.head(5).attrs["aiforge"] is mapped.attrs["aiforge"]
    assert ratio < 3, f"head(5) with the report took {ratio:.1f}x the time without it"
