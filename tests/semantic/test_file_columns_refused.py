"""The operations that read a column as text (agg, topk, join, embed, dedup, cluster) refuse a column of files with a
one-line ``UsageError`` naming what reads files (map or extract, then the operation; or ``split``), before any
request: a file's ``str`` is only its path, and they would compare, embed or summarise paths."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from aiforge import File, UsageError
from aiforge.providers.scripted import ScriptedProvider

pytest.importorskip("fpdf")
pytest.importorskip("PIL")

from tests.support import documents  # noqa: E402 - needs fpdf2 and Pillow, skipped above without them

OPERATIONS: dict[str, Callable[[pd.DataFrame, ScriptedProvider], Any]] = {
    "agg": lambda df, p: df.aiforge.agg("What do the {doc}s say?", provider=p),
    "grouped agg": lambda df, p: df.aiforge.agg("What do the {doc}s say?", by="kind", provider=p),
    "Series agg": lambda df, p: df["doc"].aiforge.agg("What do they say?", provider=p),
    "topk": lambda df, p: df.aiforge.topk("the most urgent {doc}", k=1, provider=p),
    "Series topk": lambda df, p: df["doc"].aiforge.topk("the most urgent {value}", k=1, provider=p),
    "join": lambda df, p: df.aiforge.join(df[["kind"]], "Is {left.doc} about {right.kind}?", provider=p),
    "embed": lambda df, p: df.aiforge.embed("doc", provider=p),
    "Series embed": lambda df, p: df["doc"].aiforge.embed(provider=p),
    "dedup": lambda df, p: df.aiforge.dedup("doc", threshold=0.9, confirm=False, provider=p),
    "cluster": lambda df, p: df.aiforge.cluster("doc", 2, provider=p),
}


@pytest.fixture
def frame(tmp_path: Path) -> pd.DataFrame:
    documents.text_pdf(tmp_path / "a.pdf", ["Invoice 1 total 10.00"])
    documents.text_pdf(tmp_path / "b.pdf", ["Invoice 2 total 20.00"])
    documents.png(30, 20, tmp_path / "c.png")
    files = [File(tmp_path / "a.pdf"), tmp_path / "b.pdf", File(tmp_path / "c.png")]  # a File and a Path alike
    return pd.DataFrame({"doc": files, "kind": ["invoice", "invoice", "photo"]})


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_an_operation_reading_text_refuses_a_file_column_naming_map_and_split(frame: pd.DataFrame, name: str) -> None:
    provider = ScriptedProvider(default=lambda messages: "1")
    operation = name.split()[-1]
    with pytest.raises(UsageError) as raised:
        OPERATIONS[name](frame, provider)
    message = str(raised.value)
    assert message.startswith(f"{operation}: the column 'doc' holds files (a.pdf)"), message
    assert "df.aiforge.map('Summarise {doc}')" in message and "df.aiforge.split('doc')" in message
    assert "\n" not in message and not provider.calls


def test_the_text_columns_beside_a_file_column_still_work(frame: pd.DataFrame) -> None:
    provider = ScriptedProvider(default=lambda messages: "invoices and a photo")
    assert frame.aiforge.agg("What {kind}s are there?", provider=provider) == "invoices and a photo"
    assert "a.pdf" not in provider.calls[0].last_user_message


def test_a_str_column_of_paths_is_text_to_these_operations(frame: pd.DataFrame) -> None:
    paths = frame.assign(doc=[str(f) for f in frame["doc"]])  # files= names such a column for map and extract
    provider = ScriptedProvider(default=lambda messages: "three paths")
    assert paths.aiforge.agg("What are the {doc}s?", provider=provider) == "three paths"
