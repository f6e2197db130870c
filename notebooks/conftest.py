"""nbval's kernels (``pytest --nbval notebooks``) never touch the user's home, store or API keys.

pytest loads this file when it collects ``notebooks/``. The environment is set here, at import, because nbval
starts one kernel per notebook and the kernel inherits the environment of that moment: a private HOME and XDG
folders (tests/support/isolation.py), no API keys and no AIFORGE_* settings, and each notebook its own empty
store, as tests/notebooks/refresh_outputs.py does when it records the outputs nbval compares against.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # pytest puts only this folder on sys.path (it is not a package)
    sys.path.insert(0, str(ROOT))

from tests.notebooks.refresh_outputs import kernel_environment  # noqa: E402
from tests.support.isolation import isolate_home  # noqa: E402

kernel_environment()
ISOLATED_HOME = isolate_home()


def notebook_store(notebook: Path) -> Path:
    """The store file the kernel of ``notebook`` writes to: one per notebook, in the run's private home."""
    return ISOLATED_HOME.home / "notebook-stores" / notebook.stem / "store.sqlite"


class NotebookStores:
    """Names a notebook's own store before nbval starts its kernel (in the setup of the notebook's first cell)."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if item.path.suffix == ".ipynb":
            store = notebook_store(item.path)
            store.parent.mkdir(parents=True, exist_ok=True)
            os.environ["AIFORGE_STORE"] = str(store)


def pytest_configure(config: pytest.Config) -> None:
    # Registered as a plugin, not left as this conftest's hook, so a notebook outside notebooks/ (a test's
    # probe) collected in the same run gets its own store too.
    if not config.pluginmanager.has_plugin("aiforge-notebook-stores"):
        config.pluginmanager.register(NotebookStores(), "aiforge-notebook-stores")
