"""The suite started in the background (``pytest ... &`` in a script, nohup) still gets a real Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CTRL_C_TEST = (
    "tests/modules/chat/test_agent_loop.py::test_ctrl_c_during_a_slow_sync_tool_cancels_the_turn_and_keeps_history"
)


def _ignore_sigint() -> None:
    # What a non-interactive shell does to a command it starts with `&`.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_a_suite_started_with_sigint_ignored_still_gets_keyboard_interrupts() -> None:
    child = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", CTRL_C_TEST],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_ignore_sigint,
    )
    assert child.returncode == 0, child.stdout[-3000:]
