"""Embedded-model tests: the real SmolLM2 weights through llama.cpp, in-process (slow; CI runs them)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "embedded: runs the real embedded model (slow; CI runs it)")
