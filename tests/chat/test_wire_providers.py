"""The key flows through the real openai and anthropic SDKs over HTTP, against the strict fake server."""

from __future__ import annotations

import asyncio
import json

import pytest

from aiforge import ChatAgent
from aiforge.core.types import ProviderError, RateLimitError
from fakellm import Fault, LLMServer, RecordedRequest, Reply, ToolCallSpec
from tests.chat.checks import assert_valid_history
from tests.chat.conftest import make_wire_agent

SUMMARIZER = "You write faithful, compact conversation summaries."


def system_of(request: RecordedRequest) -> str:
    """The system prompt as sent: OpenAI's first message, Anthropic's ``system`` parameter."""
    if request.protocol == "openai":
        return "\n\n".join(m["content"] for m in request.messages if m["role"] == "system")
    system = request.body.get("system")
    return system if isinstance(system, str) else "".join(b["text"] for b in system or [])


def summary_or_none(request: RecordedRequest) -> Reply | None:
    if SUMMARIZER in system_of(request):
        return Reply(text="SUMMARY: the user asked about France.")
    return None


def all_accepted(srv: LLMServer) -> bool:
    """True when the strict server answered every request that was not an injected fault with 200."""
    return all(r.status == 200 or isinstance(r.response, Fault) for r in srv.requests)


# ---------------------------------------------------------------------------
# Plain turns
# ---------------------------------------------------------------------------


def test_plain_turn_sends_system_prompt_and_user_message(srv, protocol, wire_agent) -> None:
    srv.enqueue(Reply(text="The capital of France is Paris."))
    agent = wire_agent(system_prompt="You are a geography tutor.")

    response = agent.chat("What is the capital of France?")

    assert response.message == "The capital of France is Paris."
    (request,) = srv.requests
    assert system_of(request) == "You are a geography tutor."
    if protocol == "openai":
        assert request.messages == [
            {"role": "system", "content": "You are a geography tutor."},
            {"role": "user", "content": "What is the capital of France?"},
        ]
    else:
        assert request.messages == [
            {"role": "user", "content": [{"type": "text", "text": "What is the capital of France?"}]}
        ]
        assert request.body["max_tokens"] >= 1


def test_plain_turn_reports_model_tokens_and_a_priced_cost(srv, protocol, wire_agent) -> None:
    srv.enqueue(Reply(text="Hi!", usage={"input_tokens": 120, "output_tokens": 30}))
    agent = wire_agent()

    response = agent.chat("Hello!")

    assert response.model == srv.requests[0].model == agent.model
    assert (response.input_tokens, response.output_tokens) == (120, 30)
    assert response.cost > 0 and response.priced
    assert agent.cost_tracker.session_total == pytest.approx(response.cost)


def test_multi_turn_history_is_resent(srv, protocol, wire_agent) -> None:
    srv.enqueue(Reply(text="It is sunny in NYC."), Reply(text="Rain tomorrow in NYC."))
    agent = wire_agent()

    agent.chat("What's the weather in NYC?")
    agent.chat("What about tomorrow?")

    texts = [json.dumps(m["content"]) for m in srv.requests[1].messages]
    assert any("NYC?" in t for t in texts) and any("sunny in NYC" in t for t in texts)
    assert srv.requests[1].last_user_text == "What about tomorrow?"


def test_an_empty_reply_is_kept_and_the_next_request_is_accepted(srv, protocol, wire_agent) -> None:
    srv.enqueue(Reply(text=""), Reply(text="second answer"))
    agent = wire_agent()

    first = agent.chat("say nothing")
    second = agent.chat("now say something")

    assert (first.message, second.message) == ("", "second answer")
    assert all_accepted(srv)
    assert srv.requests[1].last_user_text.endswith("now say something")


def test_model_and_temperature_settings_reach_the_request(srv, protocol, monkeypatch) -> None:
    monkeypatch.setattr("aiforge.providers.base._warned_unsent", set())  # "once" is per process
    if protocol == "anthropic":  # the Messages API takes no temperature: aiforge says so, once
        with pytest.warns(UserWarning, match="TEMPERATURE=0.3 is not sent to the anthropic provider"):
            agent = make_wire_agent(srv, protocol, memory="summary", memory_k=10, MODEL="gpt-4o", TEMPERATURE=0.3)
    else:
        agent = make_wire_agent(srv, protocol, memory="summary", memory_k=10, MODEL="gpt-4o", TEMPERATURE=0.3)

    response = agent.chat("hi")

    request = srv.requests[0]
    assert request.model == response.model == "gpt-4o"
    if protocol == "openai":
        assert request.body["temperature"] == 0.3


# ---------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------


def test_tools_are_sent_in_the_protocols_tool_shape(srv, protocol, wire_agent, calc_tool) -> None:
    agent = wire_agent(tools=[calc_tool])

    agent.chat("hi")

    (tool,) = srv.requests[0].body["tools"]
    if protocol == "openai":
        assert tool["type"] == "function" and tool["function"]["name"] == "calculator"
        assert tool["function"]["parameters"]["required"] == ["expression"]
    else:
        assert tool["name"] == "calculator" and tool["input_schema"]["required"] == ["expression"]


def test_tool_round_trip_sends_the_result_tied_to_the_call(srv, protocol, wire_agent, calc_tool) -> None:
    srv.enqueue(
        Reply(tool_calls=[ToolCallSpec("calculator", {"expression": "249.99 * 0.85"}, id="call_1")]),
        Reply(text="15% off is $212.49."),
    )
    agent = wire_agent(tools=[calc_tool])

    response = agent.chat("What's 15% off $249.99?")

    assert response.message == "15% off is $212.49." and response.iterations == 1
    assert response.tool_calls[0].to_text() == "calculator({'expression': '249.99 * 0.85'}) → 212.4915"
    assert all_accepted(srv)
    messages = srv.requests[1].messages
    if protocol == "openai":
        assert messages[-2]["tool_calls"][0]["id"] == "call_1"
        assert messages[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "212.4915"}
    else:
        assert messages[-2]["content"] == [
            {"type": "tool_use", "id": "call_1", "name": "calculator", "input": {"expression": "249.99 * 0.85"}}
        ]
        assert messages[-1] == {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "212.4915"}],
        }


def test_parallel_tool_results_are_all_sent_in_the_next_request(srv, protocol, wire_agent, calc_tool) -> None:
    srv.enqueue(
        Reply(
            tool_calls=[
                ToolCallSpec("calculator", {"expression": "1+1"}, id="c1"),
                ToolCallSpec("calculator", {"expression": "2+2"}, id="c2"),
            ]
        ),
        Reply(text="2 and 4"),
    )
    agent = wire_agent(tools=[calc_tool])

    agent.chat("both sums")

    messages = srv.requests[1].messages
    if protocol == "openai":
        assert [(m["role"], m.get("tool_call_id"), m["content"]) for m in messages[-2:]] == [
            ("tool", "c1", "2"),
            ("tool", "c2", "4"),
        ]
    else:
        assert messages[-1]["content"] == [
            {"type": "tool_result", "tool_use_id": "c1", "content": "2"},
            {"type": "tool_result", "tool_use_id": "c2", "content": "4"},
        ]
    assert all_accepted(srv)


def test_tool_error_is_sent_as_the_calls_result(srv, protocol, wire_agent, calc_tool) -> None:
    srv.enqueue(
        Reply(tool_calls=[ToolCallSpec("calculator", {"expression": "1/0"})]), Reply(text="Cannot divide by zero.")
    )
    agent = wire_agent(tools=[calc_tool])

    response = agent.chat("1/0?")

    assert response.tool_calls[0].output == "Error: ZeroDivisionError: division by zero"
    assert "ZeroDivisionError" in json.dumps(srv.requests[1].messages[-1])
    assert all_accepted(srv)


def test_streamed_tool_call_with_invalid_json_arguments_is_answered_without_running(srv, protocol, wire_agent) -> None:
    from langchain_core.tools import StructuredTool

    runs = []
    tool = StructuredTool.from_function(
        lambda expression: runs.append(expression) or "x", name="calculator", description="Math"
    )
    srv.enqueue(
        Reply(tool_calls=[ToolCallSpec("calculator", '{"expression": "1+', id="bad_1")]), Reply(text="Retrying later.")
    )
    agent = wire_agent(tools=[tool])

    chunks = list(agent.run_stream("1+?"))

    assert runs == [] and "".join(chunks) == "Retrying later."
    assert "not a JSON object" in agent.last_response.tool_calls[0].output
    assert all_accepted(srv)
    assert_valid_history(agent.history)


def test_iteration_cap_leaves_a_history_the_strict_server_accepts(srv, protocol, wire_agent, calc_tool) -> None:
    srv.enqueue(
        *[Reply(tool_calls=[ToolCallSpec("calculator", {"expression": "1"})]) for _ in range(3)], Reply(text="fresh")
    )
    agent = wire_agent(tools=[calc_tool], max_tool_iterations=2)

    capped = agent.chat("loop")
    after = agent.chat("next question")

    assert capped.stopped_by_limit and capped.iterations == 2
    assert after.message == "fresh"
    assert all_accepted(srv) and len(srv.requests) == 4


# ---------------------------------------------------------------------------
# Streaming
# ---------------------------------------------------------------------------


def test_streaming_delivers_deltas_while_the_response_is_still_arriving(srv, protocol, wire_agent) -> None:
    srv.chunk_delay = 0.01
    srv.chunk_size = 3
    srv.enqueue(Reply(text="Python is readable, batteries included."))
    agent = wire_agent()
    in_flight_at_first_chunk = None

    chunks = []
    for chunk in agent.run_stream("Write a haiku about Python"):
        if in_flight_at_first_chunk is None:
            in_flight_at_first_chunk = srv.in_flight
        chunks.append(chunk)

    assert in_flight_at_first_chunk == 1
    assert len(chunks) > 3 and "".join(chunks) == "Python is readable, batteries included."
    assert srv.requests[0].stream
    assert agent.last_response.message == "".join(chunks) and agent.last_response.output_tokens > 0
    assert agent.history[-1]["content"] == "".join(chunks)


async def test_async_streaming_of_a_tool_turn_streams_the_final_answer(srv, protocol, wire_agent, calc_tool) -> None:
    srv.enqueue(
        Reply(tool_calls=[ToolCallSpec("calculator", {"expression": "6*7"})]), Reply(text="Six times seven is 42.")
    )
    agent = wire_agent(tools=[calc_tool])

    chunks = [chunk async for chunk in agent.chat_stream("6*7?")]

    assert len(chunks) > 2 and "".join(chunks) == "Six times seven is 42."
    assert [r.stream for r in srv.requests] == [True, True]
    assert agent.last_response.tool_calls[0].output == "42"
    assert all_accepted(srv)


def test_error_in_the_middle_of_a_stream_raises_and_keeps_history(srv, protocol, wire_agent) -> None:
    failing = Reply(text="a long answer that breaks", openai_error_after_chunks=3, anthropic_error_after_chunks=3)
    srv.enqueue(Reply(text="first"), failing, Reply(text="recovered"))
    agent = wire_agent()
    agent.chat("one")
    before = agent.history

    with pytest.raises(ProviderError) as info:
        list(agent.run_stream("two"))

    assert info.value.incomplete
    assert agent.history == before
    assert agent.chat("three").message == "recovered"


# ---------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------


def test_summary_is_sent_as_system_text_after_the_prompt(srv, protocol, wire_agent) -> None:
    srv.default = summary_or_none
    agent = wire_agent(memory="summary", memory_k=1, system_prompt="Base prompt.")
    agent.chat("Tell me about France")

    summarising = agent.chat("And its capital?")  # 4 messages > 2 x memory_k
    agent.chat("Population?")

    summary_requests = [r for r in srv.requests if SUMMARIZER in system_of(r)]
    assert len(summary_requests) == 1
    assert summarising.cost == pytest.approx(sum(r["cost"] for r in summarising.trace))
    assert [r["name"] for r in summarising.trace] == ["chat", "summary"]
    assert summarising.trace[1]["cost"] > 0
    last = srv.requests[-1]
    assert (
        system_of(last) == "Base prompt.\n\nSummary of the earlier conversation:\nSUMMARY: the user asked about France."
    )
    if protocol == "openai":
        assert [m["role"] for m in last.messages] == ["system", "system", "user"]
    assert all_accepted(srv)


def test_buffer_memory_trims_what_is_sent(srv, protocol, wire_agent) -> None:
    agent = wire_agent(memory_k=2)

    for i in range(4):
        agent.chat(f"question {i}")

    last = srv.requests[-1]
    conversation = [m for m in last.messages if m["role"] != "system"]
    assert len(conversation) == 3  # the last 2 stored messages and the new question
    assert all_accepted(srv)


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


def test_http_429_surfaces_as_rate_limit_error(srv, protocol, wire_agent) -> None:
    srv.enqueue(Fault(status=429, retry_after=1))
    agent = wire_agent()

    with pytest.raises(RateLimitError):
        agent.chat("Hello")

    assert agent.history == []


def test_http_500_after_a_tool_round_surfaces_as_provider_error_and_keeps_history(
    srv, protocol, wire_agent, calc_tool
) -> None:
    srv.enqueue(
        Reply(tool_calls=[ToolCallSpec("calculator", {"expression": "1"})]), Fault(status=500), Reply(text="ok now")
    )
    agent = wire_agent(tools=[calc_tool])

    with pytest.raises(ProviderError) as info:
        agent.chat("go")

    assert info.value.status_code == 500 and agent.history == []
    assert agent.chat("again").message == "ok now"
    assert all_accepted(srv)


def test_retries_recover_from_a_transient_500(srv, protocol) -> None:
    srv.enqueue(Fault(status=500), Reply(text="after retry"))
    agent = make_wire_agent(srv, protocol, MAX_RETRIES=2)

    assert agent.chat("hi").message == "after retry"
    assert len(srv.requests) == 2


async def test_cancelling_a_turn_waiting_on_the_server_keeps_history(srv, protocol, wire_agent) -> None:
    srv.enqueue(Reply(text="first"), Fault(hang=True), Reply(text="after"))
    agent = wire_agent()
    await agent.achat("one")
    before = agent.history

    turn = asyncio.create_task(agent.achat("two"))
    while srv.request_count < 2:
        await asyncio.sleep(0.005)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn

    assert agent.history == before
    assert (await asyncio.wait_for(agent.achat("three"), 60)).message == "after"


# ---------------------------------------------------------------------------
# Configuration from the environment and aiforge.yaml
# ---------------------------------------------------------------------------


def test_quick_start_picks_openai_from_the_environment(srv, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key")
    monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
    srv.enqueue(Reply(text="The capital of France is Paris."))

    response = ChatAgent().chat("What is the capital of France?")

    assert response.message == "The capital of France is Paris."
    assert srv.requests[0].protocol == "openai" and srv.requests[0].headers["authorization"] == "Bearer sk-env-key"


def test_quick_start_picks_anthropic_from_the_environment(srv, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.anthropic_base_url)
    srv.enqueue(Reply(text="Paris."))

    response = ChatAgent().chat("Capital of France?")

    assert response.message == "Paris." and srv.requests[0].protocol == "anthropic"


def test_yaml_configuration_example_drives_the_request(srv, monkeypatch, tmp_path) -> None:
    (tmp_path / "aiforge.yaml").write_text(
        '# aiforge.yaml\nPROVIDER: "openai"\nMODEL: "gpt-4o-mini"\nTEMPERATURE: 0.7\n'
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key")
    monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)

    agent = ChatAgent()
    response = agent.chat("Hello!")

    assert response.model == "gpt-4o-mini"
    assert srv.requests[0].body["model"] == "gpt-4o-mini" and srv.requests[0].body["temperature"] == 0.7


def test_quality_routed_model_is_requested(srv) -> None:
    agent = make_wire_agent(srv, "openai", quality="high")

    agent.chat("Write a short poem about APIs")

    assert srv.requests[0].model == "gpt-4.1"


# ---------------------------------------------------------------------------
# Batch
# ---------------------------------------------------------------------------


def test_run_batch_sends_items_concurrently_as_fresh_conversations(srv, protocol) -> None:
    agent = make_wire_agent(srv, protocol, quality="low")
    # Every answer waits until the 4 items' requests all arrived: concurrency is then an ordering, not a race of the
    # arrivals against a latency (60 s only bounds the failure).
    asked = srv.request_count
    srv.default = lambda request: None if srv.wait_for_requests(asked + 4, 60) else Reply(text="not all 4 arrived")
    faqs = [
        "What are your business hours?",
        "How do I reset my password?",
        "Where is my order?",
        "Do you offer refunds?",
    ]

    result = agent.run_batch(faqs, concurrency=4)

    assert [r.message for r in result.results] == [f"echo: {q}" for q in faqs]
    assert result.failed == [] and result.total_cost > 0
    assert srv.max_in_flight == 4
    assert all(len([m for m in r.messages if m["role"] != "system"]) == 1 for r in srv.requests)


# ---------------------------------------------------------------------------
# The reference page's full examples
# ---------------------------------------------------------------------------


def test_basic_conversation_example_keeps_context_and_adds_up_cost(srv, protocol) -> None:
    agent = make_wire_agent(
        srv, protocol, system_prompt="You are a friendly coding tutor.", memory="buffer", memory_k=30
    )

    r1 = agent.chat("What's a list comprehension in Python?")
    r2 = agent.chat("Show me an example with filtering")
    r3 = agent.chat("How is that different from a generator expression?")

    assert srv.requests[-1].last_user_text == "How is that different from a generator expression?"
    assert "list comprehension" in json.dumps(srv.requests[-1].messages)
    assert agent.cost_tracker.session_total == pytest.approx(r1.cost + r2.cost + r3.cost) and r3.cost > 0


async def test_streaming_in_an_async_app_example(srv, protocol) -> None:
    srv.enqueue(Reply(text="APIs connect; requests fly; responses return home."))
    agent = make_wire_agent(srv, protocol, quality="high")

    chunks = [chunk async for chunk in agent.chat_stream("Write a short poem about APIs")]

    assert "".join(chunks) == "APIs connect; requests fly; responses return home." and len(chunks) > 1
    assert srv.requests[0].model == {"openai": "gpt-4.1", "anthropic": "claude-sonnet-4-5"}[protocol]


def test_request_timeout_surfaces_as_api_timeout_error(srv, protocol) -> None:
    from aiforge.core.types import APITimeoutError

    srv.enqueue(Fault(hang=True), Reply(text="back"))
    agent = make_wire_agent(srv, protocol, TIMEOUT=0.3)

    with pytest.raises(APITimeoutError):
        agent.chat("Hello")

    assert agent.history == [] and agent.chat("again").message == "back"
