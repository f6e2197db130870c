"""The embedded model never hands on text copied from its instructions (issue 22, item 2).

Fast: the instructions and checks are pure Python, and the provider is driven through a scripted
stand-in for ``xllamacpp.Server`` (the library's boundary: ``handle_chat_completions(request,
callback)``, streamed chunks in the OpenAI shape), so each decoding and its grammar can be read.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from aiforge.core.settings import load_settings
from aiforge.core.types import CallParams, Completion, Message, ProviderError, ToolSpec
from aiforge.providers.local import LocalEngine, LocalProvider, weights
from aiforge.providers.local.placeholders import (
    EXAMPLE_ANSWER,
    PlaceholderGuard,
    copied_value,
    example_strings,
    forbid_placeholders,
    is_placeholder,
)
from aiforge.providers.local.protocol import tool_instructions

ORDER_STATUS: ToolSpec = {
    "name": "order_status",
    "description": "Look up the shipping status of an order.",
    "parameters": {
        "type": "object",
        "properties": {"order_id": {"type": "string", "description": "The order's id, like A-1001."}},
        "required": ["order_id"],
    },
}
RESEARCH: ToolSpec = {
    "name": "research",
    "description": "Look up a short factual summary of a topic on English Wikipedia.",
    "parameters": {
        "type": "object",
        "properties": {"topic": {"type": "string", "description": 'The topic, e.g. "Alan Turing".'}},
        "required": ["topic"],
    },
}
QUESTION: list[Message] = [{"role": "user", "content": "What is the shipping status of order A-1002?"}]


# --- the instructions ----------------------------------------------------------------------------------------------


def test_the_instructions_show_worked_examples_with_real_values_not_placeholders() -> None:
    instructions = tool_instructions([ORDER_STATUS])

    assert 'For example, to use order_status: {"tool": "order_status", "arguments": {"order_id": "A-1001"}}' in (
        instructions
    )
    assert f'For example, to answer the user directly: {{"answer": "{EXAMPLE_ANSWER}"}}' in instructions
    assert "<" not in instructions and "{{" not in instructions


def test_an_argument_without_an_example_gets_a_value_of_its_type() -> None:
    tool: ToolSpec = {
        "name": "lookup",
        "parameters": {
            "type": "object",
            "properties": {"key": {"type": ["string", "null"]}, "n": {"type": "integer"}, "unit": {"enum": ["m"]}},
        },
    }

    instructions = tool_instructions([tool])

    assert '{"tool": "lookup", "arguments": {"key": "example", "n": 3, "unit": "m"}}' in instructions


# --- what counts as copied -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["<your answer>", "<text>", " <order_id> ", "{{order_id}}", "Status: {{x}}", "..."])
def test_instruction_placeholders_are_rejected(text: str) -> None:
    assert is_placeholder(text)


@pytest.mark.parametrize("text", ["A-1002", "Shipped on 2 Dec.", "3 < 5 and 7 > 2", "{}", "", "Paris."])
def test_ordinary_text_is_not_a_placeholder(text: str) -> None:
    assert not is_placeholder(text)


def test_an_example_value_is_a_copy_unless_the_user_wrote_it() -> None:
    examples = example_strings([ORDER_STATUS, RESEARCH])
    asked = "tell me a short joke."

    assert copied_value({"topic": "Alan Turing"}, examples, asked) == "Alan Turing"
    assert copied_value({"topic": "Alan"}, examples, asked) == "Alan", "a piece of an example is a copy too"
    assert copied_value({"order_id": "{{order_id}}"}, examples, asked) == "{{order_id}}"
    assert copied_value({"topic": "Alan Turing"}, examples, "who was alan turing?") is None
    assert copied_value({"order_id": "A-1002"}, examples, "status of a-1002?") is None


def test_the_grammar_of_a_retry_forbids_placeholder_characters_in_free_strings_only() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"type": "string", "enum": ["<x>"]},
            "n": {"type": "integer"},
            "short": {"type": "string", "maxLength": 100},
        },
    }

    strict = forbid_placeholders(schema)

    assert strict["properties"]["a"]["pattern"] == r'^[^<>{}"\\\n\r\t]*$'
    assert strict["properties"]["short"] == {"type": "string", "pattern": r'^[^<>{}"\\\n\r\t]{0,100}$'}
    assert "pattern" not in strict["properties"]["b"] and "pattern" not in strict["properties"]["n"]
    assert "pattern" not in schema["properties"]["a"], "the caller's schema was changed"


# --- streaming -----------------------------------------------------------------------------------------------------


def guarded(*pieces: str) -> tuple[PlaceholderGuard, str]:
    guard = PlaceholderGuard({EXAMPLE_ANSWER})
    shown = "".join(guard.feed(piece) for piece in pieces)
    return guard, shown + guard.finish()


def test_a_copied_placeholder_answer_is_never_shown() -> None:
    guard, shown = guarded("<your", " answ", "er>")

    assert shown == "" and guard.copied


def test_a_copied_example_answer_is_held_back_and_rejected() -> None:
    guard, shown = guarded("The Pacific is ", "the largest ocean ", "on Earth.")

    assert shown == "" and guard.copied


def test_a_real_answer_streams_as_it_comes() -> None:
    guard = PlaceholderGuard({EXAMPLE_ANSWER})

    assert guard.feed("Shipped on ") == "Shipped on "
    assert guard.feed("2 Dec <") == "2 Dec ", "an unclosed < could still become a placeholder"
    assert guard.feed("- soon.") == ""
    assert guard.finish() == "<- soon." and not guard.cut


def test_a_placeholder_after_real_text_ends_the_answer_before_it() -> None:
    guard, shown = guarded("It was shipped ", "on {{da", "te}} and more")

    assert guard.cut and not guard.copied
    assert shown == "It was shipped on " == guard.text


# --- the provider, through a scripted llama.cpp server -------------------------------------------------------------


PARSE_FAILURE = "<llama.cpp could not parse the reply>"


class ScriptedServer:
    """Answers each ``handle_chat_completions`` with the next scripted reply, streamed in small chunks."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []

    def handle_chat_completions(self, request: dict[str, Any], callback: Any) -> None:
        self.requests.append(json.loads(json.dumps(request)))
        reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        if reply == PARSE_FAILURE:  # llama.cpp's final parse of a reply failed, as it reports it
            message = "The model produced output that does not match the expected peg-native format"
            callback({"error": {"code": 500, "message": message, "type": "server_error"}})
            return
        for start in range(0, len(reply), 4):
            if callback({"choices": [{"delta": {"content": reply[start : start + 4]}, "finish_reason": None}]}):
                return
        callback({"choices": [{"delta": {}, "finish_reason": "stop"}], "usage": {"completion_tokens": 9}})

    def schema(self, i: int) -> dict[str, Any]:
        schema: dict[str, Any] = self.requests[i]["response_format"]["json_schema"]["schema"]
        return schema


@pytest.fixture
def provider(tmp_path: Path) -> LocalProvider:
    if not weights.xllamacpp_installed():
        pytest.skip(f"the embedded model's bindings are not installed: {weights.INSTALL_HINT}")
    model = tmp_path / "model.gguf"
    model.write_bytes(b"never loaded: the server below stands in for llama.cpp")
    provider = LocalProvider(load_settings(PROVIDER="local", LOCAL_MODEL_PATH=str(model)))
    provider.engine = LocalEngine(model, 1, 2048)  # a private engine: the shared one may hold the real model
    return provider


def run(provider: LocalProvider, server: ScriptedServer, messages: list[Message]) -> list[Any]:
    provider.engine._server = server

    async def collect() -> list[Any]:
        params = CallParams(model="m", temperature=0)
        return [event async for event in provider.stream(messages, [ORDER_STATUS], params)]

    return asyncio.run(collect())


def test_an_answer_that_copies_the_placeholder_is_decoded_again_with_a_grammar_that_forbids_it(
    provider: LocalProvider,
) -> None:
    server = ScriptedServer('{"answer": "<your answer>"}', '{"answer": "It shipped on 2 Dec."}')

    *chunks, final = run(provider, server, QUESTION)

    assert isinstance(final, Completion) and final.text == "It shipped on 2 Dec." == "".join(chunks)
    assert len(server.requests) == 2
    assert "pattern" not in json.dumps(server.schema(0))
    assert server.schema(1)["anyOf"][-1]["properties"]["answer"]["pattern"].startswith("^[^<>{}")


def test_a_tool_call_with_a_placeholder_argument_is_decoded_again(provider: LocalProvider) -> None:
    server = ScriptedServer(
        '{"tool": "order_status", "arguments": {"order_id": "{{order_id}}"}}',
        '{"tool": "order_status", "arguments": {"order_id": "A-1002"}}',
    )

    *chunks, final = run(provider, server, QUESTION)

    assert chunks == [] and [c["arguments"] for c in final.tool_calls] == [{"order_id": "A-1002"}]
    assert len(server.requests) == 2


def test_after_a_tool_result_the_answer_is_asked_for_alone_without_the_instructions(provider: LocalProvider) -> None:
    call = {"id": "call_1", "name": "order_status", "arguments": {"order_id": "A-1002"}}
    messages: list[Message] = [
        *QUESTION,
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "name": "order_status", "content": "shipped on 2 Dec"},
    ]
    server = ScriptedServer('{"answer": "It shipped on 2 Dec."}')

    *_, final = run(provider, server, messages)

    assert final.text == "It shipped on 2 Dec." and len(server.requests) == 1
    assert set(server.schema(0)["properties"]) == {"answer"}
    prompt = json.dumps(server.requests[0]["messages"])
    assert "For example" not in prompt and EXAMPLE_ANSWER not in prompt
    assert "Result of order_status: shipped on 2 Dec" in prompt


def test_a_model_that_keeps_copying_is_an_error_not_a_placeholder_answer(provider: LocalProvider) -> None:
    server = ScriptedServer('{"answer": "<your answer>"}')

    with pytest.raises(ProviderError, match="placeholders"):
        run(provider, server, QUESTION)

    assert len(server.requests) == 3


def test_a_reply_llama_cpp_cannot_parse_is_decoded_again(provider: LocalProvider) -> None:
    server = ScriptedServer(PARSE_FAILURE, '{"answer": "It shipped on 2 Dec."}')

    *chunks, final = run(provider, server, QUESTION)

    assert final.text == "It shipped on 2 Dec." == "".join(chunks) and len(server.requests) == 2
