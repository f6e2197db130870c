"""The test run never touches the user's home: every default folder, subprocess and nbval kernel uses a private one.

The user's real home is read from the password database where there is one (it does not follow ``HOME``), so
these tests catch a default path that still leads there whatever the run did to the environment.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import nbformat
import platformdirs
import pytest

from aiforge.store.db import Store, close_shared
from tests.support.isolation import current_isolation

ROOT = Path(__file__).resolve().parents[1]
RUN = current_isolation()
"""The run's private home, which tests/conftest.py sets up before any test runs."""


def _real_home() -> Path:
    try:
        import pwd
    except ImportError:  # Windows: the home as it was before the run changed it
        assert RUN is not None, "tests/conftest.py did not isolate the run's home"
        return RUN.real_home
    return Path(pwd.getpwuid(os.getuid()).pw_dir).resolve()


def _private_home() -> Path:
    assert RUN is not None, "tests/conftest.py did not isolate the run's home"
    return RUN.home


def _assert_private(path: str | Path) -> None:
    resolved = Path(path).resolve()
    assert not resolved.is_relative_to(_real_home()), f"{resolved} is in the user's home"
    assert resolved.is_relative_to(_private_home()), f"{resolved} is outside the run's private home"


def _log_rows(store: Path, prompt: str) -> int:
    with sqlite3.connect(store) as conn:
        return int(conn.execute("SELECT count(*) FROM log WHERE prompt = ?", (prompt,)).fetchone()[0])


def test_the_private_home_is_not_the_users() -> None:
    assert not _private_home().is_relative_to(_real_home())
    _assert_private(Path.home())
    _assert_private(os.path.expanduser("~/.ipython"))


@pytest.mark.parametrize("folder", ["user_data_dir", "user_cache_dir", "user_config_dir", "user_state_dir"])
def test_platformdirs_folders_are_in_the_private_home(folder: str) -> None:
    _assert_private(getattr(platformdirs, folder)("aiforge"))


@pytest.mark.parametrize("kind", ["data", "cache"])
def test_the_default_store_and_cache_files_are_in_the_private_home(kind: str) -> None:
    store = Store.for_setting(True, kind=kind)  # type: ignore[arg-type]
    assert store is not None and store.path is not None
    try:
        _assert_private(store.path)
    finally:
        close_shared(store.path.parent)


@pytest.mark.slow
def test_a_chat_in_a_subprocess_with_the_default_store_logs_to_the_private_home(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AIFORGE_STORE")  # STORE's default: a file in the user's data directory
    prompt = "isolation probe from a subprocess"
    script = (
        "from aiforge import ChatAgent\n"
        "from aiforge.store.access import store_of\n"
        "from aiforge.store.log import flush_all\n"
        f"ChatAgent(provider='scripted').chat({prompt!r})\n"
        "flush_all()\n"
        "print(store_of().path)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    store = Path(done.stdout.strip().splitlines()[-1])
    _assert_private(store)
    assert _log_rows(store, prompt) == 1


def _probe_notebook(path: Path, facts: Path, prompt: str, *, own_store: bool) -> None:
    """A one-cell notebook that makes a turn and writes where it went; with ``own_store``, first its own store,
    as every tutorial's setup cell does."""
    source = (
        "import json, os, sqlite3, tempfile, platformdirs\n"
        + (
            "os.environ['AIFORGE_STORE'] = os.path.join(tempfile.mkdtemp(prefix='aiforge-tutorial-'), 'store.sqlite')\n"
            if own_store
            else ""
        )
        + "from aiforge import ChatAgent\n"
        "from aiforge.store.access import store_of\n"
        "from aiforge.store.log import flush_all\n"
        f"ChatAgent(provider='scripted').chat({prompt!r})\n"
        "flush_all()\n"
        "store = str(store_of().path)\n"
        "with sqlite3.connect(store) as conn:\n"
        f"    rows = conn.execute('SELECT count(*) FROM log WHERE prompt = ?', ({prompt!r},)).fetchone()[0]\n"
        "facts = {'store': store, 'rows': rows, 'home': os.path.expanduser('~'),\n"
        "         'data': platformdirs.user_data_dir('aiforge'),\n"
        "         'keys': sorted(k for k in os.environ if k.endswith('_API_KEY'))}\n"
        f"with open({str(facts)!r}, 'w') as out:\n"
        "    json.dump(facts, out)\n"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


@pytest.mark.slow
def test_nbval_kernels_get_the_private_home_and_fail_a_notebook_that_writes_the_users_store(tmp_path: Path) -> None:
    """The README's nbval command, on two probe notebooks collected beside notebooks/ (so its conftest loads): the
    kernels start as in the user's JupyterLab (no AIFORGE_STORE) in the private home; the probe that sets its own
    store first passes, the one that writes to the user's store fails (issue 30 item 10: the tutorials did)."""
    prompt = "isolation probe from an nbval kernel"
    own, own_facts = tmp_path / "isolation_probe_own_store.ipynb", tmp_path / "own.json"
    careless, careless_facts = tmp_path / "isolation_probe_users_store.ipynb", tmp_path / "careless.json"
    _probe_notebook(own, own_facts, prompt, own_store=True)
    _probe_notebook(careless, careless_facts, prompt, own_store=False)
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-must-not-reach-the-kernel"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env"]
    command += ["-k", "isolation_probe", "notebooks", str(own), str(careless)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 1 and "1 failed, 1 passed" in output, output
    assert "isolation_probe_users_store.ipynb: after this cell the user's own store exists" in output

    seen = json.loads(own_facts.read_text())
    _assert_private(seen["home"])
    _assert_private(seen["data"])
    assert not Path(seen["store"]).is_relative_to(seen["data"]) and seen["rows"] == 1
    assert seen["keys"] == []
    wrote = json.loads(careless_facts.read_text())
    assert Path(wrote["store"]) == Path(wrote["data"]) / "store.sqlite" and wrote["rows"] == 1
    _assert_private(wrote["store"])  # the user's store of the run's private home, never the real one
