"""``ChatResponse.timeline()`` and ``BatchResult.timeline()``: a turn's steps (model calls, retries, tools, waits)
on one time axis, as a typed DataFrame and as HTML that escapes what the trace holds and never shows a key."""

from __future__ import annotations

import pytest
from langchain_core.tools import StructuredTool

from aiforge import ChatAgent
from aiforge.core.retry import INITIAL_BACKOFF
from aiforge.core.timeline import FRAME_DTYPES, MAX_ROWS
from aiforge.core.timeline_html import _ms
from aiforge.core.types import UsageError
from aiforge.providers.scripted import ScriptedProvider
from fakellm import Fault, LLMServer, Reply, ToolCallSpec
from tests.chat.jupyterlab_sanitizer import dropped

KEY = "sk-timeline-secret-0123456789"
SCRIPT = "<script>alert('x')</script>"


def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def broken(city: str) -> str:
    """A tool that fails with markup in its error."""
    raise ValueError(SCRIPT)


def wire_agent(srv: LLMServer, **settings: object) -> ChatAgent:
    tools = [
        StructuredTool.from_function(lookup, name="lookup", description="Weather"),
        StructuredTool.from_function(broken, name="broken", description="Fails"),
    ]
    return ChatAgent(
        provider="openai", model="gpt-4o-mini", OPENAI_API_KEY=KEY, OPENAI_BASE_URL=srv.openai_base_url,
        tools=tools, **settings,
    )


@pytest.fixture
def retried_tool_turn(srv: LLMServer):
    """A turn whose first model call fails with a 500 and is retried, then runs a tool, then answers."""
    srv.enqueue(
        Fault(500),
        Reply(tool_calls=[ToolCallSpec("lookup", {"city": "Oslo"})], usage={"input_tokens": 50, "output_tokens": 8}),
        Reply(text="Sunny in Oslo.", usage={"input_tokens": 70, "output_tokens": 5}),
    )
    response = wire_agent(srv, MAX_RETRIES=1).chat("Weather in Oslo?")
    return srv, response


def test_a_retried_call_then_a_tool_show_in_order_with_their_tokens_and_costs(retried_tool_turn) -> None:
    srv, response = retried_tool_turn
    steps = response.timeline().lanes[0].steps

    assert len(srv.requests) == 3
    assert [(s.kind, s.name) for s in steps] == [
        ("model", "route"), ("retry", "ProviderError"), ("tool", "lookup"), ("model", "process_result"),
    ]
    route, retry, tool, answer = steps
    assert (route.input_tokens, route.output_tokens, answer.input_tokens, answer.output_tokens) == (50, 8, 70, 5)
    assert route.cost > 0 and answer.cost > 0 and route.cost + answer.cost == pytest.approx(response.cost)
    assert route.model == answer.model == "gpt-4o-mini" and route.finish_reason == "tool_calls"
    # The retry lies inside the model call that needed it; its bar is the jittered backoff before the next attempt.
    assert retry.attempt == 1 and "status=500" in (retry.error or "")
    assert 0 <= retry.duration_ms <= INITIAL_BACKOFF * 1000
    assert route.start_ms <= retry.start_ms and retry.end_ms <= route.end_ms + 1e-6
    assert route.end_ms <= tool.start_ms and tool.end_ms <= answer.start_ms
    assert tool.error is None and tool.duration_ms >= 0


def test_the_retry_is_a_trace_record_and_its_backoff_stays_in_the_latency(retried_tool_turn) -> None:
    _, response = retried_tool_turn
    (retry,) = [r for r in response.trace if r["step"] == "retry"]

    assert retry["node"] == "provider" and 0 <= retry["latency_ms"] <= INITIAL_BACKOFF * 1000
    assert response.queue_ms == 0.0  # a retry's backoff is the request's own time, not a wait for a turn
    assert response.latency_ms >= retry["latency_ms"]
    assert [r["step"] for r in response.trace] == ["retry", "model", "tool", "model"]  # inside its call: first


def test_the_frame_has_one_typed_row_per_step(retried_tool_turn) -> None:
    _, response = retried_tool_turn
    frame = response.timeline().to_frame()

    assert list(frame.columns) == list(FRAME_DTYPES)
    assert {c: str(t) for c, t in frame.dtypes.items()} == FRAME_DTYPES
    assert frame["kind"].tolist() == ["model", "retry", "tool", "model"]
    assert frame["input_tokens"].tolist()[0] == 50 and frame["attempt"].tolist()[1] == 1
    assert frame["cost"].sum() == pytest.approx(response.cost)
    assert frame["start_ms"].is_monotonic_increasing


def test_the_html_shows_every_step_with_its_numbers_and_no_key(retried_tool_turn) -> None:
    _, response = retried_tool_turn
    timeline = response.timeline()
    page = timeline._repr_html_()

    for label in ("model · route", "retry · ProviderError", "tool · lookup", "model · process_result"):
        assert label in page
    assert "50+8" in page and "70+5" in page and f"${response.cost:.5f}" in page
    assert "attempt 1 failed" in page and "<script" not in page
    assert KEY not in page and KEY not in timeline.to_frame().to_csv() and KEY not in repr(timeline)


def test_tool_names_and_errors_with_markup_are_escaped(srv: LLMServer) -> None:
    srv.enqueue(
        Reply(tool_calls=[ToolCallSpec("broken", {"city": "x"}), ToolCallSpec(SCRIPT, {})]),
        Reply(text="done"),
    )
    response = wire_agent(srv).chat("go")
    page = response.timeline()._repr_html_()

    tools = [s for s in response.timeline().lanes[0].steps if s.kind == "tool"]
    assert len(tools) == 2 and all(s.error for s in tools)
    assert "<script" not in page and "&lt;script&gt;" in page


def test_a_turn_without_start_offsets_lays_its_steps_one_after_another() -> None:
    from aiforge.core.timeline import turn_timeline

    trace = [
        {"step": "model", "node": "route", "name": "chat", "latency_ms": 5.0},
        {"step": "tool", "node": "execute_tool", "name": "t", "latency_ms": 2.0},
        {"step": "model", "node": "process_result", "name": "chat", "latency_ms": 3.0},
    ]
    steps = turn_timeline(trace, label="old").lanes[0].steps  # type: ignore[arg-type]

    assert [(s.start_ms, s.end_ms) for s in steps] == [(0.0, 5.0), (5.0, 7.0), (7.0, 10.0)]


def scripted_batch(rows: int, concurrency: int):
    agent = ChatAgent(provider=ScriptedProvider(default=lambda messages: "ok"))
    return agent.run_batch([f"item {i}" for i in range(rows)], concurrency=concurrency)


def test_a_batch_waiting_for_workers_shows_each_row_after_its_wait() -> None:
    with LLMServer(latency=0.02) as server:  # each answer takes 20 ms: the rows behind it wait that long
        agent = ChatAgent(provider="openai", OPENAI_API_KEY=KEY, OPENAI_BASE_URL=server.openai_base_url)
        result = agent.run_batch([f"item {i}" for i in range(4)], concurrency=1)
    frame = result.timeline(order="input").to_frame()

    models, waits = frame[frame["kind"] == "model"], frame[frame["kind"] == "wait"]
    # Rows 1-3 wait for the one worker; row 0 waits only when a busy machine starts the worker late.
    assert waits["row"].tolist() in ([1, 2, 3], [0, 1, 2, 3]) and set(waits["name"]) == {"worker"}
    assert (waits["start_ms"] == 0.0).all()  # a row waits from the batch's start
    # Each row's turn starts where its wait ends, after the rows before it: one after another on the batch's axis.
    ends = dict(zip(waits["row"], waits["start_ms"] + waits["duration_ms"], strict=True))
    starts = dict(zip(models["row"], models["start_ms"], strict=True))
    assert all(starts[row] >= ends[row] for row in (1, 2, 3))
    for row in (1, 2, 3):
        previous = models[models["row"] == row - 1].iloc[0]
        assert starts[row] >= previous["start_ms"] + previous["duration_ms"]


def test_a_batchs_header_gives_the_median_and_longest_wait_per_row_not_their_sum() -> None:
    with LLMServer(latency=0.02) as server:
        agent = ChatAgent(provider="openai", OPENAI_API_KEY=KEY, OPENAI_BASE_URL=server.openai_base_url)
        result = agent.run_batch([f"item {i}" for i in range(5)], concurrency=1)
    timeline = result.timeline()
    waits = sorted(lane.queue_ms for lane in timeline.lanes)
    header = timeline._repr_html_().split("</div>")[0]

    assert waits[-1] > waits[2] > waits[0]  # the first row waits for no other, the last for 4 others
    assert f"queued per row: median {_ms(waits[2])}, max {_ms(waits[-1])}" in header
    assert _ms(sum(waits)) not in header and "all rows" not in header
    assert "queued" not in scripted_batch(1, concurrency=1).timeline()._repr_html_().split("</div>")[0]


def test_a_big_batch_shows_its_slowest_rows_up_to_the_cap_and_says_so() -> None:
    result = scripted_batch(60, concurrency=4)
    timeline = result.timeline()
    page = timeline._repr_html_()

    assert len(timeline.lanes) == 60 and len(timeline.shown) == MAX_ROWS
    latencies = [lane.latency_ms for lane in timeline.lanes]
    assert latencies == sorted(latencies, reverse=True)
    assert f"Showing the slowest {MAX_ROWS} of 60 rows ({60 - MAX_ROWS} not shown)" in page
    assert page.count("<tr") == MAX_ROWS + 1  # the header and the rows shown
    assert set(timeline.to_frame()["row"]) == set(range(60))  # every row's steps
    everything = result.timeline(max_rows=None)
    assert everything._repr_html_().count("<tr") == 61 and "Showing" not in everything._repr_html_()


def test_a_failed_row_has_a_lane_with_its_error_and_no_steps() -> None:
    agent = ChatAgent(provider=ScriptedProvider(default=lambda messages: "ok"))
    result = agent.run_batch(["fine", None, "also fine"], concurrency=2)  # type: ignore[list-item]
    timeline = result.timeline(order="input")

    assert [lane.label for lane in timeline.lanes] == [0, 1, 2]
    failed = timeline.lanes[1]
    assert failed.steps == () and failed.error is not None and "MissingValueError" in failed.error
    assert "MissingValueError" in timeline._repr_html_()


def test_bad_timeline_options_are_usage_errors() -> None:
    result = scripted_batch(2, concurrency=1)
    with pytest.raises(UsageError, match="order"):
        result.timeline(order="fastest")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="max_rows"):
        result.timeline(max_rows=0)


def test_the_html_uses_only_what_jupyterlabs_sanitizer_keeps(retried_tool_turn, srv: LLMServer) -> None:
    """An untrusted notebook's output goes through JupyterLab's sanitizer: the bars and swatches must survive it."""
    _, response = retried_tool_turn
    srv.enqueue(Reply(tool_calls=[ToolCallSpec("broken", {"city": "x"})]), Reply(text="done"))
    failed_tool = wire_agent(srv).chat("go")
    agent = ChatAgent(provider=ScriptedProvider(default=lambda messages: "ok"))
    batch = agent.run_batch([f"item {i}" for i in range(MAX_ROWS + 3)] + [None], concurrency=2)  # type: ignore[list-item]
    pages = [response.timeline()._repr_html_(), failed_tool.timeline()._repr_html_(), batch.timeline()._repr_html_()]

    for page in pages:
        assert dropped(page) == []
        assert "background:#" in page and "flex:0 0 " in page  # the bars are there, coloured
    # The check catches what the sanitizer strips: the theme variables the view used to colour its bars with.
    assert dropped("<div style='background: var(--jp-brand-color1, #1976d2); width: 4%'></div>") == [
        "style 'background: var(--jp-brand-color1, #1976d2)' on <div>"
    ]
    assert dropped("<style>.a{}</style><svg></svg>") == ["tag <style>", "tag <svg>"]


def test_a_three_step_turns_html_is_small() -> None:
    from aiforge.core.timeline import turn_timeline

    trace = [
        {"step": "model", "node": "route", "name": "chat", "latency_ms": 5.0, "input_tokens": 50, "output_tokens": 8},
        {"step": "tool", "node": "execute_tool", "name": "t", "latency_ms": 2.0},
        {"step": "model", "node": "process_result", "name": "chat", "latency_ms": 3.0},
    ]
    page = turn_timeline(trace, label="small")._repr_html_()  # type: ignore[arg-type]

    assert page.count("<tr") == 4 and len(page) < 3000  # each cell repeating its CSS made this 6.2 kB
