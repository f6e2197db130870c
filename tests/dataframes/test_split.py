"""df.aiforge.split: a column of documents (texts, PDFs) to one row a chunk, on the input's index then ``chunk``;
never over the model's window; a document that cannot be read fails alone; map over the chunks and agg folds the
answers back onto the documents."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import aiforge  # noqa: F401 - registers the accessors
from aiforge import ChatAgent, File
from aiforge.core.errors import ConfigError, FailedRowsWarning, UsageError
from aiforge.core.tokens import estimate_tokens, request_tokens
from aiforge.core.types import Message
from aiforge.providers.scripted import ScriptedProvider
from tests.support.documents import encrypted_pdf, mixed_pdf, scanned_pdf, text_pdf

WINDOW = 600
MAX_TOKENS = 40


def words(prefix: str, count: int, per_line: int = 12) -> str:
    """``count`` words ``<prefix>0000`` ... in lines of ``per_line`` (a PDF page wraps them anyway)."""
    tokens = [f"{prefix}{i:04d}" for i in range(count)]
    return "\n".join(" ".join(tokens[at : at + per_line]) for at in range(0, count, per_line))


def agent(default: Callable[[list[Message]], str] | str = "ok", **settings: Any) -> ChatAgent:
    settings = {"CONTEXT_WINDOW": WINDOW, "MAX_TOKENS": MAX_TOKENS, "PROGRESS_BAR": False, **settings}
    return ChatAgent(provider=ScriptedProvider(default=default), memory="none", **settings)


def test_one_row_a_chunk_on_the_input_index_then_chunk_with_its_lineage() -> None:
    docs = pd.DataFrame(
        {"doc": [words("a", 300), words("b", 15)], "title": ["long", "short"]},
        index=pd.Index(["x", "y"], name="id"),
    )
    chunks = docs.aiforge.split("doc", size=100, overlap=10, keep=["title"], agent=agent())
    assert list(chunks.columns) == ["document", "page", "last_page", "text", "tokens", "error", "title"]
    assert chunks.index.names == ["id", "chunk"]
    assert chunks.loc["y"].index.tolist() == [0]
    assert chunks.loc["x"].index.tolist() == list(range(len(chunks.loc["x"])))
    assert (chunks["document"] == chunks.index.get_level_values("id")).all()
    assert (chunks["title"] == chunks["document"].map({"x": "long", "y": "short"})).all()
    assert chunks["tokens"].max() <= 100 and chunks["error"].isna().all()
    long = chunks.loc["x", "text"].tolist()
    assert all(later.split()[0] in earlier.split() for earlier, later in zip(long, long[1:], strict=False))  # overlap
    assert sorted({w for text in long for w in text.split()}) == words("a", 300).split()


def test_a_multi_index_input_keeps_every_level() -> None:
    index = pd.MultiIndex.from_tuples([("2024", 1), ("2025", 7)], names=["year", "n"])
    docs = pd.DataFrame({"doc": [words("a", 80), words("b", 80)]}, index=index)
    chunks = docs.aiforge.split("doc", size=50, agent=agent())
    assert chunks.index.names == ["year", "n", "chunk"]
    assert chunks.droplevel("chunk").index.unique().tolist() == [("2024", 1), ("2025", 7)]


def test_the_series_form_and_gather() -> None:
    text = "# Scope\n" + words("a", 60) + "\n\n## Prices\n" + words("b", 60)
    chunks = pd.Series([text], name="contract").aiforge.split(size=60, gather="heading", agent=agent())
    assert chunks["context"].iloc[0] == "Scope" and chunks["context"].iloc[-1] == "Prices"
    tails = pd.Series([text]).aiforge.split(size=60, gather="tail", gather_tokens=10, agent=agent())
    assert tails["context"].iloc[0] == ""
    assert all(
        prev.endswith(ctx) and estimate_tokens(ctx) <= 10
        for prev, ctx in zip(tails["text"], tails["context"].iloc[1:], strict=False)
    )


def test_size_none_is_the_most_the_window_holds_and_no_request_passes_it() -> None:
    prompt = "Which codes does this part of the report list? {text}"
    asker = agent()
    docs = pd.DataFrame({"doc": [words("a", 1500), words("b", 50)]})
    chunks = docs.aiforge.split("doc", prompt=prompt, agent=asker)
    assert len(chunks) > 3 and chunks["tokens"].max() > WINDOW // 3  # large chunks, as large as fit
    chunks.aiforge.map(prompt, agent=asker)
    calls = asker.provider.calls  # type: ignore[attr-defined]
    assert len(calls) == len(chunks)
    assert max(request_tokens(call.messages, MAX_TOKENS) for call in calls) <= WINDOW
    # A smaller window, smaller chunks.
    smaller = docs.aiforge.split("doc", agent=agent(CONTEXT_WINDOW=420))
    assert smaller["tokens"].max() < chunks["tokens"].max() and len(smaller) > len(chunks)


def test_the_context_and_the_kept_columns_a_prompt_names_count_against_the_window() -> None:
    prompt = "Report {title}, after: {context}\nWhich codes are listed? {text}"
    asker = agent()
    docs = pd.DataFrame({"doc": [words("a", 1500)], "title": ["An Annual Report " * 8]})
    chunks = docs.aiforge.split("doc", gather="tail", gather_tokens=60, prompt=prompt, keep=["title"], agent=asker)
    bare = docs.aiforge.split("doc", prompt=prompt.replace("{title}", "").replace("{context}", ""), agent=asker)
    assert chunks["tokens"].max() <= bare["tokens"].max() - 60 - estimate_tokens(docs["title"][0])
    chunks.aiforge.map(prompt, agent=asker)
    calls = asker.provider.calls  # type: ignore[attr-defined]
    assert max(request_tokens(call.messages, MAX_TOKENS) for call in calls) <= WINDOW


def test_a_size_over_the_window_and_a_window_too_small_say_what_to_change() -> None:
    docs = pd.DataFrame({"doc": ["some text"]})
    with pytest.raises(UsageError, match=r"size=5000 tokens is more than one request can hold: at most \d+ under "):
        docs.aiforge.split("doc", size=5000, agent=agent())
    with pytest.raises(ConfigError, match="CONTEXT_WINDOW=200 leaves 0 tokens for a chunk"):
        docs.aiforge.split("doc", agent=agent(CONTEXT_WINDOW=200))
    with pytest.raises(UsageError, match="split: keep= names 'text', a column split adds"):
        docs.assign(text=1).aiforge.split("doc", keep=True, agent=agent())
    with pytest.raises(UsageError, match="split: no column 'document' in the frame"):
        docs.aiforge.split("document", agent=agent())
    with pytest.raises(UsageError, match="split: each chunk leads back to its document by the index label, and the "):
        pd.DataFrame({"doc": ["a", "b"]}, index=[1, 1]).aiforge.split("doc", agent=agent())


def test_a_missing_file_fails_its_row_alone(tmp_path: Path) -> None:
    docs = pd.DataFrame(
        {"doc": [words("a", 100), tmp_path / "gone.pdf", words("c", 100), None, "  "]},
        index=pd.Index([10, 20, 30, 40, 50]),
    )
    with pytest.warns(FailedRowsWarning, match=r"2 of 5 document\(s\) could not be split.*gone\.pdf: no such file"):
        chunks = docs.aiforge.split("doc", size=50, agent=agent())
    failed = chunks.loc[20]
    assert len(failed) == 1 and pd.isna(failed["text"].iloc[0]) and "gone.pdf: no such file" in failed["error"].iloc[0]
    assert chunks.index.get_level_values(0).unique().tolist() == [10, 20, 30, 50]  # a missing cell (40) has no row
    assert chunks.loc[50, "error"].tolist() == ["the text is empty: nothing to split."]
    assert chunks.drop(index=[20, 50])["error"].isna().all()


def counting_model(messages: list[Message]) -> str:
    """A chunk's answer names its words' letter and counts them; agg's answer says which letters its rows saw and
    how many rows it read (a fold sums its parts)."""
    text = messages[-1]["content"]
    if "Answer for part" in text:
        letters = sorted(set("".join(re.findall(r"letters=(\w+)", text))))
        rows = sum(int(n) for n in re.findall(r"rows=(\d+)", text))
        return f"letters={''.join(letters)} rows={rows}"
    if "Rows" in text:
        seen = re.findall(r"^\[\d+\] from (\w):", text, flags=re.MULTILINE)
        return f"letters={''.join(sorted(set(seen)))} rows={len(seen)}"
    found = re.findall(r"\b([a-z])\d{4}\b", text)
    return f"from {found[0]}: {len(found)} words"


def test_map_over_the_chunks_then_agg_folds_back_per_document(tmp_path: Path) -> None:
    asker = agent(counting_model, CONTEXT_WINDOW=2000)
    docs = pd.DataFrame(
        {"doc": [words("a", 400), tmp_path / "missing.pdf", words("c", 150)]}, index=pd.Index([1, 2, 3], name="id")
    )
    with pytest.warns(FailedRowsWarning):
        chunks = docs.aiforge.split("doc", size=120, agent=asker)
    with pytest.warns(FailedRowsWarning):  # the missing document's one row fails in map too, alone
        chunks["answer"] = chunks.aiforge.map("Which words? {text}", agent=asker)["response"]
    assert chunks["answer"].isna().tolist() == (chunks["error"].notna()).tolist()
    for by in ("document", "id"):
        folded = chunks.aiforge.agg("What do the {answer}s say?", by=by, agent=asker)
        docs[f"by_{by}"] = folded
        expected = chunks.groupby(level="id")["text"].count()
        assert docs.loc[1, f"by_{by}"] == f"letters=a rows={expected[1]}"
        assert docs.loc[3, f"by_{by}"] == f"letters=c rows={expected[3]}"
        assert pd.isna(docs.loc[2, f"by_{by}"])  # nothing was read of the missing document
    grouped = chunks.groupby(level=0).aiforge.agg("What do the {answer}s say?", agent=asker)
    assert grouped.dropna().to_dict() == docs["by_id"].dropna().to_dict()


# --- PDFs ------------------------------------------------------------------------------------------------------


def test_a_pdf_is_split_page_by_page_and_each_chunk_knows_its_pages(tmp_path: Path) -> None:
    pages = [words(letter, 150) for letter in "pqr"]
    path = tmp_path / "report.pdf"
    text_pdf(path, pages)
    docs = pd.DataFrame({"pdf": [path, File(path), path.read_bytes()]}, index=["path", "file", "bytes"])
    by_page = docs.aiforge.split("pdf", by="page", agent=agent(CONTEXT_WINDOW=4000))
    assert by_page.loc["path", "page"].tolist() == [1, 2, 3] == by_page.loc["bytes", "last_page"].tolist()
    assert by_page.loc["path", "text"].tolist() == by_page.loc["file", "text"].tolist()
    for text, page in zip(by_page.loc["path", "text"], by_page.loc["path", "page"], strict=True):
        assert set(text.split()) == set(pages[page - 1].split())
    by_tokens = docs.loc[["path"]].aiforge.split("pdf", size=100, agent=agent())
    for text, first, last in by_tokens[["text", "page", "last_page"]].itertuples(index=False):
        assert text.split()[0][0] == "pqr"[first - 1] and text.split()[-1][0] == "pqr"[last - 1]
    assert (by_tokens["page"] != by_tokens["last_page"]).any()


def test_a_pdf_page_longer_than_the_window_is_cut_further_even_by_page(tmp_path: Path) -> None:
    path = tmp_path / "dense.pdf"
    text_pdf(path, [words("a", 400), words("b", 30)])  # page 1 ~ 500 tokens, over what a 600-token window leaves
    chunks = pd.DataFrame({"pdf": [path]}).aiforge.split("pdf", by="page", agent=agent())
    assert chunks["page"].tolist().count(1) > 1 and chunks["page"].tolist().count(2) == 1
    assert (chunks["page"] == chunks["last_page"]).all()


def test_an_encrypted_pdf_or_a_scan_fails_its_row_alone_and_a_scanned_page_gives_no_chunk(tmp_path: Path) -> None:
    docs = pd.DataFrame(
        {
            "pdf": [
                text_pdf(None, [words("a", 15)]),
                encrypted_pdf(tmp_path / "locked.pdf"),
                File(scanned_pdf(None), name="scan.pdf"),
                mixed_pdf(None, [words("c", 15), words("d", 15)], scanned_at=1),
            ]
        }
    )
    with pytest.warns(FailedRowsWarning, match=r"2 of 4 document\(s\)"):
        chunks = docs.aiforge.split("pdf", by="page", agent=agent())
    errors = chunks["error"].dropna()
    assert errors.index.get_level_values(0).tolist() == [1, 2]
    assert "scan.pdf: no text to split" in errors.iloc[1]
    assert chunks.loc[0, "page"].tolist() == [1]
    assert chunks.loc[3, "page"].tolist() == [1, 3]  # page 2 is the scan


def test_no_document_no_row() -> None:
    for values in ([], [None, float("nan")]):
        chunks = pd.DataFrame({"doc": pd.Series(values, dtype=object)}).aiforge.split("doc", agent=agent())
        assert chunks.empty and chunks.index.names == [None, "chunk"]
        assert list(chunks.columns) == ["document", "page", "last_page", "text", "tokens", "error"]


CONTRACT = "合同条款：买方应在收到发票后三十天内付款。逾期付款将按每日千分之五收取违约金。" * 60
INVOICE = "Rechnungsnummer 2023-0042, Gesamtbetrag EUR 1.234,56; MwSt. 19%: 197,11; IBAN DE89370400440532013000. " * 30


def test_chinese_and_numbers_are_cut_by_a_bound_no_tokenizer_exceeds() -> None:
    from aiforge.core.tokens import estimate_tokens, token_bound
    from aiforge.dataframes.split import chunk_bound

    docs = pd.DataFrame({"doc": [CONTRACT, INVOICE]})
    chunks = docs.aiforge.split("doc", agent=agent())
    size, _ = chunk_bound(agent(), None, 0)
    assert chunks.groupby(level=0).size().min() > 1
    assert all(
        token_bound(text) == tokens <= size for text, tokens in zip(chunks["text"], chunks["tokens"], strict=True)
    )
    # characters / 4 would have cut chunks 2-8 times too long for the embedded model's tokenizer (core.tokens)
    assert all(
        estimate_tokens(text) * 2 < tokens for text, tokens in zip(chunks["text"], chunks["tokens"], strict=True)
    )
    try:  # the real count, where the embedded model is installed
        from aiforge.providers.local.engine import LocalEngine
        from aiforge.providers.local.weights import find_default_weights, xllamacpp_installed
    except ImportError:
        return
    path = find_default_weights()
    if not xllamacpp_installed() or path is None:
        return
    engine = LocalEngine(path, 1, 4096)
    assert all(len(engine.tokens_of(text)) <= size for text in chunks["text"])
