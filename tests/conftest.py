"""Fixtures for every test: an isolated configuration that can never reach a real API, nor the user's home."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.isolation import isolate_home

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
