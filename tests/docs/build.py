"""Building the site as the tests do: ``mkdocs build --strict`` of the checkout, offline (tests/docs/test_site.py and
tests/browser/test_docs_site_browser.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

OFFLINE = "http://127.0.0.1:9"
"""Every proxy variable points at the discard port: a request from the build fails instead of leaving the machine."""


def mkdocs_build(site: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of the checkout into ``site``, offline (the same command contributors run)."""
    env = {name: value for name, value in os.environ.items() if not name.lower().endswith("_proxy")}
    env.update(
        PYTHONPATH=str(ROOT),
        NO_MKDOCS_2_WARNING="1",  # material's end-of-life banner, printed on every build
        HTTP_PROXY=OFFLINE,
        HTTPS_PROXY=OFFLINE,
        http_proxy=OFFLINE,
        https_proxy=OFFLINE,
        NO_PROXY="",
        no_proxy="",
    )
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
