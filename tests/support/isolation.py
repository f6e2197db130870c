"""A private home for a whole test run: the suite, its subprocesses and nbval's kernels never touch the user's.

``isolate_home()`` runs at import time of ``tests/conftest.py`` and ``notebooks/conftest.py``, before any test
imports aiforge: it points ``HOME``, the XDG directories, the Windows profile folders and ``AIFORGE_STORE`` at a
temporary folder, so every default path (platformdirs' data, cache and config directories, so aiforge's
default store and cache; IPython's and Jupyter's folders) resolves inside it. Setting ``os.environ`` rather
than patching per test matters: dask workers, Jupyter servers and kernels started by module-scoped fixtures
(or by nbval) inherit the environment as it is when they start, before any function-scoped fixture runs.

``AIFORGE_CACHE`` is not set: a path there would switch the response cache on for every process; the cache is
off by default and, when a test turns it on with ``True``, its default file is in the private cache directory.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

_HOME_VARIABLE = "_AIFORGE_TESTS_HOME"
_REAL_HOME_VARIABLE = "_AIFORGE_TESTS_REAL_HOME"
# Not AIFORGE_*: the per-test fixture clears those, and a nested run (a test starting pytest) must find the
# run's home to reuse it instead of taking the outer private home for the user's.


@dataclass(frozen=True)
class IsolatedHome:
    """Where the run's private home is, and the user's real one as it was before (for asserting against)."""

    home: Path
    real_home: Path

    @property
    def store(self) -> Path:
        """The store file every process of the run writes to unless a test names another."""
        return self.home / "aiforge-store.sqlite"


def _private_folders(home: Path) -> dict[str, Path]:
    local = home / ".local"
    return {
        "HOME": home,
        "USERPROFILE": home,
        "XDG_DATA_HOME": local / "share",
        "XDG_STATE_HOME": local / "state",
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_CONFIG_HOME": home / ".config",
        # Windows: platformdirs asks the shell for these folders unless an override variable names them.
        "APPDATA": home / "AppData" / "Roaming",
        "LOCALAPPDATA": home / "AppData" / "Local",
        "WIN_PD_OVERRIDE_CSIDL_APPDATA": home / "AppData" / "Roaming",
        "WIN_PD_OVERRIDE_CSIDL_LOCAL_APPDATA": home / "AppData" / "Local",
    }


def current_isolation() -> IsolatedHome | None:
    """The run's private home if ``isolate_home()`` ran in this process or a parent; None when nothing is isolated."""
    existing = os.environ.get(_HOME_VARIABLE)
    if existing and os.environ.get("HOME") == existing:
        return IsolatedHome(home=Path(existing), real_home=Path(os.environ[_REAL_HOME_VARIABLE]))
    return None


def isolate_home() -> IsolatedHome:
    """Point this process's (and its children's) home, XDG folders and store at a private folder; idempotent."""
    existing = current_isolation()
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # set in a pytest-xdist worker before it imports conftest.py
    if existing is not None and (not worker or existing.home.name == f"worker-{worker}"):
        return existing
    if existing is not None:
        # A worker inherits the run's home from the controller: it gets a home of its own inside it, so tests
        # and notebooks on other workers never see its default store, its caches or its Jupyter files.
        real_home, home = existing.real_home, existing.home / f"worker-{worker}"
        home.mkdir()
    else:
        real_home = Path(os.path.expanduser("~")).resolve()
        home = Path(tempfile.mkdtemp(prefix="aiforge-tests-home-")).resolve()
        # Removed when the run ends; a kernel or worker still writing then leaves a file in the temp dir.
        atexit.register(shutil.rmtree, home, ignore_errors=True)
    for name, folder in _private_folders(home).items():
        folder.mkdir(parents=True, exist_ok=True)
        os.environ[name] = str(folder)
    os.environ[_HOME_VARIABLE] = str(home)
    os.environ[_REAL_HOME_VARIABLE] = str(real_home)
    isolated = IsolatedHome(home=home, real_home=real_home)
    os.environ["AIFORGE_STORE"] = str(isolated.store)
    return isolated
