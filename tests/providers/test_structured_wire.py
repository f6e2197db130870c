"""Structured output through the real SDKs: each provider's own mechanism against the strict fake server.

OpenAI and gateways send a strict ``json_schema`` response format, Anthropic ``output_config.format``
(or a forced tool call for free-form keys); the answer's JSON comes back as ``completion.text``,
unvalidated (validation is the agent's), and a refusal as ``completion.refusal``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from aiforge.core.output import OutputSpec
from aiforge.core.types import BadRequestError, CallParams, Completion, Message
from aiforge.providers.base import Provider
from fakellm import Fault, LLMServer, Reply, ToolCallSpec, sample_output
from tests.providers.conftest import ANTHROPIC, GATEWAY, HELLO, OPENAI, WEATHER_TOOL, WireProtocol


class Address(BaseModel):
    city: str
    postcode: str | None = None


class Person(BaseModel):
    name: str
    age: int | None = None
    mood: Literal["happy", "sad"]
    tags: list[str] = []
    address: Address
    previous: list[Address] = []


OUTPUT_TYPES = [Person, list[str], bool, Literal["pos", "neg", "neutral"]]
PERSON = {"name": "Ada", "age": 36, "mood": "happy", "tags": ["math"], "address": {"city": "London"}}


@pytest.fixture(params=[OPENAI, ANTHROPIC, GATEWAY], ids=lambda p: p.name)
def protocol(request: pytest.FixtureRequest) -> WireProtocol:
    return request.param


@pytest.fixture
def strict_server() -> Iterator[LLMServer]:
    """A strict server answering every structured request with a sample of the schema it was sent."""

    def sampled(request: Any) -> Reply | None:
        return Reply(output=sample_output(request.output_schema)) if request.output_schema else None

    with LLMServer(strict=True, default=sampled) as server:
        yield server


def params_for(protocol: WireProtocol, output: Any) -> CallParams:
    return CallParams(model=protocol.model, output=OutputSpec.of(output))


async def streamed(
    provider: Provider, params: CallParams, messages: list[Message] = HELLO, tools: Any = None
) -> tuple[list[str], Completion]:
    deltas: list[str] = []
    async for event in provider.stream(messages, tools, params):
        if isinstance(event, Completion):
            return deltas, event
        deltas.append(event)
    raise AssertionError("the stream ended without a Completion")


def assert_native_mechanism(protocol: WireProtocol, body: dict[str, Any], spec: OutputSpec) -> None:
    if protocol is ANTHROPIC:
        assert body["output_config"]["format"]["type"] == "json_schema"
        assert "tool_choice" not in body
    else:
        json_schema = body["response_format"]["json_schema"]
        assert body["response_format"]["type"] == "json_schema"
        assert (json_schema["name"], json_schema["strict"]) == (spec.name, True)
        assert json_schema["schema"] == spec.strict_schema()


# --- the request and the answer ------------------------------------------------------------------


@pytest.mark.parametrize("output", OUTPUT_TYPES, ids=["model", "list", "bool", "literal"])
async def test_structured_request_passes_strict_checks_and_its_answer_validates(
    strict_server: LLMServer, protocol: WireProtocol, make_provider: Any, output: Any
) -> None:
    provider, params = make_provider(protocol.base_url(strict_server)), params_for(protocol, output)
    completion = await provider.complete(HELLO, None, params)
    deltas, final = await streamed(provider, params)
    assert [r.status for r in strict_server.requests] == [200, 200]
    for request in strict_server.requests:
        assert_native_mechanism(protocol, request.body, params.output)
    assert params.output.validate(completion.text) == params.output.validate(final.text)
    assert len(deltas) > 1 and "".join(deltas) == final.text
    assert completion.refusal is None and final.refusal is None and not final.tool_calls


async def test_structured_answer_is_the_json_text_of_the_reply(
    llm_server: LLMServer, protocol: WireProtocol, make_provider: Any
) -> None:
    llm_server.enqueue(Reply(output=PERSON))
    completion = await make_provider(protocol.base_url(llm_server)).complete(HELLO, None, params_for(protocol, Person))
    assert json.loads(completion.text) == PERSON
    assert OutputSpec.of(Person).validate(completion.text) == Person(**PERSON)


@pytest.mark.parametrize("text", ["{'name': 'Ada',", '{"name": "Ada", "mood": "bored"}'], ids=["invalid", "violating"])
@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
async def test_unusable_json_comes_back_unchanged(
    llm_server: LLMServer, protocol: WireProtocol, make_provider: Any, text: str, streaming: bool
) -> None:
    llm_server.enqueue(Reply(output=text))
    provider, params = make_provider(protocol.base_url(llm_server)), params_for(protocol, Person)
    completion = (await streamed(provider, params))[1] if streaming else await provider.complete(HELLO, None, params)
    assert completion.text == text and completion.refusal is None


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
async def test_a_refusal_is_reported_as_a_refusal(
    llm_server: LLMServer, protocol: WireProtocol, make_provider: Any, streaming: bool
) -> None:
    llm_server.enqueue(Reply(refusal="I can't help with that."))
    provider, params = make_provider(protocol.base_url(llm_server)), params_for(protocol, Person)
    if streaming:
        deltas, completion = await streamed(provider, params)
    else:
        deltas, completion = [], await provider.complete(HELLO, None, params)
    assert completion.refusal == "I can't help with that."
    if protocol is not ANTHROPIC:  # Chat Completions sends refusals apart from content
        assert completion.text == "" and deltas == []


async def test_tools_and_output_go_in_one_request_tools_first(
    strict_server: LLMServer, protocol: WireProtocol, make_provider: Any
) -> None:
    strict_server.enqueue(Reply(tool_calls=[ToolCallSpec("get_weather", {"city": "Paris"})]))
    provider, params = make_provider(protocol.base_url(strict_server)), params_for(protocol, Person)
    first = await provider.complete(HELLO, [WEATHER_TOOL], params)
    history: list[Message] = [
        *HELLO,
        {"role": "assistant", "content": "", "tool_calls": first.tool_calls},
        {"role": "tool", "content": "sunny", "tool_call_id": first.tool_calls[0]["id"]},
    ]
    deltas, final = await streamed(provider, params, history, [WEATHER_TOOL])
    assert [call["name"] for call in first.tool_calls] == ["get_weather"] and first.text == ""
    assert [r.status for r in strict_server.requests] == [200, 200]
    for request in strict_server.requests:
        assert request.tool_names == ["get_weather"]
        assert_native_mechanism(protocol, request.body, params.output)
    assert isinstance(params.output.validate(final.text), Person) and "".join(deltas) == final.text


# --- free-form keys: what strict schemas cannot express ------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
async def test_free_form_keys_still_get_a_json_answer(
    strict_server: LLMServer, protocol: WireProtocol, make_provider: Any, streaming: bool
) -> None:
    """OpenAI: JSON mode with the schema as instructions; Anthropic: a forced tool whose input is the answer."""
    strict_server.enqueue(Reply(output={"value": {"apples": 3}}))
    provider, params = make_provider(protocol.base_url(strict_server)), params_for(protocol, dict[str, int])
    messages: list[Message] = [{"role": "system", "content": "Count fruit."}, *HELLO]
    if streaming:
        deltas, completion = await streamed(provider, params, messages)
        assert "".join(deltas) == completion.text
    else:
        completion = await provider.complete(messages, None, params)
    assert params.output.validate(completion.text) == {"apples": 3} and not completion.tool_calls
    body = strict_server.requests[-1].body
    if protocol is ANTHROPIC:
        assert body["tool_choice"] == {"type": "tool", "name": params.output.name}
    else:
        assert body["response_format"] == {"type": "json_object"}
        assert body["messages"][0]["content"] == "Count fruit.\n\n" + params.output.instructions()


@pytest.mark.parametrize("protocol", [ANTHROPIC], ids=["anthropic"])
async def test_free_form_keys_with_tools_let_anthropic_call_them_first(
    strict_server: LLMServer, make_provider: Any
) -> None:
    name = OutputSpec.of(dict[str, int]).name
    strict_server.enqueue(
        Reply(tool_calls=[ToolCallSpec("get_weather", {"city": "Paris"})]),
        Reply(tool_calls=[ToolCallSpec(name, {"value": {"apples": 3}})]),
    )
    provider, params = make_provider(strict_server.anthropic_base_url), params_for(ANTHROPIC, dict[str, int])
    first = await provider.complete(HELLO, [WEATHER_TOOL], params)
    history: list[Message] = [
        *HELLO,
        {"role": "assistant", "content": "", "tool_calls": first.tool_calls},
        {"role": "tool", "content": "sunny", "tool_call_id": first.tool_calls[0]["id"]},
    ]
    final = await provider.complete(history, [WEATHER_TOOL], params)
    assert [call["name"] for call in first.tool_calls] == ["get_weather"]
    assert params.output.validate(final.text) == {"apples": 3} and not final.tool_calls
    assert strict_server.requests[-1].body["tool_choice"] == {"type": "any"}
    assert strict_server.requests[-1].tool_names == ["get_weather", name]


# --- gateways without json_schema -----------------------------------------------------------------


@pytest.fixture
def gateway_without_json_schema() -> Iterator[LLMServer]:
    with LLMServer(strict=True, json_schema_supported=False) as server:
        yield server


@pytest.mark.parametrize("protocol", [GATEWAY], ids=["internal_gateway"])
async def test_gateway_falls_back_to_json_object_once_and_remembers_it(
    gateway_without_json_schema: LLMServer, make_provider: Any
) -> None:
    server = gateway_without_json_schema
    server.enqueue(*[Reply(output=PERSON) for _ in range(4)])
    provider, params = make_provider(server.openai_base_url), params_for(GATEWAY, Person)
    answers = [(await provider.complete(HELLO, None, params)).text, (await streamed(provider, params))[1].text]
    again = make_provider(server.openai_base_url)  # the endpoint is remembered, not the provider instance
    answers += [(await again.complete(HELLO, None, params)).text, (await streamed(again, params))[1].text]
    assert [r.status for r in server.requests] == [400, 200, 200, 200, 200]
    assert all(OutputSpec.of(Person).validate(text) == Person(**PERSON) for text in answers)
    for request in server.requests[1:]:
        assert request.body["response_format"] == {"type": "json_object"}
        assert request.messages[0] == {"role": "system", "content": params.output.instructions()}


@pytest.mark.parametrize("protocol", [GATEWAY], ids=["internal_gateway"])
async def test_gateway_fallback_is_remembered_per_model(
    gateway_without_json_schema: LLMServer, make_provider: Any
) -> None:
    server = gateway_without_json_schema
    server.enqueue(Reply(output=PERSON), Reply(output=PERSON))
    provider, spec = make_provider(server.openai_base_url), OutputSpec.of(Person)
    await provider.complete(HELLO, None, CallParams(model="llama3", output=spec))
    deltas, final = await streamed(provider, CallParams(model="qwen3", output=spec))
    assert [(r.model, r.status) for r in server.requests] == [
        ("llama3", 400),
        ("llama3", 200),
        ("qwen3", 400),
        ("qwen3", 200),
    ]
    assert "".join(deltas) == final.text and spec.validate(final.text) == Person(**PERSON)


@pytest.mark.parametrize("protocol", [GATEWAY], ids=["internal_gateway"])
async def test_gateway_with_json_schema_keeps_the_strict_form(strict_server: LLMServer, make_provider: Any) -> None:
    provider, params = make_provider(strict_server.openai_base_url), params_for(GATEWAY, Person)
    for _ in range(2):
        await provider.complete(HELLO, None, params)
    assert [r.status for r in strict_server.requests] == [200, 200]
    assert all(r.body["response_format"]["type"] == "json_schema" for r in strict_server.requests)


@pytest.mark.parametrize("protocol", [GATEWAY], ids=["internal_gateway"])
async def test_gateway_passes_other_bad_requests_through(strict_server: LLMServer, make_provider: Any) -> None:
    strict_server.enqueue(Fault(status=400, message="context length exceeded"))
    provider = make_provider(strict_server.openai_base_url)
    with pytest.raises(BadRequestError, match="context length"):
        await provider.complete(HELLO, None, params_for(GATEWAY, Person))
    assert len(strict_server.requests) == 1


@pytest.mark.parametrize("protocol", [OPENAI], ids=["openai"])
async def test_openai_itself_never_falls_back(gateway_without_json_schema: LLMServer, make_provider: Any) -> None:
    provider = make_provider(gateway_without_json_schema.openai_base_url)
    with pytest.raises(BadRequestError, match="json_schema"):
        await provider.complete(HELLO, None, params_for(OPENAI, Person))
    assert len(gateway_without_json_schema.requests) == 1
