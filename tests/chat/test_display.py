"""Notebook and terminal views of chat results; the trace, cost and history DataFrames."""

from __future__ import annotations

from typing import Any

import pytest

from aiforge import ChatAgent
from aiforge.chat.response import TRACE_COLUMNS, ChatResponse, ToolCallRecord
from aiforge.core.costs import COLUMNS as COST_COLUMNS
from aiforge.providers.scripted import ScriptedProvider, tool_call
from aiforge.tools import calculator

HISTORY_COLUMNS = ["role", "content", "tool_calls", "tool_call_id"]


def agent_with(*replies: Any, **kwargs: Any) -> ChatAgent:
    return ChatAgent(provider=ScriptedProvider(replies), **kwargs)


@pytest.fixture
def tool_response() -> ChatResponse:
    return agent_with(tool_call("calculator", expression="6*7"), "It is **42**.", tools=[calculator]).chat("6*7?")


# --- ChatResponse ----------------------------------------------------------------------------------------------------


def test_response_markdown_is_the_answer_then_a_metadata_line(tool_response: ChatResponse) -> None:
    markdown = tool_response._repr_markdown_()
    assert markdown.startswith("It is **42**.")
    metadata = markdown.rsplit("\n", 1)[1]
    assert metadata.startswith("<sub>") and metadata.endswith("</sub>")
    for part in (
        "scripted-model",
        f"{tool_response.input_tokens}+{tool_response.output_tokens} tokens",
        "$0.00000",
        "1 tool call",
    ):
        assert part in metadata
    assert "`calculator`" in markdown


def test_response_html_escapes_the_answer(tool_response: ChatResponse) -> None:
    response = tool_response.model_copy(update={"message": "<script>alert(1)</script>"})
    rendered = response._repr_html_()
    assert "<script>" not in rendered
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered
    assert "<code>calculator</code>" in rendered
    assert "scripted-model" in rendered


def test_response_repr_is_plain_and_short(tool_response: ChatResponse) -> None:
    long = tool_response.model_copy(update={"message": "x" * 500})
    text = repr(long)
    assert text.startswith("ChatResponse(message='xxx")
    assert len(text) < 300 and "<" not in text
    assert "tool_calls=1" in text and "model='scripted-model'" in text
    assert str(long) == text



def test_response_markdown_does_not_pass_model_html_through(tool_response: ChatResponse) -> None:
    response = tool_response.model_copy(update={"message": "<img src=x onerror=alert(1)>"})
    assert "<img" not in response._repr_markdown_()


# --- ToolCallRecord --------------------------------------------------------------------------------------------------


def test_tool_call_record_markdown_and_repr(tool_response: ChatResponse) -> None:
    record = tool_response.tool_calls[0]
    assert record._repr_markdown_() == '`calculator` `{"expression": "6*7"}` → 42'
    assert repr(record) == "ToolCallRecord(tool='calculator', input={'expression': '6*7'}, output='42')"



def test_tool_call_record_has_an_escaped_html_repr() -> None:
    record = ToolCallRecord(tool="search", input={"q": "<b>"}, output="<script>x</script>")
    rendered = record._repr_html_()
    assert "search" in rendered and "<script>" not in rendered


# --- CostTracker, trace and history ----------------------------------------------------------------------------------


def test_cost_tracker_dataframe_has_one_row_per_model_call(tool_response: ChatResponse) -> None:
    agent = agent_with("one", "two")
    agent.chat("a")
    agent.chat("b")
    frame = agent.cost_tracker.to_dataframe()
    assert list(frame.columns) == list(COST_COLUMNS)
    assert {"provider", "model", "input_tokens", "output_tokens", "cost", "priced", "kind", "trace_id"} <= set(
        frame.columns
    )
    assert len(frame) == 2
    assert list(frame["kind"]) == ["chat", "chat"]
    assert frame["input_tokens"].sum() + frame["output_tokens"].sum() == agent.cost_tracker.total_tokens


def test_trace_dataframe_has_a_row_per_model_and_tool_step(tool_response: ChatResponse) -> None:
    frame = tool_response.trace_dataframe()
    assert list(frame.columns) == TRACE_COLUMNS
    assert list(frame["step"]) == ["model", "tool", "model"]
    assert list(frame["node"]) == ["route", "execute_tool", "process_result"]
    tool_row = frame.iloc[1]
    assert tool_row["name"] == "calculator" and tool_row["output"] == "42"


def test_history_dataframe_shows_the_conversation(tool_response: ChatResponse) -> None:
    agent = agent_with(tool_call("calculator", expression="1+1"), "2", tools=[calculator], system_prompt="Be brief.")
    agent.chat("1+1?")
    frame = agent.history_dataframe()
    assert list(frame.columns) == HISTORY_COLUMNS
    assert list(frame["role"]) == ["system", "user", "assistant", "tool", "assistant"]
    assert frame["content"][0].startswith("Be brief.")
    assert frame["tool_calls"][2] == ["calculator({'expression': '1+1'})"]
    assert frame["tool_call_id"][3]
