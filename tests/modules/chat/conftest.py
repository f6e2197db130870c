"""Fixtures of the chat module tests: an isolated configuration, tools, and the fake LLM server."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.tools import StructuredTool

from aiforge import ChatAgent
from tests.support.llm_server import LLMServer

_PROVIDER_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")
_UNREACHABLE = "http://127.0.0.1:9"  # the discard port: a test that forgets its base URL fails fast


@pytest.fixture(autouse=True)
def isolated_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """No aiforge.yaml, no AIFORGE_* or provider variables from the machine; never a real API."""
    for name in list(os.environ):
        if name.startswith("AIFORGE_") or name in _PROVIDER_ENV or name.startswith("LANGGRAPH_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_BASE_URL", _UNREACHABLE)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", _UNREACHABLE)
    monkeypatch.setenv("TQDM_DISABLE", "1")
    monkeypatch.chdir(tmp_path)


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
