"""The progress bar of every long run (``run_batch``, a Batch API job's ``wait``): tqdm in a terminal; in a
notebook, a widget that ends as one line of text.

tqdm's notebook bar is a widget whose saved output keeps the text it had when first shown
(``aiforge batch:   0%|  | 0/40``), so an executed notebook (nbval, nbconvert, a shared .ipynb)
would show a bar stuck at 0%. Here the output is replaced by one line saying how far the bar got.
"""

from __future__ import annotations

import functools
import os
import sys
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

    # tqdm.auto imported tqdm.notebook if it chose it; importing it here would load IPython and ipywidgets (0.1 s)
    # into every terminal run.
    notebook = sys.modules.get("tqdm.notebook")
    if notebook is not None and issubclass(tqdm, notebook.tqdm_notebook):
        return _notebook_bar()(
            total=total, desc=desc, unit=unit, leave=leave, initial=initial, disable=False, display=False
        )
    return tqdm(total=total, desc=desc, unit=unit, leave=leave, initial=initial, disable=False)


@functools.cache
def _notebook_bar() -> type:
    from IPython.display import display
    from tqdm.notebook import tqdm_notebook

    # types-tqdm makes tqdm_notebook generic (over what it iterates), but the class cannot be subscripted at
    # run time: the checker sees the bar over Any, the interpreter the class itself.
    if TYPE_CHECKING:
        Bar = tqdm_notebook[Any]
    else:
        Bar = tqdm_notebook

    class NotebookBar(Bar):
        """tqdm's notebook bar, shown through a display handle that ends as the bar's final text."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._handle = None if self.disable else display(self.container, display_id=True)

        def close(self) -> None:
            if self.disable or self._handle is None:
                super().close()
                return
            handle, self._handle = self._handle, None
            super().close()
            # No rate or time: the saved line is the same on every run (nbval compares outputs).
            state = "done" if self.total is None or self.n >= self.total else "stopped"
            handle.update({"text/plain": f"{self.desc}: {self.n}/{self.total} items, {state}"}, raw=True)

    return NotebookBar
