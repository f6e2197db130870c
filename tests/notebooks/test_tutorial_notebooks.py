"""Fast checks of the committed tutorial notebooks; nbval runs them (see tests/notebooks/refresh_outputs.py).

These catch what nbval cannot: a key pasted into a notebook, outputs that were never run (nbval does not
compare unrun cells), stray widget state, unknown nbval tags, and a sanitize file that stopped matching.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
SANITIZE = NOTEBOOKS / "nbval_sanitize.cfg"
EXPECTED = [
    "01_quickstart",
    "02_tools",
    "03_memory",
    "04_streaming_async",
    "05_batch_dataframes",
    "06_magics",
    "07_chat_panel",
    "08_providers_and_config",
    "09_structured_output",
    "10_batch_at_scale",
    "11_sessions_and_logs",
    "12_scale_out_with_dask",
    "13_cheapest_correct_column",
    "14_semantic_operators",
    "15_evaluate_and_trace",
    "16_real_vectors_offline",
    "17_documents_and_images",
]
KNOWN_TAGS = {"nbval-ignore-output", "nbval-check-output", "nbval-skip", "raises-exception"}
MAX_NOTEBOOK_BYTES = 60_000
LARGER_NOTEBOOKS = {"15_evaluate_and_trace": 67_000}
"""Named exceptions: 15 stores a plot (17 kB of PNG) and two HTML timelines (inline-styled tables, ~3 kB each)."""
KEY_PATTERNS = [
    re.compile(r"sk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"),  # OpenAI / Anthropic keys
    re.compile(r"(?:OPENAI|ANTHROPIC|GATEWAY)_API_KEY['\"]?\]?\s*=\s*['\"][^'\"]+['\"]"),  # a key assigned literally
]


def _notebook(name: str) -> nbformat.NotebookNode:
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)


def _code_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def _tags(cell: nbformat.NotebookNode) -> set[str]:
    return set(cell.metadata.get("tags", []))


def test_every_tutorial_is_there_and_nothing_else() -> None:
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == EXPECTED


@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_is_valid_and_uses_the_python3_kernel(name: str) -> None:
    nb = _notebook(name)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert "widgets" not in nb.metadata, "widget state is stored: run tests/notebooks/refresh_outputs.py"


@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_contains_no_key(name: str) -> None:
    text = (NOTEBOOKS / f"{name}.ipynb").read_text()
    for pattern in KEY_PATTERNS:
        assert not pattern.search(text), f"{name} looks like it contains an API key ({pattern.pattern})"


@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_runs_offline_by_default_and_shows_how_to_use_a_key(name: str) -> None:
    sources = "\n".join(cell.source for cell in _code_cells(_notebook(name)))
    assert 'PROVIDER = "local"' in sources
    assert "getpass(" in sources


@pytest.mark.parametrize("name", EXPECTED)
def test_outputs_come_from_one_top_to_bottom_run(name: str) -> None:
    counts = [cell.execution_count for cell in _code_cells(_notebook(name))]
    assert counts == list(range(1, len(counts) + 1)), (
        "cells were not run once, in order (nbval skips unrun cells): run tests/notebooks/refresh_outputs.py"
    )


@pytest.mark.parametrize("name", EXPECTED)
def test_outputs_are_clean_and_small(name: str) -> None:
    nb = _notebook(name)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for output in cell.outputs:
            if output.output_type == "error":
                assert "raises-exception" in _tags(cell), f"cell {index} stored an error: {output.evalue}"
            data = output.get("data", {})
            assert "application/vnd.jupyter.widget-view+json" not in data, f"cell {index} stores a widget view"
    assert (NOTEBOOKS / f"{name}.ipynb").stat().st_size < LARGER_NOTEBOOKS.get(name, MAX_NOTEBOOK_BYTES)


@pytest.mark.parametrize("name", EXPECTED)
def test_only_known_nbval_tags(name: str) -> None:
    for index, cell in enumerate(_code_cells(_notebook(name))):
        unknown = _tags(cell) - KNOWN_TAGS
        assert not unknown, f"code cell {index}: unknown tags {unknown}"


def test_cells_that_call_real_providers_never_run_under_nbval() -> None:
    real = re.compile(r"provider=\"(openai|anthropic|internal_gateway)\"[^\n]*\)\n[^\n]*\.chat\(")
    for name in EXPECTED:
        for cell in _code_cells(_notebook(name)):
            if real.search(cell.source):
                assert "nbval-skip" in _tags(cell), f"{name}: a cell calls a real provider:\n{cell.source}"


def _sanitize(text: str) -> str:
    nbval = pytest.importorskip("nbval.plugin")
    for regex, replacement in nbval.get_sanitize_patterns(SANITIZE.read_text()):
        text = re.sub(regex, replacement, text)
    return text


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("conversation_id='2ef374a0f506b1e9'", "conversation_id='<hex-id>'"),
        ("{'id': 'call_000012', 'name': 'weather'}", "{'id': 'call_<id>', 'name': 'weather'}"),
        ("<Foo object at 0x7f3a2b1c4d5e>", "<Foo object at 0x<address>>"),
        ("scripted-model · 16+9 tokens · $0.00012 · 1,204 ms", "scripted-model · 16+9 tokens · $<cost> · <n> ms"),
        ("latency_ms=12.5, done in 0.52 s", "latency_ms=<n>, done in <n> s"),
        ("2026-12-02T16:33:18+01:00", "<timestamp>"),
        ("answer: 391, 17 * 23 tokens", "answer: 391, 17 * 23 tokens"),
    ],
)
def test_sanitize_file_neutralises_ids_timings_and_costs_only(raw: str, clean: str) -> None:
    assert _sanitize(raw) == clean


def _last_markdown(name: str) -> str:
    return next(cell.source for cell in reversed(_notebook(name).cells) if cell.cell_type == "markdown")


def test_the_quickstart_points_to_every_other_tutorial() -> None:
    closing = _last_markdown(EXPECTED[0])
    missing = [name for name in EXPECTED[1:] if f"`{name}`" not in closing]
    assert not missing, f"01_quickstart's Next list leaves out {missing}"


@pytest.mark.parametrize(("name", "following"), list(zip(EXPECTED[1:-1], EXPECTED[2:], strict=True)))
def test_each_tutorial_ends_by_pointing_to_the_next(name: str, following: str) -> None:
    closing = _last_markdown(name)
    assert f"Next: `{following}`" in closing, f"{name} should end with Next: `{following}`"
    assert "end of the tutorials" not in closing


def test_only_the_last_tutorial_says_the_tutorials_end() -> None:
    saying = [name for name in EXPECTED if "end of the tutorials" in _notebook(name).cells[-1].source]
    assert saying == [EXPECTED[-1]]


TURN_MAKERS = ("ChatAgent(", "ChatPanel(", ".aiforge.", "%%chat", "%chat", "Client(")
"""What builds an agent or runs one (an unindented line: a function's body runs only when it is called)."""


@pytest.mark.parametrize("name", EXPECTED)
def test_each_tutorial_sets_a_store_of_its_own_before_its_first_turn(name: str) -> None:
    """Run in JupyterLab, a tutorial's turns (scripted ones included) stayed in the user's own log (issue 30
    item 10): each sets AIFORGE_STORE to a fresh temporary file in a cell no turn comes before. nbval checks the
    same by running them (notebooks/conftest.py: the user's store must not exist after any cell)."""
    cells = _code_cells(_notebook(name))
    setting = next(
        (i for i, cell in enumerate(cells) if re.search(r'os\.environ\["AIFORGE_STORE"\] = .*tempfile\.mkdtemp\(',
                                                          cell.source)),
        None,
    )
    assert setting is not None, f"{name} does not set AIFORGE_STORE to a fresh temporary file"
    before = cells[setting].source.split('os.environ["AIFORGE_STORE"]')[0]
    earlier = [cell.source for cell in cells[:setting]] + [before]
    for source in earlier:
        for line in source.splitlines():
            assert line.startswith((" ", "\t", "#")) or not any(m in line for m in TURN_MAKERS), (
                f"{name}: {line!r} runs before the tutorial's own store is set"
            )
