"""Re-run the tutorial notebooks and store their outputs, cleaned, for nbval to check against.

    python tests/notebooks/refresh_outputs.py                 # every notebooks/*.ipynb
    python tests/notebooks/refresh_outputs.py 02_tools 06     # the ones whose names start so

Run it after changing a notebook, or when a checked output changes on purpose, then look at the diff.
Kernels start with no API keys and no AIFORGE_* settings, so stored outputs always come from the
embedded and scripted models, and each notebook's kernel gets its own empty store (AIFORGE_STORE, a
temporary file deleted afterwards): nothing is written to your real sessions and log, and no output
depends on what an earlier run left there. Cleaning keeps what a reader needs and nbval compares: execution
counts from 1, no timing metadata, no widget state or widget views (a panel cannot be shown without
a live kernel anyway), no JavaScript outputs.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
DROPPED_MIME_TYPES = ("application/vnd.jupyter.widget-view+json", "application/javascript")
LARGE_OUTPUT_BYTES = 40_000
SECRET_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")


def kernel_environment() -> None:
    """Make the kernels (which inherit this process's environment) key-free and quiet."""
    for name in list(os.environ):
        if name.startswith("AIFORGE_") or name in SECRET_VARIABLES:
            del os.environ[name]
    os.environ["TQDM_DISABLE"] = "1"


def clean(nb: nbformat.NotebookNode) -> list[str]:
    """Strip run-specific noise in place; returns warnings about what looks wrong."""
    problems = []
    nb.metadata.pop("widgets", None)
    for index, cell in enumerate(nb.cells):
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        kept = []
        for output in cell.outputs:
            data = output.get("data", {})
            if any(mime in data for mime in DROPPED_MIME_TYPES):
                continue
            if output.output_type == "error" and "raises-exception" not in cell.metadata.get("tags", []):
                problems.append(f"cell {index}: {output.ename}: {output.evalue}")
            kept.append(output)
        cell.outputs = coalesce_streams(kept)
        size = len(nbformat.writes(nbformat.from_dict({"outputs": kept})))
        if size > LARGE_OUTPUT_BYTES:
            problems.append(f"cell {index}: outputs are {size:,} bytes")
    return problems


def coalesce_streams(outputs: list) -> list:
    """Join consecutive writes to the same stream: a streamed answer is one output, not hundreds."""
    merged: list = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (
            previous is not None
            and output.output_type == previous.output_type == "stream"
            and output.name == previous.name
        ):
            previous.text += output.text
        else:
            merged.append(output)
    return merged


def refresh(path: Path) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="aiforge-refresh-") as store:
        os.environ["AIFORGE_STORE"] = str(Path(store) / "store.sqlite")
        try:
            return _refresh(path)
        finally:
            del os.environ["AIFORGE_STORE"]


def _refresh(path: Path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    client = NotebookClient(
        nb,
        timeout=900,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        record_timing=False,
        store_widget_state=False,
        allow_errors=True,
    )
    client.execute()
    problems = clean(nb)
    nbformat.validate(nb)
    nbformat.write(nb, path)
    return problems


def main(prefixes: list[str]) -> int:
    kernel_environment()
    paths = sorted(p for p in NOTEBOOKS.glob("*.ipynb") if not prefixes or p.name.startswith(tuple(prefixes)))
    failed = False
    for path in paths:
        started = time.perf_counter()
        problems = refresh(path)
        print(f"{path.name}: {time.perf_counter() - started:.0f} s")
        for problem in problems:
            print(f"  {problem}")
            failed = failed or "bytes" not in problem
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
