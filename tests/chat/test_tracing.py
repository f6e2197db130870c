"""Tracing: one record per model and tool step, and the DataFrame views of traces and history."""

from __future__ import annotations

import pytest
from langchain_core.tools import StructuredTool

from aiforge import ChatAgent
from aiforge.chat.prompts import SUMMARY_PREFIX
from aiforge.chat.response import TRACE_COLUMNS
from aiforge.core.types import Usage
from aiforge.providers.scripted import ScriptedProvider, ScriptedReply, tool_call, tool_calls


@pytest.fixture
def tool_turn(calc_tool):
    fake = ScriptedProvider(
        [
            ScriptedReply(tool_calls=tool_call("calculator", expression="2*21").tool_calls, usage=Usage(30, 5)),
            ScriptedReply(text="42", usage=Usage(40, 2)),
        ]
    )
    agent = ChatAgent(provider=fake, tools=[calc_tool])
    return agent, agent.chat("2*21?")


def test_trace_has_one_record_per_model_and_tool_step_in_order(tool_turn) -> None:
    _, response = tool_turn

    assert [(r["step"], r["node"]) for r in response.trace] == [
        ("model", "route"),
        ("tool", "execute_tool"),
        ("model", "process_result"),
    ]


def test_model_trace_records_carry_model_tokens_cost_and_latency(tool_turn) -> None:
    _, response = tool_turn
    route, _, process = response.trace

    assert (route["model"], route["input_tokens"], route["output_tokens"]) == ("scripted-model", 30, 5)
    assert (process["input_tokens"], process["output_tokens"]) == (40, 2)
    assert route["cost"] == 0.0 and route["latency_ms"] >= 0
    assert route["tool_calls"] == ["calculator"] and process["tool_calls"] == []


def test_tool_trace_records_carry_name_input_output_error_and_latency(tool_turn) -> None:
    _, response = tool_turn
    tool = response.trace[1]

    assert (tool["name"], tool["input"], tool["output"], tool["error"]) == (
        "calculator",
        {"expression": "2*21"},
        "42",
        None,
    )
    assert tool["latency_ms"] >= 0 and tool["id"] == response.tool_calls[0].id


def test_trace_tokens_add_up_to_the_response_tokens(tool_turn) -> None:
    _, response = tool_turn
    models = [r for r in response.trace if r["step"] == "model"]

    assert sum(r["input_tokens"] for r in models) == response.input_tokens == 70
    assert sum(r["output_tokens"] for r in models) == response.output_tokens == 7


def test_failed_tool_trace_record_has_the_error_text() -> None:
    def fail(x: str) -> str:
        """Fails."""
        raise ValueError("bad input")

    tool = StructuredTool.from_function(fail, name="fail", description="Fails")
    agent = ChatAgent(provider=ScriptedProvider([tool_call("fail", x="1"), "sorry"]), tools=[tool])

    record = agent.chat("go").trace[1]

    assert record["error"] == record["output"] == "Error: ValueError: bad input"


def test_trace_dataframe_has_one_row_per_step_with_the_trace_columns(tool_turn) -> None:
    _, response = tool_turn

    frame = response.trace_dataframe()

    assert list(frame.columns) == TRACE_COLUMNS
    assert list(frame["step"]) == ["model", "tool", "model"]
    assert frame.loc[1, "name"] == "calculator" and frame.loc[1, "output"] == "42"
    assert frame["input_tokens"].sum() == response.input_tokens


def test_trace_of_parallel_calls_has_a_tool_record_per_call(calc_tool) -> None:
    fake = ScriptedProvider(
        [tool_calls(("calculator", {"expression": "1"}), ("calculator", {"expression": "2"})), "ok"]
    )
    agent = ChatAgent(provider=fake, tools=[calc_tool])

    response = agent.chat("go")

    assert [r["output"] for r in response.trace if r["step"] == "tool"] == ["1", "2"]


def test_response_carries_its_trace_id_on_every_cost_record(tool_turn) -> None:
    agent, response = tool_turn

    assert {r.trace_id for r in agent.cost_tracker.records} == {response.trace_id}
    assert {r.conversation_id for r in agent.cost_tracker.records} == {agent.conversation_id}


def test_history_dataframe_lists_system_prompt_then_messages(tool_turn) -> None:
    agent, _ = tool_turn

    frame = agent.history_dataframe()

    assert list(frame.columns) == ["role", "content", "tool_calls", "tool_call_id"]
    assert list(frame["role"]) == ["system", "user", "assistant", "tool", "assistant"]
    assert frame.loc[0, "content"] == agent.system_prompt
    assert frame.loc[2, "tool_calls"] == ["calculator({'expression': '2*21'})"]
    assert frame.loc[3, "tool_call_id"] == agent.history[2]["tool_call_id"]


def test_history_dataframe_shows_the_summary_after_the_system_prompt() -> None:
    def model(messages):
        return "SUMMARY" if messages[0]["content"].startswith("You write faithful") else "answer"

    agent = ChatAgent(provider=ScriptedProvider(default=model), memory="summary", memory_k=1)
    agent.chat("one")
    agent.chat("two")

    frame = agent.history_dataframe()

    assert list(frame["role"][:2]) == ["system", "system"]
    assert frame.loc[1, "content"] == SUMMARY_PREFIX + "SUMMARY"


def test_history_dataframe_of_a_new_agent_has_only_the_system_prompt() -> None:
    frame = ChatAgent(provider=ScriptedProvider()).history_dataframe()

    assert list(frame["role"]) == ["system"]
