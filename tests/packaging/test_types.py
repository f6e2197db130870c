"""The package type-checks: ``mypy`` with the configuration in pyproject.toml (``[tool.mypy]``) finds nothing.

mypy is in the ``dev`` extra, so a missing mypy is a failure, not a skip. Like the wheel test, it is marked
slow: a first run (no ``.mypy_cache``) takes a minute or two, and the lowest-versions run (.ci/lowest) leaves
it out, since the dependencies' own type hints change between their versions.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_finds_no_errors_in_the_package() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MYPY")}
    done = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    output = f"{done.stdout}\n{done.stderr}".strip()
    assert done.returncode == 0, f"mypy exited {done.returncode}:\n{output}"
    # The configuration names the package: every module of it was checked, not an empty selection.
    checked = re.search(r"Success: no issues found in (\d+) source files", done.stdout)
    assert checked is not None, output
    assert int(checked.group(1)) == len(list((ROOT / "aiforge").rglob("*.py"))), output


def test_mypy_knows_what_agg_returns_for_each_form() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MYPY")}
    usage = Path(__file__).with_name("typed_agg.py")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", str(usage.relative_to(ROOT))],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
