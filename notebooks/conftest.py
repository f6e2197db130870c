"""nbval's kernels (``pytest --nbval notebooks``) never touch the user's home, store or API keys.

pytest loads this file when it collects ``notebooks/``. The environment is set here, at import, because nbval
starts one kernel per notebook and the kernel inherits the environment of that moment: a private HOME and XDG
folders (tests/support/isolation.py), no API keys and no AIFORGE_* settings, AIFORGE_STORE included. So a
kernel starts as one in the user's JupyterLab does, and each tutorial must give itself a store of its own in
its setup cell (a fresh file): after every cell, the user's own store (the default file, here in the private
home) must not exist, else that cell fails, naming the file.
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
from tests.support.workers import no_workers_for_named_files  # noqa: E402

kernel_environment()
ISOLATED_HOME = isolate_home()


def user_store() -> Path:
    """The store a kernel writes to when nothing names another: the default file, in the run's private home."""
    import platformdirs

    store = Path(platformdirs.user_data_dir("aiforge")) / "store.sqlite"
    assert ISOLATED_HOME.home in store.parents, f"{store} is not in the run's private home"
    return store


def _remove(store: Path) -> None:
    for written in store.parent.glob(store.name + "*"):  # with its -wal and -shm files
        written.unlink()


class NotebookStores:
    """Starts each notebook's kernel with no AIFORGE_STORE, and fails a cell after which the user's store exists.

    The store is removed when a notebook starts (a test of the same run may have made it in the private home)
    and after a failing cell, so each notebook is judged on its own.
    """

    def __init__(self) -> None:
        self.notebook: Path | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if item.path.suffix == ".ipynb" and item.path != self.notebook:  # before nbval starts its kernel
            self.notebook = item.path
            os.environ.pop("AIFORGE_STORE", None)
            _remove(user_store())

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> object:
        result = yield
        if item.path.suffix != ".ipynb":  # a test of tests/ may point the XDG folders elsewhere: not ours to check
            return result
        store = user_store()
        if store.exists():
            _remove(store)
            raise AssertionError(
                f"{item.path.name}: after this cell the user's own store exists ({store}): the notebook made an "
                'agent before setting a store of its own (os.environ["AIFORGE_STORE"] in its setup cell)'
            )
        return result


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    no_workers_for_named_files(config)  # before pytest-xdist reads addopts' -n 4


def pytest_configure(config: pytest.Config) -> None:
    # Registered as a plugin, not left as this conftest's hook, so a notebook outside notebooks/ (a test's
    # probe) collected in the same run is checked too.
    if not config.pluginmanager.has_plugin("aiforge-notebook-stores"):
        config.pluginmanager.register(NotebookStores(), "aiforge-notebook-stores")
