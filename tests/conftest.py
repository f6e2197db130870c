"""Fixtures for every test: an isolated configuration that can never reach a real API, nor the user's home."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.isolation import isolate_home
from tests.support.workers import no_workers_for_named_files

# A suite started in the background (`pytest ... &` in a script, nohup) inherits SIGINT ignored, and Python then
# installs no KeyboardInterrupt handler: the tests that press Ctrl-C with a real SIGINT would see nothing happen.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

ISOLATED_HOME = isolate_home()
"""The run's private HOME, XDG folders and store, set before any test imports aiforge (tests/support/isolation.py)."""

pytest_plugins = ["tests.strict_asyncio"]  # dropped async work fails the test
_PROVIDER_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")
UNREACHABLE = "http://127.0.0.1:9"
"""The discard port: a test that forgets its base URL fails fast instead of reaching a real API."""


@pytest.fixture(autouse=True)
def isolated_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Any, tmp_path_factory: Any) -> Iterator[None]:
    """No aiforge.yaml, no AIFORGE_* or provider variables from the machine; never a real API; a private store."""
    for name in list(os.environ):
        if name.startswith("AIFORGE_") or name in _PROVIDER_ENV or name.startswith("LANGGRAPH_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_BASE_URL", UNREACHABLE)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", UNREACHABLE)
    monkeypatch.setenv("TQDM_DISABLE", "1")
    # Logging is on by default: every test's turns go to its own store, never the user's data directory.
    store = tmp_path_factory.mktemp("store")
    monkeypatch.setenv("AIFORGE_STORE", str(store / "store.sqlite"))
    monkeypatch.chdir(tmp_path)
    yield
    from aiforge.store.db import close_shared

    close_shared(store)


FAST_LOOP_LEAVES_OUT = ("slow", "embedded", "browser")
"""Markers plain ``pytest`` deselects (the fast loop); ``--all``, an explicit ``-m`` or naming the file runs them."""
_LEFT_OUT = pytest.StashKey[int]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--all",
        action="store_true",
        default=False,
        help="also run the slow, embedded-model and browser tests (plain pytest leaves them out; CI passes --all)",
    )


def _named_files(config: pytest.Config) -> set[str]:
    """The test files named on the command line (``path.py`` or ``path.py::test``), resolved."""
    root = config.invocation_params.dir
    named = set()
    for arg in config.invocation_params.args:
        path = str(arg).split("::", 1)[0]
        if path.endswith(".py") and not path.startswith("-"):
            named.add(str((root / path).resolve()))
    return named


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    no_workers_for_named_files(config)  # before pytest-xdist reads addopts' -n 4


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Plain ``pytest`` runs the fast tests: items marked slow/embedded/browser are deselected (not skipped),
    unless ``--all`` or ``-m`` was given, or the item's file was named on the command line."""
    if config.getoption("--all") or config.option.markexpr:
        return
    named = _named_files(config)
    keep: list[pytest.Item] = []
    left_out: list[pytest.Item] = []
    for item in items:
        slow = any(item.get_closest_marker(name) for name in FAST_LOOP_LEAVES_OUT)
        (left_out if slow and str(item.path.resolve()) not in named else keep).append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = keep
    config.stash[_LEFT_OUT] = len(left_out)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    left_out = config.stash.get(_LEFT_OUT, 0)
    if left_out:
        terminalreporter.write_line(
            f"fast loop: {left_out} slow/embedded/browser tests deselected; `pytest --all` runs everything"
        )


@pytest.fixture
def pacer_on_a_fake_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The endpoints' pacers made during the test wait on a clock that moves only when they sleep.

    For tests about retries, not about pacing: a 429's pause and the slower pace after it (a second per
    request once a 429 came) cost no wall time, while the retry's own wait (``asyncio.sleep`` in
    ``core.retry``) stays real. The pace itself is checked on fake clocks in tests/providers/test_pacing.py.
    """
    from aiforge.providers import pacing

    now = [1000.0]

    async def sleep(seconds: float) -> None:
        now[0] += seconds

    real_pacer = pacing.Pacer
    monkeypatch.setattr(pacing, "_pacers", {})
    monkeypatch.setattr(pacing, "Pacer", lambda: real_pacer(clock=lambda: now[0], sleep=sleep))
