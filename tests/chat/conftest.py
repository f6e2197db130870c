"""Fixtures of the chat module tests: an isolated configuration, tools, and the fake LLM server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.tools import StructuredTool

from aiforge import ChatAgent
from fakellm import LLMServer


def calculate(expression: str) -> str:
    """Evaluate a math expression."""
    return str(eval(expression))  # the reference page's simplified example


@pytest.fixture
def calc_tool() -> StructuredTool:
    """The reference page's calculator tool."""
    return StructuredTool.from_function(calculate, name="calculator", description="Evaluate math")


@pytest.fixture
def srv() -> Iterator[LLMServer]:
    """A strict fake OpenAI + Anthropic server: it rejects orphan tool calls and results with 400."""
    with LLMServer(strict=True) as server:
        yield server


WireAgent = Callable[..., ChatAgent]


def make_wire_agent(server: LLMServer, protocol: str, **kwargs: Any) -> ChatAgent:
    """A ChatAgent on the real openai or anthropic SDK, talking to ``server``."""
    kwargs.setdefault("MAX_RETRIES", 0)
    if protocol == "openai":
        return ChatAgent(
            provider="openai", OPENAI_API_KEY="sk-test-key", OPENAI_BASE_URL=server.openai_base_url, **kwargs
        )
    return ChatAgent(
        provider="anthropic",
        ANTHROPIC_API_KEY="sk-ant-test-key",
        ANTHROPIC_BASE_URL=server.anthropic_base_url,
        **kwargs,
    )


@pytest.fixture(params=["openai", "anthropic"])
def protocol(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def wire_agent(srv: LLMServer, protocol: str) -> WireAgent:
    """``wire_agent(**kwargs)``: a ChatAgent of the parametrized protocol against ``srv``."""
    return lambda **kwargs: make_wire_agent(srv, protocol, **kwargs)
