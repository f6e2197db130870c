"""Tool use: native and prompted-JSON calls, failures reported to the model, parallel calls, the iteration cap."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
from typing import Any

import pytest
from langchain_core.tools import StructuredTool

from aiforge import ChatAgent
from aiforge.providers.function import FunctionProvider
from aiforge.providers.scripted import ScriptedProvider, ScriptedReply, tool_call, tool_calls
from tests.chat.checks import assert_valid_context, assert_valid_history

# Custom function providers have no price table entry: their unpriced-cost warning is expected here.
pytestmark = pytest.mark.filterwarnings("ignore:aiforge has no price:UserWarning")


def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"72°F and sunny in {city}"


def search_docs(query: str) -> str:
    """Search internal documentation."""
    return f"Found 3 results for '{query}'"


@pytest.fixture
def doc_tools() -> list[StructuredTool]:
    return [
        StructuredTool.from_function(get_weather, name="weather", description="Get current weather for a city"),
        StructuredTool.from_function(search_docs, name="search", description="Search internal documentation"),
    ]


class CountingTool:
    """A LangChain-compatible tool by duck typing: name, description, invoke; counts its runs."""

    def __init__(self, name: str = "counter", result: Any = "counted", args_schema: dict | None = None) -> None:
        self.name = name
        self.description = "Counts how often it runs"
        self.args_schema = args_schema
        self.runs: list[dict] = []
        self.result = result

    def invoke(self, arguments: dict) -> Any:
        self.runs.append(arguments)
        return self.result


def counted_structured_tool(runs: list) -> StructuredTool:
    def lookup_order(order_id: str) -> str:
        """Look up an order by ID."""
        runs.append(order_id)
        return f"Order {order_id}: shipped, arriving March 28"

    return StructuredTool.from_function(lookup_order, name="lookup_order", description="Look up order status by ID")


# ---------------------------------------------------------------------------
# The documented tool flow
# ---------------------------------------------------------------------------


def test_one_tool_call_gives_one_iteration_and_its_record(doc_tools) -> None:
    fake = ScriptedProvider([tool_call("weather", city="San Francisco"), "It's 72°F and sunny in San Francisco!"])
    agent = ChatAgent(
        system_prompt="You are a helpful assistant with access to weather and doc search.",
        tools=doc_tools,
        max_tool_iterations=3,
        provider=fake,
    )

    response = agent.chat("What's the weather in San Francisco?")

    assert response.message == "It's 72°F and sunny in San Francisco!"
    assert response.iterations == 1
    assert [(t.tool, t.input, t.output) for t in response.tool_calls] == [
        ("weather", {"city": "San Francisco"}, "72°F and sunny in San Francisco")
    ]


def test_multi_tool_chain_gives_two_iterations(doc_tools) -> None:
    fake = ScriptedProvider(
        [tool_call("weather", city="NYC"), tool_call("search", query="umbrellas"), "Take an umbrella."]
    )
    agent = ChatAgent(provider=fake, tools=doc_tools, max_tool_iterations=3)

    response = agent.chat("What's the weather in NYC and find docs about umbrellas")

    assert response.iterations == 2
    assert len(response.tool_calls) == 2
    assert [t.tool for t in response.tool_calls] == ["weather", "search"]


def test_tools_are_offered_to_the_model_with_their_json_schema(calc_tool) -> None:
    fake = ScriptedProvider(["no tool needed"])
    agent = ChatAgent(provider=fake, tools=[calc_tool])

    agent.chat("hi")

    (spec,) = fake.calls[0].tools
    assert spec["name"] == "calculator" and spec["description"] == "Evaluate math"
    assert spec["parameters"]["properties"]["expression"]["type"] == "string"
    assert spec["parameters"]["required"] == ["expression"]


def test_tool_result_goes_back_to_the_model_tied_to_its_call(calc_tool) -> None:
    call = tool_call("calculator", expression="249.99 * 0.85")
    fake = ScriptedProvider([call, "$212.49"])
    agent = ChatAgent(provider=fake, tools=[calc_tool])

    agent.chat("What's 15% off $249.99?")

    assistant, result = fake.calls[1].messages[-2:]
    assert assistant["tool_calls"][0]["id"] == call.tool_calls[0]["id"]
    assert result == {
        "role": "tool",
        "tool_call_id": call.tool_calls[0]["id"],
        "name": "calculator",
        "content": "212.4915",
    }


def test_tool_exchange_is_kept_in_history_for_the_next_turn(calc_tool) -> None:
    fake = ScriptedProvider([tool_call("calculator", expression="2*3"), "6", "yes"])
    agent = ChatAgent(provider=fake, tools=[calc_tool])

    agent.chat("2*3?")
    agent.chat("sure?")

    assert [m["role"] for m in fake.calls[-1].messages] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert_valid_context(fake.calls[-1].messages)


def test_tool_augmented_agent_example_looks_up_then_cancels_an_order() -> None:
    def cancel_order(order_id: str) -> str:
        """Cancel an order."""
        return f"Order {order_id} has been cancelled. Refund in 3-5 days."

    runs: list = []
    fake = ScriptedProvider(
        [
            tool_call("lookup_order", order_id="12345"),
            "Order #12345 has been shipped and will arrive on March 28.",
            tool_call("cancel_order", order_id="12345"),
            "Done! Order #12345 has been cancelled.",
        ]
    )
    agent = ChatAgent(
        system_prompt="You are a customer service agent for ShopCo.",
        tools=[
            counted_structured_tool(runs),
            StructuredTool.from_function(cancel_order, name="cancel_order", description="Cancel an order by ID"),
        ],
        max_tool_iterations=3,
        provider=fake,
    )

    first = agent.chat("What's the status of order #12345?")
    second = agent.chat("Actually, please cancel it")

    assert repr(first.tool_calls[0]) == (
        "ToolCallRecord(tool='lookup_order', input={'order_id': '12345'}, "
        "output='Order 12345: shipped, arriving March 28')"
    )
    assert second.tool_calls[0].output == "Order 12345 has been cancelled. Refund in 3-5 days."


def test_duck_typed_tool_with_only_name_description_invoke_is_run() -> None:
    tool = CountingTool(result={"count": 1})
    fake = ScriptedProvider([tool_call("counter", n=1), "done"])
    agent = ChatAgent(provider=fake, tools=[tool])

    response = agent.chat("count")

    assert tool.runs == [{"n": 1}]
    assert response.tool_calls[0].output == '{"count": 1}'  # non-text results reach the model as JSON


# ---------------------------------------------------------------------------
# Failures are the call's result, never the turn's end
# ---------------------------------------------------------------------------


def test_tool_that_raises_reports_its_error_to_the_model_and_the_turn_goes_on() -> None:
    def divide(a: int, b: int) -> str:
        """Divide."""
        return str(a / b)

    tool = StructuredTool.from_function(divide, name="divide", description="Divide a by b")
    fake = ScriptedProvider([tool_call("divide", a=1, b=0), "You cannot divide by zero."])
    agent = ChatAgent(provider=fake, tools=[tool])

    response = agent.chat("1/0?")

    (record,) = response.tool_calls
    assert record.output == "Error: ZeroDivisionError: division by zero" and record.error is True
    assert fake.calls[1].messages[-1]["content"] == "Error: ZeroDivisionError: division by zero"
    assert response.message == "You cannot divide by zero."
    assert_valid_history(agent.history)


def test_unknown_tool_name_is_answered_with_an_error_listing_the_tools(calc_tool) -> None:
    fake = ScriptedProvider([tool_call("weather", city="Paris"), "Sorry, no weather tool."])
    agent = ChatAgent(provider=fake, tools=[calc_tool])

    response = agent.chat("weather?")

    (record,) = response.tool_calls
    assert record.error and "unknown tool 'weather'" in record.output and "calculator" in record.output
    assert fake.calls[1].messages[-1] == {
        "role": "tool",
        "tool_call_id": record.id,
        "name": "weather",
        "content": record.output,
    }
    assert response.message == "Sorry, no weather tool."


def test_arguments_that_are_not_json_are_reported_and_the_tool_is_not_run() -> None:
    runs: list = []
    bad = ScriptedReply(
        tool_calls=[{"id": "call_bad", "name": "lookup_order", "arguments": {}, "invalid_arguments": '{"order_id": 12'}]
    )
    fake = ScriptedProvider([bad, "Let me retry."])
    agent = ChatAgent(provider=fake, tools=[counted_structured_tool(runs)])

    response = agent.chat("status of 12?")

    assert runs == []
    (record,) = response.tool_calls
    assert record.error and "not a JSON object" in record.output and '{"order_id": 12' in record.output
    assert fake.calls[1].messages[-1] == {
        "role": "tool",
        "tool_call_id": "call_bad",
        "name": "lookup_order",
        "content": record.output,
    }


def test_arguments_missing_a_required_field_are_reported_and_the_tool_is_not_run() -> None:
    runs: list = []
    fake = ScriptedProvider([tool_call("lookup_order", id="12345"), "Which order?"])
    agent = ChatAgent(provider=fake, tools=[counted_structured_tool(runs)])

    response = agent.chat("status?")

    assert runs == []
    assert response.tool_calls[0].error and "order_id" in response.tool_calls[0].output


def test_arguments_of_the_wrong_type_are_reported_and_the_tool_is_not_run() -> None:
    runs: list = []
    fake = ScriptedProvider([tool_call("lookup_order", order_id={"nested": True}), "Sorry."])
    agent = ChatAgent(provider=fake, tools=[counted_structured_tool(runs)])

    response = agent.chat("status?")

    assert runs == []
    output = response.tool_calls[0].output
    assert output.startswith("Error: invalid arguments: order_id:") and "string" in output


def test_duck_typed_tool_missing_a_required_argument_is_not_run() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    tool = CountingTool(args_schema=schema)
    fake = ScriptedProvider([tool_call("counter"), "ok"])
    agent = ChatAgent(provider=fake, tools=[tool])

    response = agent.chat("count")

    assert tool.runs == []
    assert response.tool_calls[0].output == "Error: invalid arguments for 'counter': missing required argument(s) n."


def test_model_asking_for_a_tool_when_none_are_registered_gets_an_error_result() -> None:
    fake = ScriptedProvider([tool_call("calculator", expression="1"), "fine"])
    agent = ChatAgent(provider=fake)

    response = agent.chat("hi")

    assert "Available tools: none" in response.tool_calls[0].output
    assert fake.calls[0].tools is None
    assert_valid_history(agent.history)


# ---------------------------------------------------------------------------
# Parallel tool calls
# ---------------------------------------------------------------------------


def test_parallel_tool_calls_are_all_executed_and_answered_before_the_next_model_call(doc_tools) -> None:
    parallel = tool_calls(("weather", {"city": "NYC"}), ("weather", {"city": "Paris"}), ("search", {"query": "rain"}))
    fake = ScriptedProvider([parallel, "All done."])
    agent = ChatAgent(provider=fake, tools=doc_tools)

    response = agent.chat("NYC, Paris and rain docs")

    assert response.iterations == 1 and len(fake.calls) == 2
    ids = [c["id"] for c in parallel.tool_calls]
    tail = fake.calls[1].messages[-3:]
    assert [(m["tool_call_id"], m["content"]) for m in tail] == [
        (ids[0], "72°F and sunny in NYC"),
        (ids[1], "72°F and sunny in Paris"),
        (ids[2], "Found 3 results for 'rain'"),
    ]
    assert [t.output for t in response.tool_calls] == [m["content"] for m in tail]


def test_async_tools_of_one_step_run_concurrently() -> None:
    active = 0
    most_active = 0
    all_started = asyncio.Event()
    started = 0

    async def slow_lookup(key: str) -> str:
        """Look something up slowly."""
        nonlocal active, most_active, started
        active += 1
        started += 1
        most_active = max(most_active, active)
        if started == 3:
            all_started.set()
        try:
            await asyncio.wait_for(all_started.wait(), timeout=60)  # sequential execution would time out here
        finally:
            active -= 1
        return key.upper()

    tool = StructuredTool.from_function(coroutine=slow_lookup, name="lookup", description="Slow lookup")
    fake = ScriptedProvider(
        [tool_calls(("lookup", {"key": "a"}), ("lookup", {"key": "b"}), ("lookup", {"key": "c"})), "ok"]
    )
    agent = ChatAgent(provider=fake, tools=[tool])

    response = agent.chat("look up a, b and c")

    assert most_active == 3
    assert [t.output for t in response.tool_calls] == ["A", "B", "C"]


def test_sync_tools_of_one_step_run_concurrently_in_threads() -> None:
    barrier = threading.Barrier(3, timeout=60)  # sequential execution would break the barrier

    def wait_for_peers(key: str) -> str:
        """Wait for the other calls."""
        barrier.wait()
        return key

    tool = StructuredTool.from_function(wait_for_peers, name="peer", description="Waits for its peers")
    fake = ScriptedProvider([tool_calls(("peer", {"key": "a"}), ("peer", {"key": "b"}), ("peer", {"key": "c"})), "ok"])
    agent = ChatAgent(provider=fake, tools=[tool])

    response = agent.chat("go")

    assert [t.output for t in response.tool_calls] == ["a", "b", "c"]
    assert not any(t.error for t in response.tool_calls)


def test_parallel_results_keep_call_order_when_tools_finish_out_of_order() -> None:
    finished: list[str] = []
    fast_finished = asyncio.Event()

    async def sleepy(key: str) -> str:
        """Answer; the "slow" call only after the "fast" one (an ordering, not a race of sleeps)."""
        if key == "slow":
            await asyncio.wait_for(fast_finished.wait(), 60)  # 60 s only bounds the failure
        finished.append(key)
        if key == "fast":
            fast_finished.set()
        return key

    tool = StructuredTool.from_function(coroutine=sleepy, name="sleepy", description="Sleeps")
    calls = tool_calls(("sleepy", {"key": "slow"}), ("sleepy", {"key": "fast"}))
    fake = ScriptedProvider([calls, "ok"])
    agent = ChatAgent(provider=fake, tools=[tool])

    agent.chat("go")

    assert finished == ["fast", "slow"]
    assert [m["content"] for m in fake.calls[1].messages[-2:]] == ["slow", "fast"]


def test_one_failing_call_among_parallel_calls_does_not_stop_the_others(doc_tools) -> None:
    def explode(x: str) -> str:
        """Always fails."""
        raise RuntimeError("kaboom")

    tools = [*doc_tools, StructuredTool.from_function(explode, name="explode", description="Fails")]
    fake = ScriptedProvider([tool_calls(("weather", {"city": "Rome"}), ("explode", {"x": "1"})), "partial"])
    agent = ChatAgent(provider=fake, tools=tools)

    response = agent.chat("go")

    assert [(t.output, t.error) for t in response.tool_calls] == [
        ("72°F and sunny in Rome", False),
        ("Error: RuntimeError: kaboom", True),
    ]
    assert_valid_history(agent.history)


# ---------------------------------------------------------------------------
# max_tool_iterations
# ---------------------------------------------------------------------------


def test_iteration_cap_ends_the_turn_with_a_message_and_a_valid_history(calc_tool) -> None:
    fake = ScriptedProvider(default=lambda messages: tool_call("calculator", expression="1+1"))
    agent = ChatAgent(provider=fake, tools=[calc_tool], max_tool_iterations=3)

    response = agent.chat("loop forever")

    assert response.iterations == 3
    assert len(fake.calls) == 4  # route + one model call after each of the 3 rounds
    assert len(response.tool_calls) == 3 and all(t.output == "2" for t in response.tool_calls)
    assert response.stopped_by_limit
    assert "max_tool_iterations=3" in response.message
    assert agent.history[-1] == {"role": "assistant", "content": response.message}
    assert_valid_history(agent.history)


def test_calls_refused_at_the_cap_are_answered_so_the_next_turn_is_accepted(calc_tool) -> None:
    fake = ScriptedProvider(
        [
            tool_call("calculator", expression="1"),
            tool_calls(("calculator", {"expression": "2"}), ("calculator", {"expression": "3"})),
            "fresh answer",
        ]
    )
    agent = ChatAgent(provider=fake, tools=[calc_tool], max_tool_iterations=1)

    agent.chat("loop")
    response = agent.chat("next question")

    refused = [m for m in agent.history if m["role"] == "tool" and m["content"].startswith("Not executed")]
    assert len(refused) == 2
    assert response.message == "fresh answer"
    assert_valid_context(fake.calls[-1].messages)


def test_turn_below_the_cap_is_not_marked_as_stopped(calc_tool) -> None:
    fake = ScriptedProvider([tool_call("calculator", expression="1"), "one"])
    agent = ChatAgent(provider=fake, tools=[calc_tool], max_tool_iterations=1)

    response = agent.chat("1?")

    assert response.message == "one" and not response.stopped_by_limit


def test_a_high_iteration_cap_is_not_cut_short_by_langgraphs_step_limit() -> None:
    # LangGraph reads its default step limit from the environment; 25 was its long-time default.
    code = textwrap.dedent(
        """
        from langchain_core.tools import StructuredTool
        from aiforge import ChatAgent
        from aiforge.providers.scripted import ScriptedProvider, tool_call
        tool = StructuredTool.from_function(lambda x: x, name="echo", description="Echo")
        fake = ScriptedProvider(default=lambda messages: tool_call("echo", x="again"))
        print(ChatAgent(provider=fake, tools=[tool], max_tool_iterations=30).chat("loop").iterations)
        """
    )
    env = {**os.environ, "LANGGRAPH_DEFAULT_RECURSION_LIMIT": "25"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)

    assert out.stdout.strip() == "30", out.stderr[-2000:]


# ---------------------------------------------------------------------------
# The prompted-JSON protocol (custom providers)
# ---------------------------------------------------------------------------


def scripted_function(*answers: str):
    """A custom provider function answering from a list; records the messages it gets."""
    queue = list(answers)
    seen: list[list[dict]] = []

    def llm(messages, **params):
        seen.append(messages)
        return queue.pop(0)

    return llm, seen


def test_custom_provider_tool_call_json_runs_the_tool(calc_tool) -> None:
    llm, seen = scripted_function('{"tool": "calculator", "input": {"expression": "249.99 * 0.85"}}', "It is $212.49.")
    agent = ChatAgent(provider=FunctionProvider(llm), tools=[calc_tool])

    response = agent.chat("What's 15% off $249.99?")

    assert response.message == "It is $212.49."
    assert response.tool_calls[0].to_text() == "calculator({'expression': '249.99 * 0.85'}) → 212.4915"
    assert seen[1][-2:] == [
        {"role": "assistant", "content": '{"tool": "calculator", "input": {"expression": "249.99 * 0.85"}}'},
        {"role": "user", "content": "Tool result (calculator): 212.4915"},
    ]


def test_custom_provider_fenced_tool_call_json_is_recognised(calc_tool) -> None:
    llm, _ = scripted_function('```json\n{"tool": "calculator", "input": {"expression": "2+2"}}\n```', "4")
    agent = ChatAgent(provider=FunctionProvider(llm), tools=[calc_tool])

    response = agent.chat("2+2?")

    assert response.tool_calls[0].output == "4" and response.message == "4"


def test_custom_provider_list_of_tool_calls_runs_them_all(calc_tool) -> None:
    calls = [{"tool": "calculator", "input": {"expression": e}} for e in ("1+1", "2+2")]
    llm, _ = scripted_function(json.dumps(calls), "2 and 4")
    agent = ChatAgent(provider=FunctionProvider(llm), tools=[calc_tool])

    response = agent.chat("both")

    assert [t.output for t in response.tool_calls] == ["2", "4"] and response.iterations == 1


def test_custom_provider_json_that_is_not_a_tool_call_is_the_answer(calc_tool) -> None:
    llm, _ = scripted_function('{"answer": 42}')
    agent = ChatAgent(provider=FunctionProvider(llm), tools=[calc_tool])

    response = agent.chat("json please")

    assert response.message == '{"answer": 42}' and response.tool_calls == []


def test_custom_provider_non_object_input_is_reported_as_invalid_arguments(calc_tool) -> None:
    llm, _ = scripted_function('{"tool": "calculator", "input": "2+2"}', "sorry")
    agent = ChatAgent(provider=FunctionProvider(llm), tools=[calc_tool])

    response = agent.chat("2+2?")

    assert response.tool_calls[0].error and "not a JSON object" in response.tool_calls[0].output


def test_custom_async_provider_function_works_with_tools(calc_tool) -> None:
    answers = ['{"tool": "calculator", "input": {"expression": "3*3"}}', "nine"]

    async def llm(messages, **params):
        await asyncio.sleep(0)
        return answers.pop(0)

    agent = ChatAgent(provider=FunctionProvider(llm), tools=[calc_tool])

    assert agent.chat("3*3?").message == "nine"


def test_prompted_protocol_history_stays_valid_for_native_providers_later(calc_tool) -> None:
    fake = ScriptedProvider(['{"tool": "calculator", "input": {"expression": "5-1"}}', "four", "ok"])
    agent = ChatAgent(provider=fake, tools=[calc_tool], native_tools=False)

    agent.chat("5-1?")
    agent.chat("thanks")

    assert_valid_history(agent.history)
    assert [m["role"] for m in fake.calls[-1].messages] == ["system", "user", "assistant", "user", "assistant", "user"]


def test_slow_sync_tools_do_not_block_the_event_loop() -> None:
    # An ordering, not a count of ticks in some time: the tool blocks until the loop has run other work while it
    # runs, which can only happen if the tool is off the loop's thread (on it, the wait would run out instead).
    tool_running = threading.Event()
    loop_ran = threading.Event()
    outcome: list[bool] = []

    def slow(x: str) -> str:
        """Blocks for a while."""
        tool_running.set()
        outcome.append(loop_ran.wait(60))  # 60 s only bounds the failure
        return x

    async def main() -> None:
        tool = StructuredTool.from_function(slow, name="slow", description="Blocks")
        agent = ChatAgent(provider=ScriptedProvider([tool_call("slow", x="a"), "done"]), tools=[tool])
        turn = asyncio.create_task(agent.achat("go"))
        ticks_while_the_tool_runs = 0
        while not turn.done():
            if tool_running.is_set():
                ticks_while_the_tool_runs += 1
                if ticks_while_the_tool_runs == 5:
                    loop_ran.set()
            await asyncio.sleep(0.01)
        assert (await turn).message == "done"

    asyncio.run(main())

    assert outcome == [True]


def test_tool_returning_error_text_is_flagged_as_an_error() -> None:
    from aiforge import ChatAgent
    from aiforge.providers.scripted import ScriptedProvider, tool_call
    from aiforge.tools import calculator

    provider = ScriptedProvider([tool_call("calculator", expression="5 km"), "Sorry."])
    agent = ChatAgent(provider=provider, tools=[calculator])
    record = agent.chat("what is 5 km?").tool_calls[0]
    assert record.output.startswith("Error:") and record.error is True
