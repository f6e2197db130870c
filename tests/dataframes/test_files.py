"""``aiforge.files``: a folder listed as a file column; that column asked through ``df.aiforge`` (the scripted
provider, the embedded model) and through Dask, whose workers read the files from their paths."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pandas as pd
import pytest
from pydantic import BaseModel

import aiforge
from aiforge import File, UsageError
from aiforge.providers.scripted import ScriptedProvider

pytest.importorskip("pypdf")
pytest.importorskip("PIL")
pytest.importorskip("fpdf")

from tests.support import documents  # noqa: E402 - needs fpdf2 and Pillow, skipped above without them


class Invoice(BaseModel):
    number: str | None
    total: float | None


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    documents.invoice_pdf("INV-2", "Acme GmbH", 30.0, "2026-01-02", [("Pens", 3, 10.0)], tmp_path / "b.pdf")
    documents.invoice_pdf("INV-1", "Bolt Ltd", 12.5, "2026-01-01", [("Tape", 1, 12.5)], tmp_path / "a.pdf")
    documents.text_pdf(tmp_path / "long.pdf", ["one", "two", "three"])
    documents.png(30, 20, tmp_path / "c.png")
    (tmp_path / "notes.txt").write_text("not a document")
    return tmp_path


def test_a_folder_is_listed_one_row_per_file_sorted_by_path(folder: Path) -> None:
    listed = aiforge.files(folder)
    assert listed["name"].tolist() == ["a.pdf", "b.pdf", "c.png", "long.pdf", "notes.txt"]
    assert listed.columns.tolist() == ["file", "name", "size", "pages", "mime"]
    assert all(
        isinstance(f, File) and f.path == folder / n for f, n in zip(listed["file"], listed["name"], strict=True)
    )
    assert listed["size"].tolist() == [(folder / n).stat().st_size for n in listed["name"]]
    assert listed["pages"].tolist()[:4] == [1, 1, pd.NA, 3] and listed["pages"].dtype == "Int64"
    assert listed["mime"].tolist() == ["application/pdf", "application/pdf", "image/png", "application/pdf", pd.NA]


def test_a_glob_a_list_and_a_pattern_matching_nothing(folder: Path) -> None:
    assert aiforge.files(str(folder / "*.pdf"))["name"].tolist() == ["a.pdf", "b.pdf", "long.pdf"]
    assert aiforge.files([folder / "c.png", str(folder / "a.pdf")])["name"].tolist() == ["a.pdf", "c.png"]
    pattern = str(folder / "*.jpg")
    with pytest.raises(UsageError, match=re.escape(f"aiforge.files({pattern!r}): no file matches the pattern")):
        aiforge.files(pattern)
    with pytest.raises(UsageError, match="no such file or folder"):
        aiforge.files(folder / "invoices")


def test_a_listed_folder_is_a_file_column_for_extract(folder: Path) -> None:
    def reply(messages: list[dict[str, str]]) -> str:
        text = messages[-1]["content"]
        number = re.search(r"Invoice number: (\S+)", text)
        total = re.search(r"Total due \(EUR\)\s*([\d.]+)", text)
        return Invoice(number=number and number.group(1), total=total and float(total.group(1))).model_dump_json()

    listed = aiforge.files(str(folder / "[ab].pdf")).set_index("name")
    provider = ScriptedProvider(default=reply)
    out = listed.aiforge.extract("file", output=Invoice, provider=provider)
    assert out.index.tolist() == ["a.pdf", "b.pdf"]
    assert out["number"].tolist() == ["INV-1", "INV-2"] and out["total"].tolist() == [12.5, 30.0]
    asked = provider.calls[0].last_user_message
    assert asked.startswith("Extract the number and total from the document below.") and "Document:\n[page 1]" in asked


def test_a_listed_file_aiforge_does_not_send_fails_its_row_alone_and_the_mime_filter_skips_it(folder: Path) -> None:
    listed = aiforge.files(folder).set_index("name")
    provider = ScriptedProvider(default=lambda messages: "read")
    with pytest.warns(aiforge.FailedRowsWarning, match="1 of 5 rows failed"):
        out = listed.aiforge.map("What is this? {file}", provider=provider, FILE_INPUT="native")
    answers = out["response"]
    assert answers.drop("notes.txt").tolist() == ["read"] * 4 and pd.isna(answers["notes.txt"])
    (failure,) = out.attrs["aiforge"].failed
    assert failure.index == "notes.txt" and isinstance(failure.error, aiforge.FileInputError)
    assert str(failure.error).startswith("notes.txt: not a PDF or an image")
    assert len(provider.calls) == 4

    documents_only = listed[listed["mime"].notna()]
    assert documents_only.index.tolist() == ["a.pdf", "b.pdf", "c.png", "long.pdf"]


def test_a_file_with_a_path_pickles_as_its_path_never_its_bytes(folder: Path) -> None:
    data = (folder / "long.pdf").read_bytes()
    shipped = pickle.dumps(aiforge.files(folder)["file"].tolist())
    assert data[:200] not in shipped and len(shipped) < 1000
    assert pickle.loads(pickle.dumps(File(folder / "long.pdf"))).read() == data


@pytest.mark.slow  # a LocalCluster of 2 worker processes (seconds to start, more under load)
def test_dask_workers_read_a_partitions_files_from_their_paths(folder: Path) -> None:
    pytest.importorskip("distributed")
    import dask.dataframe as dd

    from tests.support.dask_cluster import local_client

    frame = pd.DataFrame({"doc": [str(folder / n) for n in ("a.pdf", "b.pdf", "long.pdf", "gone.pdf")]})
    ddf = dd.from_pandas(frame, npartitions=2)
    import dask

    # Dask turns an object column into strings by default, and str(File) is its path: that column is a file column
    # with files=; a column of File objects stays one with the conversion off; a column of str paths takes files=.
    with dask.config.set({"dataframe.convert-string": False}):
        listed = dd.from_pandas(aiforge.files(str(folder / "*.pdf")), npartitions=2)
    converted = dd.from_pandas(aiforge.files(str(folder / "*.pdf")), npartitions=2)
    with local_client({"TQDM_DISABLE": "1"}):
        out = ddf.aiforge.map("Read {doc}", provider="scripted", files=["doc"]).compute()
        typed = listed.aiforge.map("Read {file}", provider="scripted").compute()
        as_paths = converted.aiforge.map("Read {file}", provider="scripted", files=["file"]).compute()
    assert "[page 3]\nthree" in typed["response"].tolist()[2] and "INV-1" in typed["response"].tolist()[0]
    assert as_paths["response"].tolist() == typed["response"].tolist()
    answers = out["response"].tolist()
    assert "Invoice number: INV-1" in answers[0] and "Invoice number: INV-2" in answers[1]
    assert "[page 3]\nthree" in answers[2] and pd.isna(answers[3])


@pytest.mark.embedded
def test_the_embedded_model_extracts_generated_pdfs_into_typed_columns(folder: Path) -> None:
    from aiforge.providers.local import weights

    if not weights.xllamacpp_installed() or weights.find_default_weights() is None:
        pytest.skip(f"the embedded model is not installed: {weights.INSTALL_HINT}")
    listed = aiforge.files(str(folder / "[ab].pdf")).set_index("name")
    agent = aiforge.ChatAgent(provider="local", MAX_TOKENS=64, TEMPERATURE=0)
    with pytest.warns(aiforge.EmbeddedModelWarning):
        out = listed.aiforge.extract("file", output=Invoice, agent=agent)
    assert out.index.tolist() == ["a.pdf", "b.pdf"] and out.columns.tolist() == ["number", "total"]
    assert out["total"].dtype == "Float64" and len(out.attrs["aiforge"].failed) == 0
    with pytest.raises(UsageError, match="cannot see images"):
        aiforge.files(folder / "c.png").aiforge.extract("file", output=Invoice, agent=agent)
