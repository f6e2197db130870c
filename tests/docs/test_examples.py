"""Every ```python block of README.md and docs/**/*.md runs, as a reader would paste it (the way pydantic-ai tests
its examples).

A page's blocks run in order in one namespace (a later block uses what an earlier one defined), in a folder
holding the test data (``reviews.csv``, ``people.csv``), against fakellm: a fake OpenAI and Anthropic server on
127.0.0.1 that the unmodified SDKs talk to. The provider variables point at it with a test key, so ``ChatAgent()``,
``provider="openai"``, ``"anthropic"``, the gateway and the local servers (Ollama, LM Studio, vLLM, llama.cpp) all
answer: an echo of the question, or the smallest valid value of the requested schema for ``output=``.

A block that cannot run here (a real key, a cluster, a path on another machine) says so on the line before its
fence: ``<!-- not run: needs a Dask cluster -->``. Each such block is reported as a skipped test with its reason
(``pytest -rs`` lists them), so the count is in every run's summary.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import shutil
import sys
import traceback
import types
from pathlib import Path

import pytest

from fakellm import LLMServer, Reply, sample_output
from tests.docs.examples import ROOT, Block, blocks, pages

RUN = {path.relative_to(ROOT).as_posix(): [b for b in blocks(path) if b.not_run is None] for path in pages()}
NOT_RUN = [block for path in pages() for block in blocks(path) if block.not_run is not None]
DATA = ROOT / "tests" / "data"


def _answer(request: object) -> Reply | None:
    """A structured request gets the smallest valid value of its schema; anything else, fakellm's echo."""
    schema = getattr(request, "output_schema", None)
    return Reply(output=sample_output(schema)) if schema else None


@pytest.fixture
def docs_world(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """fakellm behind every provider's variables, the test data in the working folder: the CSVs, and the documents
    the documents guide and the README read (``invoices/``: two one-page invoices; ``contracts/``: a three-page PDF),
    generated, when the documents extra is installed."""
    for csv in DATA.glob("*.csv"):
        shutil.copy(csv, tmp_path / csv.name)
    _write_documents(tmp_path)
    with LLMServer(default=_answer) as server:
        for name, value in {
            "OPENAI_API_KEY": "sk-docs-example",
            "OPENAI_BASE_URL": server.openai_base_url,
            "ANTHROPIC_API_KEY": "sk-ant-docs-example",
            "ANTHROPIC_BASE_URL": server.anthropic_base_url,
            "AIFORGE_GATEWAY_BASE_URL": server.openai_base_url,
            "AIFORGE_GATEWAY_API_KEY": "docs-example",
            "OLLAMA_HOST": server.base_url,
            "AIFORGE_LMSTUDIO_BASE_URL": server.openai_base_url,
            "AIFORGE_VLLM_BASE_URL": server.openai_base_url,
            "AIFORGE_LLAMACPP_BASE_URL": server.openai_base_url,
        }.items():
            monkeypatch.setenv(name, value)
        yield server


def _write_documents(folder: Path) -> None:
    try:
        from tests.support.documents import invoice_pdf, text_pdf
    except ImportError:  # fpdf2 (dev extra) absent: the pages that read documents fail and say so
        return
    (folder / "invoices").mkdir()
    invoice_pdf("INV-1", "Acme Tools", 59.8, "2026-03-01", [("Toner", 2, 29.9)], folder / "invoices" / "inv-1.pdf")
    invoice_pdf("INV-2", "Blue River", 12.5, "2026-04-02", [("Paper", 5, 2.5)], folder / "invoices" / "inv-2.pdf")
    (folder / "contracts").mkdir()
    pages = ["# Terms\nThe supplier delivers monthly.", "# Penalties\nA late delivery costs 2% a week.", "# End"]
    text_pdf(folder / "contracts" / "supply.pdf", pages)


def run_block(block: Block, namespace: dict[str, object]) -> None:
    """Run one block in the page's namespace; top-level ``await`` runs on a fresh event loop, as in a notebook."""
    # dont_inherit: this test module's ``from __future__ import annotations`` must not turn the example's
    # annotations into strings (pydantic would then look for ``Literal`` in a module that has none).
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    code = compile(block.code, f"{block.page}:{block.line}", "exec", flags=flags, dont_inherit=True)
    result = eval(code, namespace)  # noqa: S307 - the docs' own examples
    if inspect.iscoroutine(result):
        asyncio.run(result)


@pytest.mark.parametrize("page", sorted(page for page, runnable in RUN.items() if runnable))
def test_the_examples_of_a_page_run(page: str, docs_world: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("__docs_example__")  # a real module: pickling, dataclasses and pydantic look it up
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = module.__dict__
    for number, block in enumerate(RUN[page], 1):
        try:
            run_block(block, namespace)
        except Exception:  # noqa: BLE001 - reported with the block's place, which a traceback alone does not name
            pytest.fail(
                f"{block.page}:{block.line} (Python block {number} of the page) raised:\n{traceback.format_exc()}\n"
                "Fix the example, or mark it `<!-- not run: why -->` on the line before its fence.",
                pytrace=False,
            )


@pytest.mark.parametrize("block", NOT_RUN, ids=[f"{b.page}:{b.line}" for b in NOT_RUN])
def test_an_opted_out_example_is_counted(block: Block) -> None:
    pytest.skip(f"{block.page}:{block.line} not run: {block.not_run}")


def test_the_opt_out_marker_is_read(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Intro\n\n```python\nx = 1\n```\n\n<!-- not run: needs an API key -->\n\n```python\ny = x\n```\n"
        "    ```py\n    z = 3\n    ```\n"
    )
    found = blocks(page)
    assert [(b.line, b.code, b.not_run) for b in found] == [
        (3, "x = 1\n", None),
        (9, "y = x\n", "needs an API key"),
        (12, "z = 3\n", None),
    ]
