"""The batch progress bar: an executed notebook keeps one line saying how far it got, never a stale 0%."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aiforge.core.progress import bar_html, progress_bar

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

REPO = Path(__file__).resolve().parents[2]


def executed_outputs(source: str) -> list[dict]:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source)]
    env = {k: v for k, v in os.environ.items() if k != "TQDM_DISABLE" and not k.startswith("AIFORGE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3").execute(env=env, cwd=str(REPO))
    return notebook.cells[0].outputs


def test_a_finished_and_a_stopped_bar_end_as_one_deterministic_line_each() -> None:
    outputs = executed_outputs(
        "from aiforge.core.progress import progress_bar\n"
        "done = progress_bar(3)\nfor _ in range(3): done.update(1)\ndone.close()\n"
        "stopped = progress_bar(4)\nstopped.update(1)\nstopped.close()\n"
    )

    shown = [o["data"] for o in outputs if o["output_type"] == "display_data"]
    assert shown == [
        {"text/plain": "aiforge batch: 3/3 items, done"},
        {"text/plain": "aiforge batch: 1/4 items, stopped"},
    ]


def test_outside_a_notebook_it_is_tqdms_terminal_bar() -> None:
    bar = progress_bar(2)
    try:
        assert type(bar).__module__.startswith("tqdm") and bar.total == 2 and not bar.leave
    finally:
        bar.close()


def test_run_batch_in_a_notebook_ends_as_one_line_too() -> None:
    outputs = executed_outputs(
        "from aiforge import ChatAgent\n"
        "batch = ChatAgent(provider='scripted', memory='none', STORE=False).run_batch(['a', 'b', 'c'])\n"
    )

    shown = [o["data"] for o in outputs if o["output_type"] == "display_data"]
    assert shown == [{"text/plain": "aiforge batch: 3/3 items, done"}]


def test_a_terminal_bar_loads_neither_ipython_nor_ipywidgets() -> None:
    probe = (
        "import sys; from aiforge.core.progress import progress_bar; progress_bar(1).close(); "
        "print('IPython' in sys.modules, 'ipywidgets' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.split() == ["False", "False"]


def test_a_notebook_bar_is_one_line_of_html_that_jupyterlabs_sanitizer_keeps() -> None:
    from tests.chat.jupyterlab_sanitizer import dropped

    meter = {"n": 4, "total": 10, "elapsed": 2.0, "prefix": "aiforge batch", "unit": "item", "ncols": None}
    page = bar_html(meter)

    assert dropped(page) == []
    assert "aiforge batch: " in page and "40%" in page and "4/10" in page and "width: 40.0%" in page
    assert "&lt;b&gt;x&lt;/b&gt;: " in bar_html({**meter, "prefix": "<b>x</b>"})  # a description is text
