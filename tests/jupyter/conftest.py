"""Fixtures of the notebook tests: a real InteractiveShell with the extension loaded, and no machine config."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell


@pytest.fixture(autouse=True)
def isolated_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Any, tmp_path_factory: Any) -> Iterator[None]:
    """No aiforge.yaml and no AIFORGE_* or provider variables from the machine; a private store."""
    for name in list(os.environ):
        if name.startswith("AIFORGE_") or name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
            monkeypatch.delenv(name)
    store = tmp_path_factory.mktemp("store")
    monkeypatch.setenv("AIFORGE_STORE", str(store / "store.sqlite"))
    monkeypatch.chdir(tmp_path)
    yield
    from aiforge.store.db import close_shared

    close_shared(store)


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    ip = InteractiveShell.instance()
    before = set(ip.user_ns)
    ip.run_line_magic("load_ext", "aiforge")
    yield ip
    ip.run_line_magic("unload_ext", "aiforge")
    for name in set(ip.user_ns) - before:
        del ip.user_ns[name]
