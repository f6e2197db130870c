"""The LangGraph agent loop: ``route`` -> ``execute_tool`` -> ``process_result``.

The graph is compiled once and shared. Nodes are small functions over ``ChatAgentState``; the
turn (its agent's provider and tools, its stream sink and ids) travels in the run config, so
one compiled graph serves every turn of every agent.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, cast

from langchain_core.runnables import RunnableConfig

from aiforge.batch.request.call import ChatAgentState as ChatAgentState
from aiforge.batch.request.call import Turn, folded, model_step
from aiforge.chat.prompts import TOOL_LIMIT_MESSAGE, TOOL_LIMIT_RESULT
from aiforge.chat.runtime import ToolEvent
from aiforge.core import otel
from aiforge.core.types import ToolCall, ToolResult, TraceRecord

if TYPE_CHECKING:
    from langgraph.types import Command


def _turn(config: RunnableConfig) -> Turn:
    turn: Turn = config["configurable"]["turn"]
    return turn


# ---------------------------------------------------------------------------
# Nodes and routing
# ---------------------------------------------------------------------------


async def _model_step(state: ChatAgentState, config: RunnableConfig, node: str) -> Command[str]:
    from langgraph.types import Command  # loaded with the graph, not at ``import aiforge``

    turn = _turn(config)
    update, record = await model_step(turn, state, node)
    messages, pending = update["messages"], update["tool_calls"]
    if node == "process_result" and pending and state["iteration"] >= state["max_tool_iterations"]:
        # The cap is reached while the model still asks for tools: answer those calls with a
        # limit notice and end with a plain assistant message, so the history stays valid.
        limit = state["max_tool_iterations"]
        for call in pending:
            messages.append({
                "role": "tool", "tool_call_id": call["id"], "name": call["name"],
                "content": TOOL_LIMIT_RESULT.format(limit=limit),
            })
        messages.append({"role": "assistant", "content": TOOL_LIMIT_MESSAGE.format(limit=limit)})
        record["stopped_by_limit"] = True
        turn.emit_text(TOOL_LIMIT_MESSAGE.format(limit=limit), new_step=True)
        update["tool_calls"] = pending = []
    # The node routes itself: a conditional edge would be one more runnable per step, run on
    # a worker thread for a sync router (0.2-0.3 ms of a 1 ms step, measured).
    should_go_on = should_use_tools if node == "route" else should_continue_after_tool
    return Command(update=update, goto=should_go_on({**state, "tool_calls": pending}))


async def route(state: ChatAgentState, config: RunnableConfig) -> Command[str]:
    """Send the history to the model: it answers, or asks for tools (then ``execute_tool``)."""
    return await _model_step(state, config, "route")


async def process_result(state: ChatAgentState, config: RunnableConfig) -> Command[str]:
    """Send the tool results back to the model: it answers, or asks for more tools (``execute_tool``)."""
    return await _model_step(state, config, "process_result")


async def execute_tool(state: ChatAgentState, config: RunnableConfig) -> dict[str, Any]:
    """Run every pending tool call (concurrently) and append one result per call, in order."""
    turn = _turn(config)
    calls = state["tool_calls"]
    if len(calls) == 1:
        outcomes = [await _execute(turn, calls[0])]
    else:
        outcomes = await asyncio.gather(*(_execute(turn, c) for c in calls))
    messages = list(state["messages"])
    results: list[ToolResult] = []
    trace: list[TraceRecord] = []
    for call, (output, error, record) in zip(calls, outcomes, strict=True):
        messages.append({"role": "tool", "tool_call_id": call["id"], "name": call["name"], "content": output})
        result: ToolResult = {
            "id": call["id"], "tool": call["name"], "input": call["arguments"], "output": output, "error": error
        }
        results.append(result)
        if turn.emit is not None:  # a panel shows the tool's row before the turn ends
            turn.emit(ToolEvent(result))
        trace.append(record)
    return {
        "messages": messages,
        "tool_calls": [],
        "tool_results": results,
        "trace": trace,
        "iteration": state["iteration"] + 1,
    }


async def _execute(turn: Turn, call: ToolCall) -> tuple[str, bool, TraceRecord]:
    """Run one tool call (``Toolset.execute``), in an ``execute_tool`` span when spans are on."""
    toolset, telemetry = turn.runtime.toolset, turn.runtime.telemetry
    if telemetry is None:
        return await toolset.execute(call)
    tool = toolset.by_name.get(call["name"])
    with otel.tool_scope(telemetry, call, getattr(tool, "description", None)) as span:
        output, error, record = await toolset.execute(call)
        otel.end_tool_call(span, telemetry, output, error)
    return output, error, record


def should_use_tools(state: ChatAgentState) -> str:
    """Where ``route`` goes next: ``execute_tool`` with pending calls, else the end."""
    return "execute_tool" if state["tool_calls"] else "__end__"


def should_continue_after_tool(state: ChatAgentState) -> str:
    """Where ``process_result`` goes next: ``execute_tool`` with pending calls under the cap, else the end."""
    if state["tool_calls"] and state["iteration"] < state["max_tool_iterations"]:
        return "execute_tool"
    return "__end__"


async def run_graph(graph: Any, state: ChatAgentState, config: dict[str, Any]) -> ChatAgentState:
    """One run of the chat graph over ``state``: its final state.

    A turn that offers the model no tools is one model step, so ``route`` runs directly, without
    LangGraph's run loop (0.7-1.3 ms a run, measured: a third of a raw SDK call's CPU in a batch).
    If that step asks for tools anyway (only a scripted provider can), the graph takes over from
    ``execute_tool``, so every tool call still goes through the graph's nodes.
    """
    run_config = cast(RunnableConfig, config)
    if _turn(run_config).runtime.toolset.specs:
        return cast(ChatAgentState, await graph.ainvoke(state, config))
    command = await route(state, run_config)
    final = folded(state, cast(dict[str, Any], command.update))
    if command.goto == "__end__":
        return final
    return cast(ChatAgentState, await _from_tools().ainvoke(final, config))


_compiled: Any = None
_compiled_from_tools: Any = None


def build_chat_graph() -> Any:
    """The compiled StateGraph of the chat agent (no checkpointer: aiforge owns the history).

    Compiled on first use and shared: nodes take the provider and tools from the turn.
    """
    global _compiled
    if _compiled is None:
        _compiled = _compile()
    return _compiled


def _from_tools() -> Any:
    """The same graph entered at ``execute_tool``: ``run_graph``'s continuation after a direct ``route``."""
    global _compiled_from_tools
    if _compiled_from_tools is None:
        _compiled_from_tools = _compile(entry="execute_tool")
    return _compiled_from_tools


def _compile(entry: str = "route") -> Any:
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(ChatAgentState)
    # route and process_result pick their successor with should_use_tools and
    # should_continue_after_tool (a Command); ``destinations`` draws those edges.
    graph.add_node("route", route, destinations=("execute_tool", END))
    graph.add_node("execute_tool", execute_tool)
    graph.add_node("process_result", process_result, destinations=("execute_tool", END))
    graph.add_edge(START, entry)
    graph.add_edge("execute_tool", "process_result")
    return graph.compile()
