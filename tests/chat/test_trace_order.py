"""A model call is the last record of what it did: a wait or a retry inside the call goes before its record
(issue 30 item 11), so ``response.trace[-1]`` of a plain reply is the reply's model call, however busy the machine.

The waits are forced, not hoped for: a 500 answered first (a retry inside the call), the rate pacer holding the
second request of a tight ``RPM`` (a wait inside the call). The embedded engine's wait for its one slot is in
``tests/embedded/test_local_defaults.py``.
"""

from __future__ import annotations

import pytest

from aiforge import ChatAgent
from aiforge.providers import pacing
from fakellm import Fault, LLMServer, Reply


def agent(server: LLMServer, key: str = "sk-trace-order", **settings: object) -> ChatAgent:
    return ChatAgent(provider="openai", OPENAI_API_KEY=key, OPENAI_BASE_URL=server.openai_base_url, **settings)


def test_a_retry_inside_the_model_call_comes_before_its_record(srv: LLMServer) -> None:
    srv.enqueue(Fault(500), Reply(text="second time lucky"))
    response = agent(srv, MAX_RETRIES=1).chat("hello")

    assert [r["step"] for r in response.trace] == ["retry", "model"]
    retry, call = response.trace
    assert response.trace[-1]["finish_reason"] == "stop" and call["tool_calls"] == []
    assert call["start_ms"] <= retry["start_ms"] <= call["start_ms"] + call["latency_ms"]  # inside the call


@pytest.mark.parametrize("streamed", [False, True])
def test_a_pacer_wait_inside_the_model_call_comes_before_its_record(
    srv: LLMServer, monkeypatch: pytest.MonkeyPatch, streamed: bool
) -> None:
    monkeypatch.setattr(pacing, "WINDOW", 2.0)  # RPM=2 in a 2 s window: the second request waits for the bucket
    paced = agent(srv, key=f"sk-paced-{streamed}", RPM=2)
    paced.chat("first")
    if streamed:
        assert "".join(paced.run_stream("second"))
        response = paced.last_response
        assert response is not None
    else:
        response = paced.chat("second")

    assert response.queue_ms > 0
    assert [r["step"] for r in response.trace] == ["wait", "model"]
    wait, call = response.trace
    assert wait["name"] == "pacer" and response.trace[-1]["finish_reason"] == "stop"
    assert call["start_ms"] <= wait["start_ms"] <= call["start_ms"] + call["latency_ms"]
    # The timeline still draws each step at its time: the call began before the wait inside it.
    assert [s.kind for s in response.timeline().lanes[0].steps] == ["model", "wait"]
