"""The embedded provider's pieces that need no model: the constrained-JSON reply protocol and engine sharing.

The provider against the real weights is tested in ``tests/embedded``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from aiforge.core.output import OutputSpec
from aiforge.core.types import Message, ToolSpec
from aiforge.providers.local.engine import available_cores, default_threads, model_name_for, shared_engine
from aiforge.providers.local.protocol import ANSWER_SCHEMA, chat_messages, reply_schema, tool_instructions
from aiforge.providers.local.reply import AnswerStream, JsonAnswerStream, parse_reply, repeats_a_call
from aiforge.providers.local.structured import GRAMMAR_MAX_CHARS, GRAMMAR_MAX_ITEMS

CALCULATOR: ToolSpec = {
    "name": "calculator",
    "description": "Evaluate an arithmetic expression.",
    "parameters": {
        "type": "object",
        "properties": {"expression": {"type": "string", "description": "The expression to evaluate"}},
        "required": ["expression"],
    },
}
CLOCK: ToolSpec = {"name": "clock", "description": "The current time.", "parameters": {}}


def streamed(*pieces: str) -> tuple[AnswerStream, str]:
    """The reply after feeding ``pieces``, and the text it streamed."""
    reply = AnswerStream()
    return reply, "".join(reply.feed(piece) for piece in pieces)


# --- parse_reply ---------------------------------------------------------------------------------------------------


def test_a_complete_answer_is_plain_text() -> None:
    reply, _ = streamed('{"answer": "Paris is the capital."}')

    assert parse_reply(reply) == ("Paris is the capital.", [])


def test_a_complete_tool_reply_is_a_native_tool_call() -> None:
    reply, _ = streamed('{"tool": "calculator", "arguments": {"expression": "2 + 2"}}')

    text, [call] = parse_reply(reply)

    assert text == ""
    assert call["name"] == "calculator"
    assert call["arguments"] == {"expression": "2 + 2"}
    assert call["id"].startswith("call_") and len(call["id"]) > len("call_")
    assert "invalid_arguments" not in call


def test_each_tool_call_gets_its_own_id() -> None:
    first, _ = streamed('{"tool": "clock", "arguments": {}}')
    second, _ = streamed('{"tool": "clock", "arguments": {}}')

    assert parse_reply(first)[1][0]["id"] != parse_reply(second)[1][0]["id"]


def test_an_answer_cut_off_keeps_the_text_decoded_so_far() -> None:
    reply, _ = streamed('{"answer": "Paris is the cap')

    assert parse_reply(reply) == ("Paris is the cap", [])


def test_a_tool_call_cut_off_keeps_the_raw_reply_as_invalid_arguments() -> None:
    raw = '{"tool": "calculator", "arguments": {"expression": "2 +'
    reply, _ = streamed(raw)

    text, [call] = parse_reply(reply)

    assert text == ""
    assert call["name"] == "calculator"
    assert call["arguments"] == {}
    assert call["invalid_arguments"] == raw


def test_a_reply_cut_off_before_its_kind_is_known_is_empty() -> None:
    reply, _ = streamed('{"')

    assert parse_reply(reply) == ("", [])


# --- AnswerStream --------------------------------------------------------------------------------------------------


def test_answer_stream_yields_only_the_answer_text() -> None:
    reply, text = streamed('{"ans', 'wer": "Hel', "lo wor", 'ld"', "}")

    assert text == "Hello world"
    assert reply.is_answer
    assert reply.raw == '{"answer": "Hello world"}'


def test_answer_stream_yields_nothing_for_a_tool_call() -> None:
    reply, text = streamed('{"tool": "calculator", ', '"arguments": {"expression": "1"}}')

    assert text == ""
    assert not reply.is_answer


def test_answer_stream_decodes_escapes_split_across_tokens() -> None:
    reply = AnswerStream()
    pieces = ['{"answer": "caf', "\\u00e", '9 \\"ok\\"', "\\n \\ud83d", "\\ude00", '"}']

    text = "".join(reply.feed(piece) for piece in pieces)

    assert text == 'café "ok"\n 😀'
    assert reply.text == text


# --- reply_schema and tool_instructions ----------------------------------------------------------------------------


def test_reply_schema_has_one_branch_per_tool_and_one_for_an_answer() -> None:
    schema = reply_schema([CALCULATOR, CLOCK])

    calculator_branch, clock_branch, answer_branch = schema["anyOf"]
    assert calculator_branch["properties"]["tool"] == {"const": "calculator"}
    assert calculator_branch["required"] == ["tool", "arguments"]
    assert calculator_branch["additionalProperties"] is False
    assert clock_branch["properties"]["tool"] == {"const": "clock"}
    assert answer_branch == ANSWER_SCHEMA


def test_reply_schema_forbids_arguments_a_tool_does_not_take() -> None:
    [calculator_branch, clock_branch, _] = reply_schema([CALCULATOR, CLOCK])["anyOf"]

    assert calculator_branch["properties"]["arguments"] == {**CALCULATOR["parameters"], "additionalProperties": False}
    assert clock_branch["properties"]["arguments"] == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }
    assert "additionalProperties" not in CALCULATOR["parameters"], "the caller's tool spec was changed"


def test_tool_instructions_describe_each_tool_and_the_json_to_reply_with() -> None:
    instructions = tool_instructions([CALCULATOR])

    assert "- calculator: Evaluate an arithmetic expression." in instructions
    assert "    expression: The expression to evaluate" in instructions
    assert 'For example, to use calculator: {"tool": "calculator", "arguments": {"expression": "example"}}' in (
        instructions
    )
    assert 'For example, to answer the user directly: {"answer": "' in instructions


def test_tool_instructions_take_a_parameter_whose_type_is_a_list() -> None:
    # JSON Schema allows "type": ["string", "null"]; it was used as a dict key (TypeError: unhashable type).
    tool: ToolSpec = {
        "name": "lookup",
        "parameters": {"type": "object", "properties": {"key": {"type": ["string", "null"]}, "n": {"type": "integer"}}},
    }

    instructions = tool_instructions([tool])

    assert 'For example, to use lookup: {"tool": "lookup", "arguments": {"key": "example", "n": 3}}' in instructions


# --- chat_messages -------------------------------------------------------------------------------------------------


def test_without_tools_the_conversation_passes_unchanged() -> None:
    messages: list[Message] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Bye"},
    ]

    assert chat_messages(messages, None) == [dict(m) for m in messages]


def test_with_tools_the_instructions_open_the_latest_user_message() -> None:
    messages: list[Message] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "What is 2 + 2?"},
    ]

    out = chat_messages(messages, [CALCULATOR])

    assert out[0] == {"role": "system", "content": "Be brief."}
    assert out[1] == {"role": "user", "content": "Hi"}
    assert out[2] == {"role": "assistant", "content": '{"answer": "Hello!"}'}
    assert out[3]["content"] == f"{tool_instructions([CALCULATOR])}\n\nWhat is 2 + 2?"


def test_with_tools_and_no_user_message_the_instructions_are_a_system_message() -> None:
    out = chat_messages([{"role": "assistant", "content": "Hello!"}], [CALCULATOR])

    assert out[0] == {"role": "system", "content": tool_instructions([CALCULATOR])}


def test_tool_calls_become_the_json_the_model_writes_and_results_a_user_message() -> None:
    call = {"id": "call_1", "name": "calculator", "arguments": {"expression": "2 + 2"}}
    messages: list[Message] = [
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "4"},
    ]

    out = chat_messages(messages, None)

    assert out[1] == {
        "role": "assistant",
        "content": json.dumps({"tool": "calculator", "arguments": call["arguments"]}),
    }
    assert out[2] == {"role": "user", "content": "Result of calculator: 4\nAnswer the question with this result."}


def test_consecutive_tool_results_share_one_user_message() -> None:
    calls = [
        {"id": "call_1", "name": "calculator", "arguments": {"expression": "1"}},
        {"id": "call_2", "name": "clock", "arguments": {}},
    ]
    messages: list[Message] = [
        {"role": "user", "content": "Two things"},
        {"role": "assistant", "content": "", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "call_1", "content": "1"},
        {"role": "tool", "tool_call_id": "call_2", "content": "noon"},
        {"role": "assistant", "content": "Done."},
    ]

    out = chat_messages(messages, None)

    assert [m["role"] for m in out] == ["user", "assistant", "user", "assistant"]
    assert out[2]["content"] == "Result of calculator: 1\nResult of clock: noon"


# --- repeats_a_call ------------------------------------------------------------------------------------------------


def test_a_call_made_since_the_last_user_message_is_a_repeat() -> None:
    call = {"id": "call_1", "name": "calculator", "arguments": {"expression": "2 + 2"}}
    messages: list[Message] = [
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "4"},
    ]

    assert repeats_a_call({**call, "id": "call_2"}, messages)
    assert not repeats_a_call({**call, "arguments": {"expression": "3 + 3"}}, messages)
    assert not repeats_a_call(call, [*messages, {"role": "user", "content": "And again?"}])


# --- engine ------------------------------------------------------------------------------------------------------


def test_model_name_drops_the_quantisation_suffix() -> None:
    assert model_name_for(Path("SmolLM2-135M-Instruct.Q4_1.gguf")) == "SmolLM2-135M-Instruct"
    assert model_name_for(Path("tiny-model-F16.gguf")) == "tiny-model"
    assert model_name_for(Path("plain.gguf")) == "plain"


def test_threads_default_to_every_core_but_one_and_are_capped_at_the_cores() -> None:
    cores = available_cores()

    assert default_threads(None) == max(1, cores - 1)
    assert default_threads(1) == 1
    assert default_threads(cores + 100) == cores


def test_engines_are_shared_per_model_file_threads_and_context_without_loading(tmp_path: Path) -> None:
    weights = tmp_path / "model.Q4_0.gguf"
    weights.write_bytes(b"")

    engine = shared_engine(weights, 1, 512)

    assert shared_engine(tmp_path / "." / "model.Q4_0.gguf", 1, 512) is engine
    assert shared_engine(weights, 1, 1024) is not engine
    assert engine.model_name == "model"
    assert not engine.loaded


# --- structured answers (params.output) ----------------------------------------------------------------------------


class Item(BaseModel):
    label: Literal["a", "b"] = Field(description="The class of the item")
    count: int = Field(ge=1, le=5)
    tags: list[str]
    parent: Item | None = None


def json_streamed(*pieces: str) -> tuple[JsonAnswerStream, list[str]]:
    reply = JsonAnswerStream()
    return reply, [reply.feed(piece) for piece in pieces]


def test_a_structured_answer_streams_its_own_json_and_is_the_completion_text() -> None:
    reply, chunks = json_streamed('{"ans', 'wer": {"label": "a}"', ', "tags": ["{x"]', "} ", "}")

    assert "".join(chunks) == '{"label": "a}", "tags": ["{x"]}'
    assert parse_reply(reply) == ('{"label": "a}", "tags": ["{x"]}', [])


def test_a_structured_reply_that_calls_a_tool_streams_nothing() -> None:
    reply, chunks = json_streamed('{"tool": "calculator", "arguments": {"expression": "1"}}')

    assert chunks == [""]
    assert parse_reply(reply)[1][0]["name"] == "calculator"


def test_the_grammar_schema_keeps_defs_at_the_root_and_caps_what_a_small_model_repeats() -> None:
    schema = reply_schema([], OutputSpec.of(Item))
    answer = schema["properties"]["answer"]

    assert set(schema) >= {"$defs", "properties"} and "$defs" not in answer
    assert answer["additionalProperties"] is False
    assert schema["$defs"]["Item"]["additionalProperties"] is False
    assert answer["properties"]["tags"]["maxItems"] == GRAMMAR_MAX_ITEMS
    assert answer["properties"]["tags"]["items"]["maxLength"] == GRAMMAR_MAX_CHARS
    assert answer["properties"]["label"]["enum"] == ["a", "b"]


def test_with_tools_the_structured_answer_is_one_more_branch() -> None:
    schema = reply_schema([CALCULATOR], OutputSpec.of(Item))

    assert [branch["required"] for branch in schema["anyOf"]] == [["tool", "arguments"], ["answer"]]
    assert "$defs" in schema


def test_a_wrapped_scalar_answer_is_an_object_with_its_value() -> None:
    schema = reply_schema([], OutputSpec.of(bool))

    assert schema["properties"]["answer"]["properties"]["value"] == {"type": "boolean"}


def test_without_tools_the_structured_answer_is_asked_for_in_the_system_message() -> None:
    messages: list[Message] = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Label x"}]

    system, user = chat_messages(messages, None, OutputSpec.of(Item))

    assert system["content"].startswith("Be brief.\n\nReply with one JSON object")
    assert '{"answer": {"label": "a" or "b", "count": <integer 1-5>, "tags": [<text>, ...]' in system["content"]
    assert "label: The class of the item" in system["content"]
    assert user == {"role": "user", "content": "Label x"}


def test_with_tools_the_instructions_show_the_structured_answer() -> None:
    messages: list[Message] = [{"role": "user", "content": "Label x"}]

    [user] = chat_messages(messages, [CALCULATOR], OutputSpec.of(bool))

    assert 'To answer the user directly: {"answer": {"value": <true or false>}}' in user["content"]


def test_an_earlier_structured_answer_is_shown_as_the_json_the_model_wrote() -> None:
    messages: list[Message] = [
        {"role": "user", "content": "Label x"},
        {"role": "assistant", "content": '{"value": true}'},
        {"role": "user", "content": "Label y"},
    ]

    out = chat_messages(messages, None, OutputSpec.of(bool))

    assert out[2] == {"role": "assistant", "content": '{"answer": {"value": true}}'}
