"""Long documents on the embedded model: split under its engine's window (LOCAL_CONTEXT_SIZE), each chunk answered
by map, the answers folded back onto the documents by agg (short: two documents, a few chunks, short answers)."""

from __future__ import annotations

import pandas as pd
import pytest

import aiforge  # noqa: F401 - registers the accessors
from aiforge import ChatAgent
from aiforge.providers.local import weights
from aiforge.providers.local.weights import find_default_weights

if not weights.xllamacpp_installed() or find_default_weights() is None:
    pytest.skip(f"the embedded model is not installed: {weights.INSTALL_HINT}", allow_module_level=True)

pytestmark = pytest.mark.embedded

KETTLE = (
    "# The Kettle\n\nThe kettle boils a litre of water in three minutes. Its handle stays cool. "
    "The lid opens with one button and the filter lifts out for cleaning. "
) * 4
BIKE = (
    "# The Bicycle\n\nThe bicycle has seven gears and a light aluminium frame. Its brakes stop it quickly in rain. "
    "The saddle is soft and the tyres are wide enough for gravel paths. "
) * 4


def test_the_engines_window_bounds_the_chunks() -> None:
    docs = pd.DataFrame({"doc": [KETTLE * 20]})
    chunks = docs.aiforge.split("doc", provider="local", LOCAL_CONTEXT_SIZE=1024, PROGRESS_BAR=False)
    assert len(chunks) > 1 and chunks["tokens"].max() <= 1024 * 0.8


def test_map_over_the_chunks_then_agg_folds_back_per_document() -> None:
    agent = ChatAgent(provider="local", memory="none", MAX_TOKENS=24, PROGRESS_BAR=False)
    docs = pd.DataFrame({"doc": [KETTLE, BIKE]}, index=pd.Index(["kettle", "bike"], name="product"))
    chunks = docs.aiforge.split("doc", size=80, gather="heading", agent=agent)
    assert chunks.groupby(level="product").size().min() >= 2
    prompt = "Section: {context}\n{text}\n\nIn a few words, what is this text about?"
    chunks["about"] = chunks.aiforge.map(prompt, agent=agent)["response"]
    docs["summary"] = chunks.aiforge.agg(
        "In one sentence, what do the {about} notes describe?", by="product", agent=agent
    )
    assert docs["summary"].notna().all()
    assert all(isinstance(text, str) and text.strip() for text in docs["summary"])


def test_chinese_and_numbers_are_cut_by_the_models_own_tokens() -> None:
    contract = "合同条款：买方应在收到发票后三十天内付款。逾期付款将按每日千分之五收取违约金。" * 100
    invoice = "Rechnungsnummer 2023-0042, Gesamtbetrag EUR 1.234,56; MwSt. 19%: 197,11. " * 60
    agent = ChatAgent(provider="local", memory="none", LOCAL_CONTEXT_SIZE=1024, PROGRESS_BAR=False)
    chunks = pd.DataFrame({"doc": [contract, invoice]}).aiforge.split("doc", agent=agent)
    counted = [agent.provider.count_tokens(text) for text in chunks["text"]]
    assert chunks.groupby(level=0).size().min() > 1
    assert counted == chunks["tokens"].tolist() and max(counted) <= 1024 * 0.8
