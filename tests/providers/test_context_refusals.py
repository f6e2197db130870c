"""A request longer than the server's context, as each server words it, through the real SDKs against fakellm: a
``ContextWindowExceededError`` naming ``CONTEXT_WINDOW`` and the server's own number, never retried."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from aiforge import ChatAgent
from aiforge.core.types import BadRequestError, ContextWindowExceededError
from fakellm import Fault, LLMServer

KEY = "sk-context-test-key-0123456789"

# The bodies as the servers send them: llama.cpp's server (checked against the real one in
# test_llamacpp_server.py), OpenAI's Chat Completions, Anthropic's Messages API.
LLAMACPP = Fault(
    status=400,
    message="request (7101 tokens) exceeds the available context size (1024 tokens), try increasing it",
    error_type="exceed_context_size_error",
)
OPENAI = Fault(
    status=400,
    message=(
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. "
        "Please reduce the length of the messages."
    ),
    error_type="invalid_request_error",
    code="context_length_exceeded",
)
OPENAI_NO_NUMBER = Fault(
    status=400, message="Your input exceeds the context window of this model. Please adjust your input and try again.",
    error_type="invalid_request_error", code="context_length_exceeded",
)
ANTHROPIC = Fault(
    status=400, message="prompt is too long: 210000 tokens > 200000 maximum", error_type="invalid_request_error"
)


@pytest.fixture
def srv() -> Iterator[LLMServer]:
    with LLMServer() as server:
        yield server


def agent(server: LLMServer, protocol: str) -> ChatAgent:
    common: dict[str, Any] = {"MAX_RETRIES": 2, "memory": "none"}
    if protocol == "anthropic":
        return ChatAgent(
            provider="anthropic", ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=server.anthropic_base_url, **common
        )
    return ChatAgent(provider="openai", OPENAI_API_KEY=KEY, OPENAI_BASE_URL=server.openai_base_url, **common)


@pytest.mark.parametrize(
    ("protocol", "fault", "window", "tokens"),
    [
        ("openai", LLAMACPP, 1024, 7101),
        ("openai", OPENAI, 128000, 130000),
        ("anthropic", ANTHROPIC, 200000, 210000),
    ],
    ids=["llamacpp", "openai", "anthropic"],
)
def test_a_context_length_refusal_names_context_window_and_the_servers_number(
    srv: LLMServer, protocol: str, fault: Fault, window: int, tokens: int
) -> None:
    srv.default = lambda request: fault
    with pytest.raises(ContextWindowExceededError) as refused:
        agent(srv, protocol).chat("a long question")
    error = refused.value
    assert isinstance(error, BadRequestError) and error.status_code == 400
    assert (error.context_window, error.prompt_tokens) == (window, tokens)
    assert f"CONTEXT_WINDOW={window}" in str(error) and str(fault.message) in str(error)
    assert srv.request_count == 1  # not retried: the same request is as long again
    assert KEY not in str(error) and KEY not in repr(error.body)


def test_a_refusal_without_a_number_still_names_context_window(srv: LLMServer) -> None:
    srv.default = lambda request: OPENAI_NO_NUMBER
    with pytest.raises(ContextWindowExceededError, match="set it to the server's context size") as refused:
        agent(srv, "openai").chat("a long question")
    assert refused.value.context_window is None and "CONTEXT_WINDOW" in str(refused.value)


def test_another_bad_request_is_not_a_context_refusal(srv: LLMServer) -> None:
    srv.default = lambda request: Fault(status=400, message="Invalid 'temperature'", code="invalid_value")
    with pytest.raises(BadRequestError) as refused:
        agent(srv, "openai").chat("hi")
    assert not isinstance(refused.value, ContextWindowExceededError) and "CONTEXT_WINDOW" not in str(refused.value)


def test_a_context_refusal_sent_as_a_5xx_is_not_retried(srv: LLMServer) -> None:
    # Some gateways pass a backend's refusal on as a 500; a 5xx is retried, but this one would fail as often.
    srv.default = lambda request: Fault(status=500, message=str(LLAMACPP.message), error_type="server_error")
    with pytest.raises(ContextWindowExceededError):
        agent(srv, "openai").chat("a long question")
    assert srv.request_count == 1
