"""Malformed model output on both wire protocols: bad tool arguments, unknown tools, interleaved fragments.

As the ChatAgent issue specifies: the tool is not run, the call is answered with an error the
model can act on, the turn goes on to an answer, and the history stays one the APIs accept.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from langchain_core.tools import StructuredTool

from aiforge import ChatAgent
from fakellm import LLMServer, Reply, ToolCallSpec
from tests.chat.checks import assert_valid_history
from tests.reliability.conftest import KEY, make_agent, rejected, tool_results_of


class Lookup:
    """A ``lookup(city)`` tool that records its calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []

        def lookup(city: str) -> str:
            """Look up a city."""
            self.calls.append(city)
            return f"{city}: sunny"

        self.tool = StructuredTool.from_function(lookup, name="lookup")


def run_turn(agent: ChatAgent, mode: str, text: str = "Weather in Oslo?") -> str:
    if mode == "complete":
        return agent.chat(text).message
    return "".join(agent.run_stream(text))


def modes_for(protocol: str, raw: str) -> list[str]:
    # The non-streaming Messages API carries arguments as a JSON object: only its stream can be malformed.
    try:
        json.loads(raw)
    except ValueError:
        return ["complete", "stream"] if protocol == "openai" else ["stream"]
    return ["complete", "stream"]


def check_answered_with_an_error(agent: ChatAgent, srv: LLMServer, expected: str) -> None:
    response = agent.last_response
    assert response is not None and response.message == "I could not check that."
    (record,) = response.tool_calls
    assert record.error and expected in record.output
    follow_up = srv.requests[-1]
    assert [content for _, content in tool_results_of(follow_up)] == [record.output]  # the model was told
    assert_valid_history(agent.history)
    assert agent.chat("Thanks.").message == "echo: Thanks."
    assert not rejected(srv)


MALFORMED = {
    "truncated": '{"city": "Os',
    "not_json": "city=Oslo",
    "list": '["Oslo"]',
    "string": '"Oslo"',
    "number": "42",
    "null": "null",
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_malformed_tool_arguments_are_answered_with_an_error(srv: LLMServer, protocol: str, kind: str) -> None:
    raw = MALFORMED[kind]
    for mode in modes_for(protocol, raw):
        lookup = Lookup()
        agent = make_agent(srv, protocol, tools=[lookup.tool])
        srv.enqueue(Reply(tool_calls=[ToolCallSpec("lookup", raw)]), Reply(text="I could not check that."))

        assert run_turn(agent, mode) == "I could not check that."

        assert lookup.calls == [], mode
        check_answered_with_an_error(agent, srv, "'lookup'")


@pytest.mark.parametrize("mode", ["complete", "stream"])
def test_arguments_that_do_not_match_the_schema_are_answered_with_an_error(
    srv: LLMServer, protocol: str, mode: str
) -> None:
    lookup = Lookup()
    agent = make_agent(srv, protocol, tools=[lookup.tool])
    srv.enqueue(Reply(tool_calls=[ToolCallSpec("lookup", {"town": "Oslo"})]), Reply(text="I could not check that."))

    run_turn(agent, mode)

    assert lookup.calls == []
    check_answered_with_an_error(agent, srv, "city")


@pytest.mark.parametrize("mode", ["complete", "stream"])
def test_unknown_tool_is_answered_with_an_error(srv: LLMServer, protocol: str, mode: str) -> None:
    lookup = Lookup()
    agent = make_agent(srv, protocol, tools=[lookup.tool])
    srv.enqueue(
        Reply(tool_calls=[ToolCallSpec("cancel_order", {"order_id": 42})]), Reply(text="I could not check that.")
    )

    run_turn(agent, mode)

    assert lookup.calls == []
    check_answered_with_an_error(agent, srv, "unknown tool 'cancel_order'")


@pytest.mark.parametrize("mode", ["complete", "stream"])
def test_one_bad_call_among_parallel_calls_does_not_stop_the_others(srv: LLMServer, protocol: str, mode: str) -> None:
    lookup = Lookup()
    agent = make_agent(srv, protocol, tools=[lookup.tool])
    calls = [
        ToolCallSpec("lookup", {"city": "Oslo"}),
        ToolCallSpec("nope", {}),
        ToolCallSpec("lookup", {"city": "Rome"}),
    ]
    srv.enqueue(Reply(tool_calls=calls), Reply(text="Oslo and Rome are sunny."))

    assert run_turn(agent, mode) == "Oslo and Rome are sunny."

    assert sorted(lookup.calls) == ["Oslo", "Rome"]
    records = agent.last_response.tool_calls
    assert [(r.tool, r.error) for r in records] == [("lookup", False), ("nope", True), ("lookup", False)]
    assert [c for _, c in tool_results_of(srv.requests[-1])] == [r.output for r in records]
    assert_valid_history(agent.history)
    assert not rejected(srv)


# ---------------------------------------------------------------------------
# Parallel tool calls whose streamed fragments interleave
# ---------------------------------------------------------------------------


def _openai_chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> str:
    chunk = {
        "id": "chatcmpl-interleaved",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if usage is None else [],
    }
    if usage is not None:
        chunk["usage"] = usage
    return f"data: {json.dumps(chunk)}\n\n"


def openai_interleaved() -> list[str]:
    def fragment(index: int, **fields: Any) -> str:
        return _openai_chunk({"tool_calls": [{"index": index, **fields}]})

    return [
        _openai_chunk({"role": "assistant", "content": None}),
        fragment(0, id="call_A", type="function", function={"name": "lookup", "arguments": ""}),
        fragment(1, id="call_B", type="function", function={"name": "lookup", "arguments": ""}),
        fragment(1, function={"arguments": '{"ci'}),
        fragment(0, function={"arguments": '{"city": '}),
        fragment(1, function={"arguments": 'ty": "Ro'}),
        fragment(0, function={"arguments": '"Oslo"}'}),
        fragment(1, function={"arguments": 'me"}'}),
        _openai_chunk({}, finish="tool_calls"),
        _openai_chunk({}, usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}),
        "data: [DONE]\n\n",
    ]


def openai_answer(text: str) -> list[str]:
    return [
        _openai_chunk({"role": "assistant", "content": ""}),
        _openai_chunk({"content": text}),
        _openai_chunk({}, finish="stop"),
        _openai_chunk({}, usage={"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}),
        "data: [DONE]\n\n",
    ]


def _event(kind: str, **fields: Any) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n"


def _message_start() -> str:
    message = {
        "id": "msg_interleaved", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }  # fmt: skip
    return _event("message_start", message=message)


def anthropic_interleaved() -> list[str]:
    def start(index: int, call_id: str) -> str:
        block = {"type": "tool_use", "id": call_id, "name": "lookup", "input": {}}
        return _event("content_block_start", index=index, content_block=block)

    def delta(index: int, partial: str) -> str:
        return _event("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": partial})

    return [
        _message_start(),
        start(0, "toolu_A"),
        start(1, "toolu_B"),
        delta(1, '{"ci'),
        delta(0, '{"city": '),
        delta(1, 'ty": "Ro'),
        delta(0, '"Oslo"}'),
        delta(1, 'me"}'),
        _event("content_block_stop", index=1),
        _event("content_block_stop", index=0),
        _event("message_delta", delta={"stop_reason": "tool_use", "stop_sequence": None}, usage={"output_tokens": 5}),
        _event("message_stop"),
    ]


def anthropic_answer(text: str) -> list[str]:
    return [
        _message_start(),
        _event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        _event("content_block_delta", index=0, delta={"type": "text_delta", "text": text}),
        _event("content_block_stop", index=0),
        _event("message_delta", delta={"stop_reason": "end_turn", "stop_sequence": None}, usage={"output_tokens": 5}),
        _event("message_stop"),
    ]


class ScriptedSSE:
    """Answers the n-th POST with the n-th canned SSE body, verbatim; records request bodies."""

    def __init__(self, bodies: list[list[str]]) -> None:
        self.bodies = ["".join(events).encode() for events in bodies]
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output clean
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                owner.requests.append(body)
                payload = owner.bodies[min(len(owner.requests), len(owner.bodies)) - 1]
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def scripted_sse() -> Iterator[Callable[[list[list[str]]], ScriptedSSE]]:
    servers: list[ScriptedSSE] = []

    def start(bodies: list[list[str]]) -> ScriptedSSE:
        servers.append(ScriptedSSE(bodies))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def test_interleaved_parallel_tool_call_fragments_are_reassembled_by_index(
    scripted_sse, srv: LLMServer, protocol: str
) -> None:
    interleaved, answer = (
        (openai_interleaved, openai_answer) if protocol == "openai" else (anthropic_interleaved, anthropic_answer)
    )
    canned = scripted_sse([interleaved(), answer("Oslo and Rome are sunny.")])
    lookup = Lookup()
    agent = make_agent(canned.base_url, protocol, tools=[lookup.tool])

    assert "".join(agent.run_stream("Weather in Oslo and Rome?")) == "Oslo and Rome are sunny."

    assert sorted(lookup.calls) == ["Oslo", "Rome"]
    records = agent.last_response.tool_calls
    assert [(r.input, r.error) for r in records] == [({"city": "Oslo"}, False), ({"city": "Rome"}, False)]
    assert_valid_history(agent.history)
    follow_up = canned.requests[1]
    # The request that carried the results is one the strict server accepts.
    path = "/v1/chat/completions" if protocol == "openai" else "/v1/messages"
    replayed = httpx.post(srv.base_url + path, json={**follow_up, "stream": False}, headers={"x-api-key": KEY})
    assert replayed.status_code == 200, replayed.text
    ids = ["call_A", "call_B"] if protocol == "openai" else ["toolu_A", "toolu_B"]
    results = tool_results_of(srv.requests[-1])
    assert [call_id for call_id, _ in results] == ids
    assert [content for _, content in results] == ["Oslo: sunny", "Rome: sunny"]
