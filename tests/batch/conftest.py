"""The fake server most batch tests talk to over HTTP (``tests.support.agents.openai_agent`` is an agent on it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakellm import LLMServer


@pytest.fixture
def srv() -> Iterator[LLMServer]:
    with LLMServer() as server:
        yield server
