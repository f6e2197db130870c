"""The progress bar of every long run (``run_batch``, a Batch API job's ``wait``): tqdm in a terminal; in a
notebook, an HTML line updated in place that ends as one line of text.

In a notebook the bar is tqdm's meter drawn as HTML through a display handle, not tqdm's widget bar. The widget
bar is a box of three widgets that a short batch displays and closes within moments: a JupyterLab page that lags
the kernel was still building the box's views when the box went away, and its console filled with ipywidgets'
"Could not add child view to box" and "processLuminoMessage" errors. An HTML output has no views to build.
The output is replaced at the end by one line saying how far the bar got, so an executed notebook (nbval,
nbconvert, a shared .ipynb) never keeps a bar stuck at 0%.
"""

from __future__ import annotations

import functools
import html
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

DESCRIPTION = "aiforge batch"


def progress_enabled(setting: bool) -> bool:
    """True when a bar is wanted: the ``PROGRESS_BAR`` ``setting`` is on and ``TQDM_DISABLE`` is not set.

    ``TQDM_DISABLE`` is read now, on every run: tqdm itself reads it once, at import.
    """
    flag = os.environ.get("TQDM_DISABLE", "").strip().lower()
    return setting and flag in ("", "0", "false", "no")


def progress_bar(
    total: int, desc: str = DESCRIPTION, unit: str = "item", leave: bool = False, initial: int = 0
) -> Any:
    """A tqdm bar over ``total`` items, ``initial`` of them done before it starts (``tqdm.auto``'s kind).

    ``initial`` (items kept from an earlier run) shows from the first frame and stays out of the rate.

    The caller decided it is wanted (``progress_enabled``), so ``disable=False``: tqdm's own default is the
    ``TQDM_DISABLE`` of the moment it was imported.
    """
    from tqdm.auto import tqdm

    # tqdm.auto imported tqdm.notebook if it chose it (an IPython kernel); importing it here would load IPython and
    # ipywidgets (0.1 s) into every terminal run.
    notebook = sys.modules.get("tqdm.notebook")
    if notebook is not None and issubclass(tqdm, notebook.tqdm_notebook):
        return _notebook_bar()(total=total, desc=desc, unit=unit, leave=leave, initial=initial, disable=False)
    return tqdm(total=total, desc=desc, unit=unit, leave=leave, initial=initial, disable=False)


def bar_html(meter: Mapping[str, Any]) -> str:
    """One line of HTML for tqdm's ``format_dict`` ``meter``: the description and percentage, a bar, the counts.

    Only tags and styles that JupyterLab's sanitizer keeps, and fixed colours that read on light and dark themes.
    """
    from tqdm.std import tqdm

    text = tqdm.format_meter(**{**meter, "bar_format": "{l_bar}\x00{r_bar}"})
    left, _, right = text.partition("\x00")
    total, n = meter.get("total"), meter.get("n", 0)
    done = 100.0 if not total else max(0.0, min(100.0, 100.0 * n / total))
    return (
        "<div class='aiforge-progress' style='white-space: pre; font-family: monospace'>"
        f"<span>{html.escape(left.rstrip(' |'))} </span>"
        "<span style='display: inline-block; width: 200px; height: 10px; "
        "background-color: rgba(128, 128, 128, 0.25)'>"
        f"<span style='display: block; width: {done:.1f}%; height: 10px; background-color: #1976d2'></span></span>"
        f"<span> {html.escape(right.lstrip(' |'))}</span></div>"
    )


@functools.cache
def _notebook_bar() -> type:
    from IPython.display import display
    from tqdm.std import tqdm as std_tqdm

    # types-tqdm makes tqdm generic (over what it iterates), but the class cannot be subscripted at run time: the
    # checker sees the bar over Any, the interpreter the class itself.
    if TYPE_CHECKING:
        Bar = std_tqdm[Any]
    else:
        Bar = std_tqdm

    class NotebookBar(Bar):
        """tqdm's meter as an HTML output, updated through a display handle; it ends as the bar's final text.

        ``gui=True`` keeps tqdm from writing to a stream: every refresh comes to ``display``.
        """

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self._handle: Any = None
            super().__init__(*args, **{**kwargs, "gui": True})
            if not self.disable:
                self._handle = display(self._bundle(), display_id=True, raw=True)

        def _bundle(self) -> dict[str, str]:
            meter = self.format_dict
            return {"text/plain": self.format_meter(**meter), "text/html": bar_html(meter)}

        def display(self, msg: str | None = None, pos: int | None = None) -> None:
            if self._handle is not None:
                self._handle.update(self._bundle(), raw=True)

        def close(self) -> None:
            handle, self._handle = self._handle, None
            super().close()
            if handle is None:
                return
            # No rate or time: the saved line is the same on every run (nbval compares outputs).
            state = "done" if self.total is None or self.n >= self.total else "stopped"
            handle.update({"text/plain": f"{self.desc}: {self.n}/{self.total} items, {state}"}, raw=True)

    return NotebookBar
