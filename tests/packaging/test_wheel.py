"""The built wheel, installed (not editable) into a fresh venv, is what users get: it imports and answers.

The fresh venv borrows the dependencies of the venv running the tests through a path file (adding that
directory does not run its own .pth files, so the editable aiforge there stays out of sight): the test
stays offline and fast, while aiforge itself can only come from the wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str | Path, cwd: Path, timeout: float = 600) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIFORGE_", "PYTHON"))}
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", out, ROOT, cwd=out)
    (built,) = out.glob("aiforge_kit-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel; returns its bin directory."""
    env_dir = tmp_path_factory.mktemp("venv")
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = Path(_run(bin_dir / "python", "-c", purelib, cwd=env_dir).strip())
    (site / "borrowed_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    _run(bin_dir / "python", "-m", "pip", "install", "--no-deps", "--no-index", "-q", wheel, cwd=env_dir)
    return bin_dir


def test_wheel_holds_the_package_and_py_typed_but_no_tests_or_notebooks(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    name, version = wheel.name.split("-")[:2]
    assert {n.split("/", 1)[0] for n in names} == {"aiforge", f"{name}-{version}.dist-info"}
    assert "aiforge/py.typed" in names
    assert "aiforge/cli/__init__.py" in names and "aiforge/chat/agent.py" in names
    assert not [n for n in names if "/tests/" in n or n.endswith(".ipynb")]


def test_import_and_version_come_from_the_wheel(wheel: Path, installed: Path, tmp_path: Path) -> None:
    out = _run(
        installed / "python", "-c", "import aiforge; print(aiforge.__file__); print(aiforge.__version__)", cwd=tmp_path
    )
    location, version = out.split()
    assert Path(location).is_relative_to(installed.parent), location
    assert version == wheel.name.split("-")[1]
    assert _run(installed / "aiforge", "--version", cwd=tmp_path).strip() == f"aiforge-kit {version}"


def test_readme_main_command_answers_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    answer = _run(installed / "aiforge", "chat", "What is the capital of France?", cwd=tmp_path)
    assert "Paris" in answer
