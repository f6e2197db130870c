"""The LangGraph loop: its nodes, routing and state; interrupted and concurrent turns."""

from __future__ import annotations

import asyncio
import operator
import os
import signal
import sys
import threading
import typing

import pytest
from langchain_core.tools import StructuredTool

from aiforge import ChatAgent
from aiforge.chat.graph import (
    ChatAgentState,
    build_chat_graph,
    should_continue_after_tool,
    should_use_tools,
)
from aiforge.core.types import ProviderError
from aiforge.providers.scripted import ScriptedProvider, tool_call
from tests.chat.checks import assert_valid_context, assert_valid_history

# ---------------------------------------------------------------------------
# The graph
# ---------------------------------------------------------------------------


def test_graph_has_the_documented_nodes_and_edges() -> None:
    graph = build_chat_graph().get_graph()

    assert set(graph.nodes) == {"__start__", "route", "execute_tool", "process_result", "__end__"}
    edges = {(e.source, e.target) for e in graph.edges}
    assert edges == {
        ("__start__", "route"),
        ("route", "execute_tool"),
        ("route", "__end__"),
        ("execute_tool", "process_result"),
        ("process_result", "execute_tool"),
        ("process_result", "__end__"),
    }


def test_graph_is_compiled_once_and_shared_by_agents() -> None:
    first = ChatAgent(provider=ScriptedProvider())
    second = ChatAgent(provider=ScriptedProvider())

    assert first._turns.graph is second._turns.graph is build_chat_graph()


def test_state_accumulates_results_trace_and_tokens_with_operator_add() -> None:
    hints = typing.get_type_hints(ChatAgentState, include_extras=True)

    reduced = {name for name, hint in hints.items() if operator.add in getattr(hint, "__metadata__", ())}
    assert reduced == {"tool_results", "trace", "total_input_tokens", "total_output_tokens"}
    assert set(hints) == reduced | {
        "messages",
        "current_input",
        "tool_calls",
        "iteration",
        "max_tool_iterations",
        "model",
    }


def state(**fields) -> dict:
    return {"tool_calls": [], "iteration": 0, "max_tool_iterations": 5, **fields}


def test_should_use_tools_routes_to_execute_tool_only_with_pending_calls() -> None:
    assert should_use_tools(state(tool_calls=[{"id": "1"}])) == "execute_tool"
    assert should_use_tools(state()) == "__end__"


def test_should_continue_after_tool_stops_at_the_iteration_cap() -> None:
    pending = [{"id": "1"}]

    assert should_continue_after_tool(state(tool_calls=pending, iteration=4)) == "execute_tool"
    assert should_continue_after_tool(state(tool_calls=pending, iteration=5)) == "__end__"
    assert should_continue_after_tool(state(iteration=1)) == "__end__"


def test_graph_run_accumulates_tokens_in_the_state() -> None:
    from aiforge.batch.request.call import AgentRuntime, Turn
    from aiforge.chat.tool_runner import Toolset
    from aiforge.core.costs import CostTracker
    from aiforge.core.types import CallParams

    fake = ScriptedProvider([tool_call("echo", x="1"), "done"])
    tool = StructuredTool.from_function(lambda x: x, name="echo", description="Echo")
    runtime = AgentRuntime(
        provider=fake,
        provider_name="scripted",
        free=True,
        params=CallParams(model="m"),
        toolset=Toolset([tool]),
        cost_tracker=CostTracker(),
        price_overrides=None,
    )
    turn = Turn(runtime, conversation_id="c")
    initial = {
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "go"}],
        "current_input": "go",
        "tool_calls": [],
        "tool_results": [],
        "iteration": 0,
        "max_tool_iterations": 5,
        "trace": [],
        "total_input_tokens": 0,
        "total_output_tokens": 0,
        "model": "m",
    }

    final = asyncio.run(build_chat_graph().ainvoke(initial, {"configurable": {"turn": turn}}))

    assert final["iteration"] == 1 and len(final["tool_results"]) == 1
    assert [r["step"] for r in final["trace"]] == ["model", "tool", "model"]
    steps = [r for r in final["trace"] if r["step"] == "model"]
    assert final["total_input_tokens"] == sum(r["input_tokens"] for r in steps) > 0
    assert final["total_output_tokens"] == sum(r["output_tokens"] for r in steps) > 0
    assert runtime.cost_tracker.total_tokens == final["total_input_tokens"] + final["total_output_tokens"]


# ---------------------------------------------------------------------------
# Interrupted turns leave the history as it was
# ---------------------------------------------------------------------------


@pytest.fixture
def echo_tool() -> StructuredTool:
    def echo(x: str) -> str:
        """Echo."""
        return x

    return StructuredTool.from_function(echo, name="echo", description="Echo")


def test_provider_error_after_a_tool_round_leaves_history_unchanged(echo_tool) -> None:
    fake = ScriptedProvider(
        [
            "first answer",
            tool_call("echo", x="1"),
            ProviderError("upstream 500", provider="scripted", status_code=500),
            "recovered",
        ]
    )
    agent = ChatAgent(provider=fake, tools=[echo_tool])
    agent.chat("first")
    before = agent.history

    with pytest.raises(ProviderError):
        agent.chat("second")

    assert agent.history == before
    assert agent.chat("third").message == "recovered"
    assert [m["content"] for m in agent.history] == ["first", "first answer", "third", "recovered"]
    assert_valid_context(fake.calls[-1].messages)


async def test_cancelling_a_turn_during_a_slow_tool_leaves_history_unchanged() -> None:
    started = asyncio.Event()

    async def slow(x: str) -> str:
        """Slow."""
        started.set()
        await asyncio.sleep(30)
        return x

    tool = StructuredTool.from_function(coroutine=slow, name="slow", description="Slow")
    fake = ScriptedProvider(["before", tool_call("slow", x="1"), "after"])
    agent = ChatAgent(provider=fake, tools=[tool])
    await agent.achat("warm up")
    before = agent.history

    turn = asyncio.create_task(agent.achat("go slow"))
    await asyncio.wait_for(started.wait(), 60)  # 60 s only guards against a hang
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn

    assert agent.history == before
    assert (await asyncio.wait_for(agent.achat("next"), 60)).message == "after"


async def test_cancelling_a_turn_during_a_slow_model_call_leaves_history_unchanged() -> None:
    fake = ScriptedProvider(["first"], delay=0.0)
    agent = ChatAgent(provider=fake)
    await agent.achat("one")
    before = agent.history
    fake.delay = 30

    turn = asyncio.create_task(agent.achat("two"))
    while len(fake.calls) < 2:
        await asyncio.sleep(0.001)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn

    fake.delay = 0
    assert agent.history == before
    assert (await asyncio.wait_for(agent.achat("three"), 60)).message == "You said: three"


def test_keyboard_interrupt_raised_by_a_tool_leaves_history_unchanged_and_agent_usable() -> None:
    def interrupting(x: str) -> str:
        """Raises KeyboardInterrupt, as Ctrl-C inside a tool does."""
        raise KeyboardInterrupt

    tool = StructuredTool.from_function(interrupting, name="interrupting", description="Interrupts")
    fake = ScriptedProvider(["hello", tool_call("interrupting", x="1"), "still here"])
    agent = ChatAgent(provider=fake, tools=[tool])
    agent.chat("hi")
    before = agent.history

    with pytest.raises(KeyboardInterrupt):
        agent.chat("run the tool")

    assert agent.history == before
    assert agent.chat("are you there?").message == "still here"
    assert_valid_history(agent.history)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_during_a_slow_sync_tool_cancels_the_turn_and_keeps_history() -> None:
    assert threading.current_thread() is threading.main_thread()
    started, release = threading.Event(), threading.Event()

    def slow(x: str) -> str:
        """Blocks until released."""
        started.set()
        release.wait(10)
        return x

    tool = StructuredTool.from_function(slow, name="slow", description="Blocks")
    agent = ChatAgent(provider=ScriptedProvider(["hello", tool_call("slow", x="1"), "after"]), tools=[tool])
    agent.chat("hi")
    before = agent.history

    def press_ctrl_c() -> None:
        if started.wait(5):
            os.kill(os.getpid(), signal.SIGINT)

    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            agent.chat("slow please")
    finally:
        release.set()
        presser.join()

    assert agent.history == before
    assert agent.chat("again").message == "after"


# ---------------------------------------------------------------------------
# Concurrent turns on one agent are serialised
# ---------------------------------------------------------------------------


async def test_two_concurrent_achat_calls_do_not_interleave() -> None:
    fake = ScriptedProvider(delay=0.01)
    agent = ChatAgent(provider=fake)

    await asyncio.gather(agent.achat("first"), agent.achat("second"))

    assert [m["content"] for m in agent.history] == ["first", "You said: first", "second", "You said: second"]
    assert [m["content"] for m in fake.calls[1].messages[1:]] == ["first", "You said: first", "second"]


async def test_concurrent_achat_calls_with_tools_keep_each_exchange_whole(echo_tool) -> None:
    def model(messages):
        return tool_call("echo", x=messages[-1]["content"]) if messages[-1]["role"] == "user" else "done"

    agent = ChatAgent(provider=ScriptedProvider(default=model, delay=0.005), tools=[echo_tool])

    await asyncio.gather(*(agent.achat(f"q{i}") for i in range(5)))

    history = agent.history
    assert_valid_history(history)
    users = [m["content"] for m in history if m["role"] == "user"]
    assert sorted(users) == [f"q{i}" for i in range(5)]
    for start in range(0, len(history), 4):  # each turn is user, call, result, answer, back to back
        assert [m["role"] for m in history[start : start + 4]] == ["user", "assistant", "tool", "assistant"]
        assert history[start + 2]["content"] == history[start]["content"]


def test_chat_from_two_threads_on_one_agent_is_serialised() -> None:
    fake = ScriptedProvider(delay=0.01)
    agent = ChatAgent(provider=fake)
    errors: list[BaseException] = []

    def talk(name: str) -> None:
        try:
            for i in range(3):
                agent.chat(f"{name}{i}")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=talk, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)

    assert errors == []
    history = agent.history
    assert len(history) == 12
    for user, answer in zip(history[::2], history[1::2], strict=True):
        assert answer["content"] == f"You said: {user['content']}"


async def test_a_waiting_turn_can_be_cancelled_without_affecting_the_running_one() -> None:
    fake = ScriptedProvider(delay=0.05)
    agent = ChatAgent(provider=fake)

    running = asyncio.create_task(agent.achat("running"))
    await asyncio.sleep(0.01)
    waiting = asyncio.create_task(agent.achat("waiting"))
    await asyncio.sleep(0.01)
    waiting.cancel()

    assert (await running).message == "You said: running"
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert [m["content"] for m in agent.history] == ["running", "You said: running"]
    assert (await agent.achat("later")).message == "You said: later"


@pytest.mark.parametrize("script", [["plain answer"], [tool_call("echo", x="1"), "done"]], ids=["answer", "tool call"])
def test_run_graph_without_tools_ends_in_the_state_the_graph_gives(script: list) -> None:
    """A tool-less turn skips LangGraph's run loop for its one step; the final state is the graph's."""
    from aiforge.batch.request.call import AgentRuntime, Turn
    from aiforge.chat.graph import run_graph
    from aiforge.chat.tool_runner import Toolset
    from aiforge.core.costs import CostTracker
    from aiforge.core.types import CallParams

    def final_state(run: typing.Callable) -> dict:
        runtime = AgentRuntime(
            provider=ScriptedProvider(list(script)), provider_name="scripted", free=True,
            params=CallParams(model="m"), toolset=Toolset([]), cost_tracker=CostTracker(), price_overrides=None,
        )
        initial = {
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "go"}],
            "current_input": "go", "tool_calls": [], "tool_results": [], "iteration": 0, "max_tool_iterations": 5,
            "trace": [], "total_input_tokens": 0, "total_output_tokens": 0, "model": "m",
        }
        final = asyncio.run(run(initial, {"configurable": {"turn": Turn(runtime, conversation_id="c")}}))
        final["trace"] = [(r["step"], r.get("node"), r.get("input_tokens")) for r in final["trace"]]
        for message in final["messages"]:
            for call in message.get("tool_calls", ()):
                call.pop("id")
            message.pop("tool_call_id", None)
        for result in final["tool_results"]:
            result.pop("id")
        return final

    graph = build_chat_graph()
    direct = final_state(lambda state, config: run_graph(graph, state, config))
    assert direct == final_state(graph.ainvoke)
    assert direct["messages"][-1]["content"] == script[-1]
    if len(script) == 2:  # the model asked for a tool it was not offered: the graph's nodes answered it
        assert "unknown tool 'echo'" in direct["tool_results"][0]["output"]
