"""A cascade over a column of files: every model it asks takes the prompts built once for the agent it runs on,
so a file sent as the vendor's block must be one each model reads (issue 33, review finding 5)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from aiforge import Cascade, ChatAgent, File, UsageError
from aiforge.providers.scripted import ScriptedProvider, structured

pytest.importorskip("pypdf")
pytest.importorskip("PIL")
pytest.importorskip("fpdf")

from tests.support import documents  # noqa: E402 - needs fpdf2 and Pillow, skipped above without them

LABELS = ["cat", "dog"]


def strong_reply(messages: Any) -> Any:
    return structured("cat")


@pytest.fixture
def images(tmp_path: Path) -> pd.DataFrame:
    for i in range(12):
        documents.png(40 + i, 30, tmp_path / f"p{i}.png", seed=i)
    return pd.DataFrame({"img": [File(tmp_path / f"p{i}.png") for i in range(12)]})


@pytest.fixture
def pdfs(tmp_path: Path) -> pd.DataFrame:
    for i in range(12):
        documents.text_pdf(tmp_path / f"d{i}.pdf", [f"A report on animal {i}: a cat"])
    return pd.DataFrame({"doc": [File(tmp_path / f"d{i}.pdf") for i in range(12)]})


def reading_agent(file_input: str = "native", **settings: Any) -> tuple[ChatAgent, ScriptedProvider]:
    """A strong agent whose (scripted) model is sent files as markers, as a vision model's would be."""
    provider = ScriptedProvider(default=strong_reply)
    return ChatAgent(provider=provider, memory="none", FILE_INPUT=file_input, **settings), provider


def test_a_first_model_that_cannot_see_the_rows_images_is_a_usage_error_before_any_request(
    images: pd.DataFrame,
) -> None:
    strong, strong_provider = reading_agent()
    cheap = ScriptedProvider(default="cat")
    cascade = Cascade(first=ChatAgent(provider=cheap, memory="none"), sample=58)
    with pytest.raises(UsageError) as err:
        images.aiforge.classify("What animal is in {img}?", LABELS, agent=strong, cascade=cascade)
    message = str(err.value)
    assert "\n" not in message
    assert "images go to scripted-model (scripted) as files" in message
    assert "cannot read images; use a first model that reads images" in message
    assert cheap.calls == [] and strong_provider.calls == []


def test_a_first_model_that_reads_files_is_sent_them(images: pd.DataFrame) -> None:
    strong, _ = reading_agent()
    cheap = ScriptedProvider(default="cat")
    cascade = Cascade(first=ChatAgent(provider=cheap, memory="none", FILE_INPUT="native"), sample=58)
    out = images.aiforge.classify("What animal is in {img}?", LABELS, agent=strong, cascade=cascade)
    assert list(out) == ["cat"] * 12
    assert all("[[file:" in call.last_user_message for call in cheap.calls) and len(cheap.calls) == 12


def test_pdfs_a_first_model_cannot_read_go_as_text_to_both_with_file_input_text(pdfs: pd.DataFrame) -> None:
    cheap = ScriptedProvider(default="cat")
    first = ChatAgent(provider=cheap, memory="none")
    strong, _ = reading_agent()
    with pytest.raises(UsageError, match=r"cannot read PDFs; .* or set FILE_INPUT='text' on the agent") as err:
        pdfs.aiforge.classify("What animal is in {doc}?", LABELS, agent=strong, cascade=Cascade(first=first))
    assert "\n" not in str(err.value) and cheap.calls == []

    as_text, strong_provider = reading_agent("text")
    pdfs.aiforge.classify("What animal is in {doc}?", LABELS, agent=as_text, cascade=Cascade(first=first, sample=58))
    seen = [call.last_user_message for call in cheap.calls + strong_provider.calls]
    assert len(cheap.calls) == 12 and all("[page 1]" in text and "[[file:" not in text for text in seen)


def test_the_embedded_model_and_a_then_model_are_checked_too(pdfs: pd.DataFrame) -> None:
    strong, strong_provider = reading_agent()
    with pytest.raises(UsageError, match=r"the embedded model \(local\) cannot read PDFs"):
        pdfs.aiforge.classify("Animal in {doc}?", LABELS, agent=strong, cascade=Cascade(first="local"))
    cheap = ChatAgent(provider=ScriptedProvider(default="cat"), memory="none", FILE_INPUT="native")
    then = ChatAgent(provider=ScriptedProvider(default=strong_reply), memory="none")
    with pytest.raises(UsageError, match=r"Cascade\(then=...\): .*scripted-model \(scripted\) cannot read PDFs"):
        pdfs.aiforge.classify("Animal in {doc}?", LABELS, agent=strong, cascade=Cascade(first=cheap, then=then))
    assert strong_provider.calls == []


def test_the_proxy_on_files_sent_as_files_is_a_usage_error(images: pd.DataFrame, pdfs: pd.DataFrame) -> None:
    strong, strong_provider = reading_agent()
    with pytest.raises(UsageError, match=r"first='proxy'\) embeds each row's text, .*set FILE_INPUT='text'"):
        pdfs.aiforge.classify("Animal in {doc}?", LABELS, agent=strong, cascade=Cascade(first="proxy"))
    with pytest.raises(UsageError, match=r"first='proxy'\) embeds each row's text, .*an agent whose model reads"):
        images.aiforge.classify("Animal in {img}?", LABELS, agent=strong, cascade=Cascade(first="proxy"))
    assert strong_provider.calls == [] and strong_provider.embed_calls == []


@pytest.mark.skipif(importlib.util.find_spec("sklearn") is None, reason="scikit-learn is in the [embeddings] extra")
def test_the_proxy_embeds_pdfs_sent_as_their_text(pdfs: pd.DataFrame) -> None:
    strong, strong_provider = reading_agent("text", EMBEDDING_PROVIDER="scripted")
    pdfs.aiforge.classify("Animal in {doc}?", LABELS, agent=strong, cascade=Cascade(first="proxy", sample=58))
    assert all("[page 1]" in call.last_user_message for call in strong_provider.calls)
