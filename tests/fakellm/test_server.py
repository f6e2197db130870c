"""Drive fakellm (the fake OpenAI / Anthropic server) with the real openai / anthropic SDKs."""

from __future__ import annotations

import asyncio
import datetime
import json
import threading
import time
import urllib.error
import urllib.request
from typing import Literal

import anthropic
import httpx2
import openai
import pydantic
import pytest

from fakellm import Fault, LLMServer, Reply, ToolCallSpec, sample_output

USER = [{"role": "user", "content": "What is the capital of France?"}]
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "weather",
        "strict": True,  # the SDK stream helper only auto-parses strict tools
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
ANTHROPIC_WEATHER_TOOL = {
    "name": "weather",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


@pytest.fixture
def srv():
    with LLMServer(chunk_size=3) as server:
        yield server


_clients: list = []
"""The SDK clients a test made with ``oai``/``ant``: closed when it ends, so no socket is left for the garbage
collector to report (as an unraisable ResourceWarning, an error) in whichever later test it happens to run."""


@pytest.fixture(autouse=True)
def _close_clients():
    yield
    while _clients:
        _clients.pop().close()


def oai(srv, **kw):
    _clients.append(openai.OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0, **kw))
    return _clients[-1]


def ant(srv, **kw):
    _clients.append(anthropic.Anthropic(base_url=srv.anthropic_base_url, api_key="sk-ant-test", max_retries=0, **kw))
    return _clients[-1]


def post(srv, path, body):
    """Raw POST, to send what the SDKs refuse to build. Returns (status, json)."""
    req = urllib.request.Request(
        srv.base_url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


# --------------------------------------------------------------------------- plain replies


def test_openai_plain_reply(srv):
    srv.enqueue(Reply(text="Paris.", cached_tokens=2))
    raw = oai(srv).chat.completions.with_raw_response.create(model="gpt-test", messages=USER)
    assert raw.headers["x-request-id"].startswith("req_")
    resp = raw.parse()
    assert resp.choices[0].message.content == "Paris."
    assert resp.choices[0].finish_reason == "stop"
    assert resp.model == "gpt-test"
    prompt = len(USER[0]["content"]) // 4 + 1
    assert resp.usage.prompt_tokens == prompt
    assert resp.usage.completion_tokens == len("Paris.") // 4 + 1
    assert resp.usage.total_tokens == prompt + resp.usage.completion_tokens
    assert resp.usage.prompt_tokens_details.cached_tokens == 2
    (req,) = srv.requests
    assert req.protocol == "openai" and req.path == "/v1/chat/completions"
    assert req.body["messages"] == USER and req.headers["authorization"] == "Bearer sk-test"
    assert req.status == 200 and srv.pending == 0


def test_openai_logprobs_parse_as_the_sdks_choice_logprobs(srv):
    srv.enqueue(Reply(text="yes", logprobs=[{"yes": -0.1, "no": -2.5, "maybe": -4.0}]), Reply(text="yes"))
    with oai(srv) as client:
        resp = client.chat.completions.create(
            model="gpt-test", messages=USER, logprobs=True, top_logprobs=2, max_tokens=1
        )
        unasked = client.chat.completions.create(model="gpt-test", messages=USER)
    (first,) = resp.choices[0].logprobs.content
    assert (first.token, first.logprob, first.bytes) == ("yes", -0.1, [121, 101, 115])
    assert [(top.token, top.logprob) for top in first.top_logprobs] == [("yes", -0.1), ("no", -2.5)]
    assert unasked.choices[0].logprobs is None


def test_strict_openai_rejects_top_logprobs_without_logprobs(srv):
    srv.strict = True
    status, body = post(srv, "/v1/chat/completions", {"model": "m", "messages": USER, "top_logprobs": 3})
    assert status == 400 and "'logprobs' must be set to true" in body["error"]["message"]
    status, body = post(
        srv, "/v1/chat/completions", {"model": "m", "messages": USER, "logprobs": True, "top_logprobs": 21}
    )
    assert status == 400 and "between 0 and 20" in body["error"]["message"]


def test_anthropic_plain_reply(srv):
    srv.enqueue(Reply(text="Paris.", usage={"input_tokens": 50, "output_tokens": 7}, cached_tokens=30))
    raw = ant(srv).messages.with_raw_response.create(model="claude-test", max_tokens=100, messages=USER)
    assert raw.headers["request-id"].startswith("req_")
    msg = raw.parse()
    assert msg.content[0].type == "text" and msg.content[0].text == "Paris."
    assert msg.stop_reason == "end_turn" and msg.model == "claude-test"
    # Anthropic's input_tokens excludes cache reads; OpenAI's prompt_tokens would be 50.
    assert (msg.usage.input_tokens, msg.usage.cache_read_input_tokens, msg.usage.output_tokens) == (20, 30, 7)
    assert msg.usage.cache_creation_input_tokens == 0
    (req,) = srv.requests
    assert req.protocol == "anthropic" and req.path == "/v1/messages" and "anthropic-version" in req.headers
    # this SDK version sends the key as a bearer token; older ones used x-api-key
    assert "sk-ant-test" in (req.headers.get("x-api-key", "") + req.headers.get("authorization", ""))


def test_default_echo_and_hook(srv):
    assert (
        oai(srv).chat.completions.create(model="m", messages=USER).choices[0].message.content
        == "echo: What is the capital of France?"
    )
    srv.default = lambda req: Fault(status=503) if req.protocol == "anthropic" else None
    with pytest.raises(anthropic.ServiceUnavailableError):
        ant(srv).messages.create(model="m", max_tokens=10, messages=USER)
    assert oai(srv).chat.completions.create(model="m", messages=USER).choices[0].message.content.startswith("echo")


def test_max_tokens_stop_reason_translation(srv):
    srv.enqueue(Reply(text="trunc", stop_reason="max_tokens"), Reply(text="trunc", stop_reason="max_tokens"))
    assert oai(srv).chat.completions.create(model="m", messages=USER).choices[0].finish_reason == "length"
    assert ant(srv).messages.create(model="m", max_tokens=1, messages=USER).stop_reason == "max_tokens"


# --------------------------------------------------------------------------- streaming


def test_openai_streaming_chunks_and_usage(srv):
    srv.enqueue(Reply(text="The capital is Paris.", cached_tokens=1))

    async def run():
        async with openai.AsyncOpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0) as client:
            stream = await client.chat.completions.create(
                model="gpt-test", messages=USER, stream=True, stream_options={"include_usage": True}
            )
            return [chunk async for chunk in stream]

    chunks = asyncio.run(run())
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(pieces) >= 5 and "".join(pieces) == "The capital is Paris."
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == len("The capital is Paris.") // 4 + 1
    assert chunks[-1].usage.prompt_tokens_details.cached_tokens == 1
    assert all(c.usage is None for c in chunks[:-1]) and all(c.model == "gpt-test" for c in chunks)


def test_anthropic_streaming_text(srv):
    srv.enqueue(Reply(text="The capital is Paris."))
    with ant(srv).messages.stream(model="claude-test", max_tokens=100, messages=USER) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert len(pieces) >= 5 and "".join(pieces) == "The capital is Paris."
    assert final.content[0].text == "The capital is Paris." and final.stop_reason == "end_turn"
    assert final.usage.output_tokens == len("The capital is Paris.") // 4 + 1
    assert final.usage.input_tokens == len(USER[0]["content"]) // 4 + 1


def test_openai_tool_call_streaming_helper(srv):
    srv.enqueue(
        Reply(
            tool_calls=[
                ToolCallSpec("weather", {"city": "New York City"}),
                ToolCallSpec("weather", {"city": "Paris"}, id="call_fixed"),
            ]
        )
    )
    with oai(srv).chat.completions.stream(model="m", messages=USER, tools=[WEATHER_TOOL]) as stream:
        deltas = [e for e in stream if e.type == "tool_calls.function.arguments.delta"]
        final = stream.get_final_completion()
    assert len(deltas) > 4  # arguments really arrived as fragments
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    calls = choice.message.tool_calls
    assert [c.function.name for c in calls] == ["weather", "weather"]
    assert calls[0].id.startswith("call_") and calls[1].id == "call_fixed"
    assert json.loads(calls[0].function.arguments) == {"city": "New York City"}
    assert calls[1].function.parsed_arguments == {"city": "Paris"}


def test_anthropic_tool_call_streaming_helper(srv):
    srv.enqueue(Reply(text="Checking.", tool_calls=[ToolCallSpec("weather", {"city": "New York City"})]))
    with ant(srv).messages.stream(model="m", max_tokens=100, messages=USER, tools=[ANTHROPIC_WEATHER_TOOL]) as s:
        json_deltas = [e for e in s if e.type == "content_block_delta" and e.delta.type == "input_json_delta"]
        final = s.get_final_message()
    assert len(json_deltas) > 3
    assert final.stop_reason == "tool_use"
    text, tool = final.content
    assert text.text == "Checking."
    assert tool.type == "tool_use" and tool.name == "weather" and tool.id.startswith("toolu_")
    assert tool.input == {"city": "New York City"}


# --------------------------------------------------------------------------- faults


def test_rate_limit_with_retry_after(srv):
    srv.enqueue(Fault(status=429, retry_after=1), Fault(status=429, retry_after=2.5))
    with pytest.raises(openai.RateLimitError) as oerr:
        oai(srv).chat.completions.create(model="m", messages=USER)
    assert oerr.value.response.headers["retry-after"] == "1"
    assert oerr.value.code == "rate_limit_exceeded" and oerr.value.request_id.startswith("req_")
    with pytest.raises(anthropic.RateLimitError) as aerr:
        ant(srv).messages.create(model="m", max_tokens=10, messages=USER)
    assert aerr.value.response.headers["retry-after"] == "2.5"
    assert aerr.value.type == "rate_limit_error" and aerr.value.request_id.startswith("req_")


def test_a_burst_caps_what_a_key_may_send_at_once_below_its_rate(srv):
    srv.rpm, srv.burst, srv.rate_window = 60, 3, 600.0  # refills 0.1 a second: nothing comes back during the test
    client = oai(srv)
    answers = [client.chat.completions.with_raw_response.create(model="m", messages=USER) for _ in range(3)]
    assert [a.headers["x-ratelimit-remaining-requests"] for a in answers] == ["2", "1", "0"]
    assert answers[0].headers["x-ratelimit-limit-requests"] == "60"  # the limit is the rate; the burst is not stated
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model="m", messages=USER)
    assert srv.rate_limited == 1


def test_sdk_retries_after_500(srv):
    srv.enqueue(Fault(status=500), Reply(text="ok"))
    client = openai.OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=1)
    assert client.chat.completions.create(model="m", messages=USER).choices[0].message.content == "ok"
    assert [r.status for r in srv.requests] == [500, 200]


def test_drop_mid_stream_raises(srv):
    srv.enqueue(Reply(text="a long streamed answer", drop_after_chunks=3))
    got = []
    with pytest.raises(openai.APIConnectionError):
        for chunk in oai(srv).chat.completions.create(model="m", messages=USER, stream=True):
            got.append(chunk)
    assert len(got) == 3
    srv.enqueue(Reply(text="a long streamed answer", drop_after_chunks=3))
    # The anthropic SDK does not wrap transport errors raised while iterating a stream.
    with pytest.raises((anthropic.APIConnectionError, httpx2.HTTPError)):
        for _ in ant(srv).messages.create(model="m", max_tokens=10, messages=USER, stream=True):
            pass


def test_anthropic_error_event_mid_stream(srv):
    srv.enqueue(Reply(text="a long streamed answer", anthropic_error_after_chunks=2))
    events = []
    with pytest.raises(anthropic.APIStatusError) as err:
        for event in ant(srv).messages.create(model="m", max_tokens=10, messages=USER, stream=True):
            events.append(event.type)
    assert events == ["message_start", "content_block_start"]
    assert err.value.type == "overloaded_error"
    # the connection is still healthy afterwards
    assert ant(srv).messages.create(model="m", max_tokens=10, messages=USER).content[0].text.startswith("echo")


def test_hang_times_out_and_close_ends_a_hanging_request():
    srv = LLMServer()
    srv.enqueue(Fault(hang=True))
    with pytest.raises(openai.APITimeoutError):
        oai(srv, timeout=0.3).chat.completions.create(model="m", messages=USER)
    deadline = time.monotonic() + 60  # only guards against a hang
    while srv.in_flight and time.monotonic() < deadline:  # the handler notices the client left
        time.sleep(0.01)
    assert srv.in_flight == 0
    srv.enqueue(Fault(hang=True))
    errors = []

    def call():
        try:
            oai(srv, timeout=30).chat.completions.create(model="m", messages=USER)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    assert srv.wait_for_requests(2)
    assert srv.in_flight == 1
    srv.close()
    thread.join(60)  # only guards against a hang
    assert not thread.is_alive()
    # close() cut the connection: the client saw it drop, long before its own 30 s timeout would have fired.
    assert len(errors) == 1 and isinstance(errors[0], openai.APIConnectionError)
    assert not isinstance(errors[0], openai.APITimeoutError)
    assert srv.in_flight == 0  # close() waited for the woken handler


# --------------------------------------------------------------------------- strict mode


def test_strict_openai_rejects_orphan_tool_result(srv):
    srv.strict = True
    srv.enqueue(Reply(text="not consumed"))
    bad = USER + [{"role": "tool", "tool_call_id": "call_nope", "content": "22C"}]
    with pytest.raises(openai.BadRequestError) as err:
        oai(srv).chat.completions.create(model="m", messages=bad)
    assert "tool" in err.value.message and err.value.body["type"] == "invalid_request_error"
    assert srv.pending == 1  # rejected requests do not consume the script
    unanswered = USER + [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}],
        },
        {"role": "user", "content": "well?"},
    ]
    with pytest.raises(openai.BadRequestError, match="call_1"):
        oai(srv).chat.completions.create(model="m", messages=unanswered)
    with pytest.raises(openai.BadRequestError, match="too short"):
        oai(srv).chat.completions.create(model="m", messages=[{"role": "user", "content": ""}])


def test_strict_anthropic_rejections(srv):
    srv.strict = True
    client = ant(srv)
    cases = {
        "unexpected `tool_use_id`": USER
        + [
            {"role": "assistant", "content": "hi"},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_nope", "content": "22C"}]},
        ],
        "without `tool_result`": USER
        + [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}]},
            {"role": "user", "content": "well?"},
        ],
        "alternate": USER + USER,
        "first message": [{"role": "assistant", "content": "hi"}],
        "non-empty": [{"role": "user", "content": ""}],
        "Unexpected role": [{"role": "system", "content": "be nice"}] + USER,
    }
    for needle, messages in cases.items():
        with pytest.raises(anthropic.BadRequestError) as err:
            client.messages.create(model="m", max_tokens=10, messages=messages)
        assert needle in err.value.message and err.value.type == "invalid_request_error"
    status, body = post(srv, "/v1/messages", {"model": "m", "messages": USER})
    assert status == 400 and body["type"] == "error" and body["error"]["message"] == "max_tokens: Field required"
    status, body = post(srv, "/v1/chat/completions", {"messages": USER})
    assert status == 400 and "model" in body["error"]["message"]


def test_strict_accepts_valid_tool_round_trips(srv):
    srv.strict = True
    # An agent-style hook: call a tool unless the last message is a tool result.
    srv.default = lambda req: (
        Reply(text="It is 22C.")
        if req.last_message_is_tool_result
        else Reply(tool_calls=[ToolCallSpec("weather", {"city": "NYC"})])
    )
    client = oai(srv)
    first = client.chat.completions.create(model="m", messages=USER, tools=[WEATHER_TOOL]).choices[0].message
    call = first.tool_calls[0]
    messages = USER + [first.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": call.id, "content": "22C"}]
    assert client.chat.completions.create(model="m", messages=messages).choices[0].message.content == "It is 22C."

    aclient = ant(srv)
    msg = aclient.messages.create(model="m", max_tokens=50, messages=USER, tools=[ANTHROPIC_WEATHER_TOOL])
    tool_use = msg.content[-1]
    messages = USER + [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in msg.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": "22C"}]},
    ]
    assert aclient.messages.create(model="m", max_tokens=50, messages=messages).content[0].text == "It is 22C."
    assert [r.status for r in srv.requests] == [200, 200, 200, 200]


# --------------------------------------------------------------------------- concurrency and bookkeeping


def test_max_in_flight_under_concurrency():
    with LLMServer() as srv:
        # Every answer waits until all 8 requests arrived: "8 at once" is then an ordering, not a race of the
        # arrivals against a latency (60 s only bounds the failure).
        srv.default = lambda request: None if srv.wait_for_requests(8, 60) else Reply(text="not all 8 arrived")

        async def run():
            # Closed inside the loop: a client left to the garbage collector schedules its close on whatever
            # loop runs then, possibly one about to close (asyncio then reports a dropped task).
            async with openai.AsyncOpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0) as client:
                return await asyncio.gather(
                    *(
                        client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"q{i}"}])
                        for i in range(8)
                    )
                )

        results = asyncio.run(run())
        assert sorted(r.choices[0].message.content for r in results) == [f"echo: q{i}" for i in range(8)]
        assert srv.max_in_flight == 8 and srv.in_flight == 0


def test_keep_alive_connection_reuse_and_reset(srv):
    client = oai(srv)
    for _ in range(5):
        client.chat.completions.create(model="m", messages=USER)
    assert len({r.client for r in srv.requests}) == 1  # one pooled connection served all requests
    srv.enqueue(Reply(text="left over"))
    srv.reset()
    assert srv.requests == [] and srv.pending == 0 and srv.request_count == 0


def test_chunk_delay_streams_incrementally():
    with LLMServer(chunk_size=2, chunk_delay=0.05) as srv:
        srv.enqueue(Reply(text="abcdefgh"))
        arrivals = []
        for _ in oai(srv).chat.completions.create(model="m", messages=USER, stream=True):
            arrivals.append(time.monotonic())
        assert arrivals[-1] - arrivals[0] >= 0.15


# --------------------------------------------------------------------------- structured output


class City(pydantic.BaseModel):
    name: str
    population: int


CITY = {"name": "Paris", "population": 2100000}
CITY_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["name", "population"],
    "additionalProperties": False,
}
JSON_USER = [{"role": "user", "content": "Describe Paris as JSON."}]


def json_schema_format(schema, name="City", strict=True):
    return {"type": "json_schema", "json_schema": {"name": name, "strict": strict, "schema": schema}}


def without(schema, *path):
    """A deep copy of ``schema`` with the key at ``path`` removed."""
    schema = json.loads(json.dumps(schema))
    node = schema
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return schema


@pytest.mark.parametrize(
    ("schema", "needle"),
    [
        (without(CITY_SCHEMA, "additionalProperties"), "In context=(), 'additionalProperties' is required"),
        ({**CITY_SCHEMA, "required": ["name"]}, "Missing 'population'"),
        (
            {**CITY_SCHEMA, "properties": {**CITY_SCHEMA["properties"], "name": {"type": "string", "minLength": 1}}},
            "In context=('properties', 'name'), 'minLength' is not permitted.",
        ),
        (
            {
                **CITY_SCHEMA,
                "properties": {**CITY_SCHEMA["properties"], "population": {"type": "integer", "default": 0}},
            },
            "'default' is not permitted",
        ),
        (
            {
                **CITY_SCHEMA,
                "properties": {"name": {"$ref": "#/$defs/N"}, "population": {"type": "integer"}},
                "$defs": {"N": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}},
            },
            "In context=('$defs', 'N'), 'additionalProperties' is required",
        ),
        ({**CITY_SCHEMA, "oneOf": [{"required": ["name"]}]}, "'oneOf' is not permitted"),
        ({"type": "array", "items": {"type": "string"}}, "schema must be a JSON Schema of 'type: \"object\"'"),
        (
            {**CITY_SCHEMA, "properties": {**CITY_SCHEMA["properties"], "name": {"type": "string", "format": "x"}}},
            "'x' is not a valid format",
        ),
    ],
)
def test_strict_openai_rejects_schemas_that_are_not_strict_valid(srv, schema, needle):
    srv.strict = True
    srv.enqueue(Reply(output=CITY))
    with pytest.raises(openai.BadRequestError) as err:
        oai(srv).chat.completions.create(model="m", messages=USER, response_format=json_schema_format(schema))
    assert needle in err.value.message and "Invalid" in err.value.message
    assert err.value.param == "response_format" and srv.pending == 1


def test_strict_openai_accepts_a_strict_valid_schema_and_a_non_strict_one(srv):
    srv.strict = True
    srv.enqueue(Reply(output=CITY), Reply(output=CITY))
    client = oai(srv)
    nested = {
        **CITY_SCHEMA,
        "properties": {"name": {"anyOf": [{"$ref": "#/$defs/N"}, {"type": "null"}]}, "population": {"type": "integer"}},
        "$defs": {
            "N": {
                "type": "object",
                "properties": {"x": {"type": "string", "pattern": "^a", "format": "email"}},
                "required": ["x"],
                "additionalProperties": False,
            }
        },
    }
    reply = client.chat.completions.create(model="m", messages=USER, response_format=json_schema_format(nested))
    assert json.loads(reply.choices[0].message.content) == CITY
    loose = without(CITY_SCHEMA, "additionalProperties")
    client.chat.completions.create(model="m", messages=USER, response_format=json_schema_format(loose, strict=False))
    assert [r.status for r in srv.requests] == [200, 200]


def test_strict_openai_checks_the_schema_name_and_json_object_requests(srv):
    srv.strict = True
    client = oai(srv)
    with pytest.raises(openai.BadRequestError, match="does not match pattern"):
        client.chat.completions.create(
            model="m", messages=USER, response_format=json_schema_format(CITY_SCHEMA, name="my city!")
        )
    with pytest.raises(openai.BadRequestError, match="must contain the word 'json'"):
        client.chat.completions.create(model="m", messages=USER, response_format={"type": "json_object"})
    with pytest.raises(openai.BadRequestError, match="Supported values are"):
        client.chat.completions.create(model="m", messages=USER, response_format={"type": "yaml"})
    srv.enqueue(Reply(output=CITY))
    reply = client.chat.completions.create(model="m", messages=JSON_USER, response_format={"type": "json_object"})
    assert json.loads(reply.choices[0].message.content) == CITY


def test_openai_sdk_parse_helper_reads_a_structured_reply(srv):
    srv.strict = True  # the SDK's own strict schema must pass the server's check
    srv.enqueue(Reply(output=CITY))
    message = oai(srv).chat.completions.parse(model="m", messages=USER, response_format=City).choices[0].message
    assert message.parsed == City(**CITY) and message.refusal is None
    assert srv.requests[0].output_schema["properties"]["population"] == {"title": "Population", "type": "integer"}


def test_gateway_without_json_schema_rejects_it_and_accepts_json_object():
    with LLMServer(json_schema_supported=False) as gateway:
        gateway.enqueue(Reply(output=CITY))
        client = oai(gateway)
        with pytest.raises(openai.BadRequestError, match="'json_schema' is not supported") as err:
            client.chat.completions.create(model="m", messages=USER, response_format=json_schema_format(CITY_SCHEMA))
        assert err.value.param == "response_format" and gateway.pending == 1
        reply = client.chat.completions.create(model="m", messages=JSON_USER, response_format={"type": "json_object"})
        assert json.loads(reply.choices[0].message.content) == CITY


@pytest.mark.parametrize(
    ("output", "text"),
    [
        ("{'name': 'Paris',", "{'name': 'Paris',"),  # invalid JSON, verbatim
        ({"name": "Paris", "population": "many"}, '{"name":"Paris","population":"many"}'),  # schema-violating
        ("null", "null"),
    ],
)
def test_openai_returns_scripted_output_verbatim_when_streaming_or_not(srv, output, text):
    srv.enqueue(Reply(output=output), Reply(output=output))
    client = oai(srv)
    fmt = json_schema_format(CITY_SCHEMA)
    assert (
        client.chat.completions.create(model="m", messages=USER, response_format=fmt).choices[0].message.content == text
    )
    chunks = client.chat.completions.create(model="m", messages=USER, response_format=fmt, stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text


def test_openai_refusal_non_streaming(srv):
    srv.enqueue(Reply(refusal="I can't help with that."))
    message = oai(srv).chat.completions.parse(model="m", messages=USER, response_format=City).choices[0].message
    assert message.refusal == "I can't help with that." and message.content is None and message.parsed is None


def test_openai_refusal_streams_as_refusal_deltas(srv):
    srv.enqueue(Reply(refusal="I can't help with that."))
    with oai(srv).chat.completions.stream(model="m", messages=USER, response_format=City) as stream:
        deltas = [e.delta for e in stream if e.type == "refusal.delta"]
        final = stream.get_final_completion()
    assert len(deltas) > 3 and "".join(deltas) == "I can't help with that."
    message = final.choices[0].message
    assert message.refusal == "I can't help with that." and message.content is None and message.parsed is None


def test_openai_structured_reply_streams_through_the_sdk_helper(srv):
    srv.enqueue(Reply(output=CITY))
    with oai(srv).chat.completions.stream(model="m", messages=USER, response_format=City) as stream:
        pieces = [e.delta for e in stream if e.type == "content.delta"]
        final = stream.get_final_completion()
    assert len(pieces) > 5 and final.choices[0].message.parsed == City(**CITY)


# ---- Anthropic

CITY_TOOL = {"name": "city", "description": "Report a city.", "input_schema": CITY_SCHEMA}


def test_anthropic_forced_tool_returns_the_output_as_that_tool_input(srv):
    srv.strict = True
    srv.enqueue(Reply(output=CITY), Reply(output=CITY))
    client = ant(srv)
    forced = {"type": "tool", "name": "city"}
    tools = [ANTHROPIC_WEATHER_TOOL, CITY_TOOL]
    message = client.messages.create(model="m", max_tokens=50, messages=USER, tools=tools, tool_choice=forced)
    (block,) = message.content
    assert (block.type, block.name, block.input, message.stop_reason) == ("tool_use", "city", CITY, "tool_use")
    with client.messages.stream(model="m", max_tokens=50, messages=USER, tools=tools, tool_choice=forced) as stream:
        final = stream.get_final_message()
    assert final.content[0].input == CITY
    assert srv.requests[0].output_schema == CITY_SCHEMA


def test_anthropic_forced_tool_streams_invalid_json_verbatim(srv):
    srv.enqueue(Reply(output='{"name": "Par'))
    forced = {"type": "tool", "name": "city"}
    with ant(srv).messages.stream(model="m", max_tokens=50, messages=USER, tools=[CITY_TOOL], tool_choice=forced) as s:
        partial = "".join(e.delta.partial_json for e in s if e.type == "content_block_delta")
    assert partial == '{"name": "Par'


@pytest.mark.parametrize(
    ("tool_choice", "tools", "needle"),
    [
        ({"type": "tool", "name": "nope"}, [CITY_TOOL], "tool 'nope' is not one of the provided tools"),
        ({"type": "tool"}, [CITY_TOOL], "tool_choice.tool.name: Field required"),
        ({"type": "function", "name": "city"}, [CITY_TOOL], "tool_choice.type"),
        ({"type": "tool", "name": "city"}, None, "only be specified while providing tools"),
    ],
)
def test_strict_anthropic_checks_the_tool_choice_shape(srv, tool_choice, tools, needle):
    srv.strict = True
    body = {"model": "m", "max_tokens": 10, "messages": USER, "tool_choice": tool_choice}
    if tools:
        body["tools"] = tools
    status, answer = post(srv, "/v1/messages", body)
    assert status == 400 and needle in answer["error"]["message"]


def test_anthropic_output_config_format_gets_the_output_as_text(srv):
    srv.strict = True
    srv.enqueue(Reply(output=CITY), Reply(output=CITY))
    client = ant(srv)
    config = {"format": {"type": "json_schema", "schema": CITY_SCHEMA}}
    message = client.messages.create(model="m", max_tokens=50, messages=USER, output_config=config)
    assert json.loads(message.content[0].text) == CITY and message.stop_reason == "end_turn"
    with client.messages.stream(model="m", max_tokens=50, messages=USER, output_config=config) as stream:
        assert json.loads("".join(stream.text_stream)) == CITY
    assert srv.requests[0].output_schema == CITY_SCHEMA


def test_anthropic_sdk_parse_helper_passes_the_strict_check(srv):
    srv.strict = True
    srv.enqueue(Reply(output=CITY))
    parsed = ant(srv).messages.parse(model="m", max_tokens=50, messages=USER, output_format=City)
    assert parsed.parsed_output == City(**CITY)


@pytest.mark.parametrize(
    ("fmt", "needle"),
    [
        ({"type": "json_schema", "schema": without(CITY_SCHEMA, "additionalProperties")}, "must be explicitly set"),
        (
            {
                "type": "json_schema",
                "schema": {**CITY_SCHEMA, "properties": {"name": {"type": "string", "maxLength": 3}}},
            },
            "output_config.format.schema.properties.name: 'maxLength' is not supported",
        ),
        ({"type": "json_object"}, "output_config.format.type"),
        ({"type": "json_schema"}, "output_config.format.schema: Field required"),
    ],
)
def test_strict_anthropic_rejects_unsupported_output_formats(srv, fmt, needle):
    srv.strict = True
    body = {"model": "m", "max_tokens": 10, "messages": USER, "output_config": {"format": fmt}}
    status, answer = post(srv, "/v1/messages", body)
    assert status == 400 and needle in answer["error"]["message"]
    status, answer = post(srv, "/v1/messages", {**body, "output_format": fmt})
    assert status == 400 and "Both output_format and output_config.format" in answer["error"]["message"]


def test_anthropic_refusal_streaming_or_not(srv):
    srv.enqueue(Reply(refusal="I won't do that."), Reply(refusal="I won't do that."))
    client = ant(srv)
    message = client.messages.create(model="m", max_tokens=50, messages=USER)
    assert message.stop_reason == "refusal" and message.content[0].text == "I won't do that."
    assert message.stop_details.type == "refusal" and message.stop_details.explanation == "I won't do that."
    with client.messages.stream(model="m", max_tokens=50, messages=USER) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "refusal" and final.content[0].text == "I won't do that."


class Trip(pydantic.BaseModel):
    city: City
    mood: Literal["good", "bad"]
    day: datetime.date
    stops: list[str] = pydantic.Field(min_length=2)
    stars: int = pydantic.Field(ge=3, le=5)
    note: str | None = None


def test_sampled_structured_replies_satisfy_the_requested_schema(srv):
    srv.strict = True
    srv.default = lambda req: Reply(output=sample_output(req.output_schema)) if req.output_schema else None
    trip = oai(srv).chat.completions.parse(model="m", messages=USER, response_format=Trip).choices[0].message.parsed
    assert (trip.mood, trip.stars, trip.stops, trip.note) == ("good", 3, ["x", "x"], "x")
    config = {"format": {"type": "json_schema", "schema": CITY_SCHEMA}}
    text = ant(srv).messages.create(model="m", max_tokens=50, messages=USER, output_config=config).content[0].text
    assert City.model_validate_json(text) == City(name="x", population=0)
    assert oai(srv).chat.completions.create(model="m", messages=USER).choices[0].message.content.startswith("echo")
