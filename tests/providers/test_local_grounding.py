"""The embedded model's tool calls carry codes from the conversation, and its answers are never tool-call text
(issue 30, item 9).

Fast: the checks are pure Python, and the provider is driven through the scripted stand-in for
``xllamacpp.Server`` of ``test_local_placeholders`` (each decoding and its grammar can be read).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from aiforge.core.settings import load_settings
from aiforge.core.types import CallParams, Completion, Message, ToolSpec
from aiforge.providers.local import LocalEngine, LocalProvider, weights
from aiforge.providers.local.grounding import (
    ToolTextGuard,
    argument_choices,
    codes_in,
    grounding_text,
    is_code,
    is_tool_call_text,
    ungrounded_arguments,
)
from aiforge.providers.local.placeholders import example_arguments
from tests.providers.test_local_placeholders import ScriptedServer

STOCK_LEVEL: ToolSpec = {
    "name": "stock_level",
    "description": "Return how many units of a product are in stock.",
    "parameters": {
        "type": "object",
        "properties": {"sku": {"type": "string", "description": "The product's stock-keeping unit, e.g. A-1001."}},
        "required": ["sku"],
    },
}
# A one-line docstring: the argument has no description, the tool's own sentence gives its example.
STOCK_LEVEL_TERSE: ToolSpec = {
    "name": "stock_level",
    "description": "How many units of a SKU are in stock. sku: e.g. A-1001",
    "parameters": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]},
}
# An argument whose example is a word, not a code: its values are decoded freely, then checked.
LOOKUP: ToolSpec = {
    "name": "lookup",
    "description": "Look up a record.",
    "parameters": {
        "type": "object",
        "properties": {
            "key": {"type": "string", "description": 'What to look up, e.g. "invoice".'},
            "kind": {"type": "string", "enum": ["order", "invoice", "R-9"]},
        },
        "required": ["key"],
    },
}
CLOCK: ToolSpec = {
    "name": "current_time",
    "description": "Return the current time in a time zone.",
    "parameters": {
        "type": "object",
        "properties": {"timezone": {"type": "string", "description": 'An IANA time zone name such as "UTC".'}},
    },
}
QUESTION: list[Message] = [{"role": "user", "content": "How many units of D-4004 are in stock?"}]


def call(name: str, **arguments: Any) -> Any:
    return {"id": "call_1", "name": name, "arguments": arguments}


@pytest.fixture
def provider(tmp_path: Path) -> LocalProvider:
    if not weights.xllamacpp_installed():
        pytest.skip(f"the embedded model's bindings are not installed: {weights.INSTALL_HINT}")
    model = tmp_path / "model.gguf"
    model.write_bytes(b"never loaded: the scripted server stands in for llama.cpp")
    provider = LocalProvider(load_settings(PROVIDER="local", LOCAL_MODEL_PATH=str(model)))
    provider.engine = LocalEngine(model, 1, 2048)  # a private engine: the shared one may hold the real model
    return provider


def run(provider: LocalProvider, server: ScriptedServer, messages: list[Message], tools: list[ToolSpec]) -> list[Any]:
    provider.engine._server = server

    async def collect() -> list[Any]:
        params = CallParams(model="m", temperature=0)
        return [event async for event in provider.stream(messages, tools, params)]

    return asyncio.run(collect())


# --- codes and where they come from -------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["A-1001", "12345", "INV-7/2", "d-4004", "SKU_42"])
def test_a_token_with_a_digit_is_a_code(value: str) -> None:
    assert is_code(value)


@pytest.mark.parametrize("value", ["Tokyo", "Asia/Tokyo", "100-7", "7/2", "2 * 3", "sqrt(2)", "A 1001", ""])
def test_words_arithmetic_and_phrases_are_not_codes(value: str) -> None:
    assert not is_code(value)


def test_the_conversation_s_codes_are_listed_latest_first_each_once() -> None:
    assert codes_in("Is D-4004 in stock? And E-5005, or d-4004 again. Page 2.") == ["2", "d-4004", "E-5005"]


def test_the_grounding_text_is_what_the_user_the_system_and_the_tools_wrote_not_the_model() -> None:
    messages: list[Message] = [
        {"role": "system", "content": "Warehouse W-7."},
        {"role": "user", "content": "Stock of D-4004?"},
        {"role": "assistant", "content": "Did you mean A-1002?", "tool_calls": [call("stock_level", sku="A-1003")]},
        {"role": "tool", "tool_call_id": "call_1", "content": "B-2002 replaces it"},
    ]

    text = grounding_text(messages)

    assert "W-7" in text and "D-4004" in text and "B-2002" in text
    assert "A-1002" not in text and "A-1003" not in text


def test_a_code_the_conversation_does_not_hold_is_ungrounded_whatever_its_case() -> None:
    text = grounding_text(QUESTION)

    assert ungrounded_arguments(call("stock_level", sku="A-1002"), [STOCK_LEVEL], text) == ["sku"]
    assert ungrounded_arguments(call("stock_level", sku="D-400"), [STOCK_LEVEL], text) == ["sku"]  # not a token
    assert ungrounded_arguments(call("stock_level", sku="d-4004"), [STOCK_LEVEL], text) == []
    assert ungrounded_arguments(call("stock_level", sku={"id": ["A-1002"]}), [STOCK_LEVEL], text) == ["sku"]


def test_words_and_values_the_schema_enumerates_are_not_checked() -> None:
    text = "What time is it in Tokyo?"

    assert ungrounded_arguments(call("current_time", timezone="Asia/Tokyo"), [CLOCK], text) == []
    assert ungrounded_arguments(call("lookup", key="invoice", kind="R-9"), [LOOKUP], text) == []


def test_an_argument_whose_example_is_a_code_is_chosen_from_the_conversation_s_codes() -> None:
    text = "Compare D-4004 with E-5005."

    assert argument_choices([STOCK_LEVEL, LOOKUP, CLOCK], text) == {"stock_level": {"sku": ["E-5005", "D-4004"]}}
    assert argument_choices([LOOKUP], text, {"lookup": ["key"]}) == {"lookup": {"key": ["E-5005", "D-4004"]}}
    assert argument_choices([STOCK_LEVEL], "How many units of the blue widget?") == {}  # nothing to choose from


def test_an_argument_without_a_description_takes_its_example_from_the_tool_s_description() -> None:
    assert example_arguments(STOCK_LEVEL_TERSE) == {"sku": "A-1001"}
    assert argument_choices([STOCK_LEVEL_TERSE], "Is B-2002 in stock?") == {"stock_level": {"sku": ["B-2002"]}}


# --- tool-call text -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "check_stock_level_c-3003",
        "stock_level",
        'stock_level(sku="C-3003")',
        '{"tool": "stock_level", "arguments": {"sku": "C-3003"}}',
        '{"sku": "C-3003"}',
        "  get_stock  ",
    ],
)
def test_a_call_written_as_an_answer_is_tool_call_text(answer: str) -> None:
    assert is_tool_call_text(answer, [STOCK_LEVEL])


@pytest.mark.parametrize(
    "answer", ["There are 57 units of C-3003 in stock.", "57", "Paris", "C-3003", "Use stock_level with a SKU.", ""]
)
def test_words_for_the_user_are_not_tool_call_text(answer: str) -> None:
    assert not is_tool_call_text(answer, [STOCK_LEVEL])


def test_the_guard_holds_the_first_word_and_cuts_tool_call_text() -> None:
    guard = ToolTextGuard([STOCK_LEVEL])

    assert [guard.feed(p) for p in ("check_", "stock_level", "_c-3003")] == ["", "", ""]
    assert guard.finish() == "" and guard.cut


def test_the_guard_releases_an_answer_at_its_first_space() -> None:
    guard = ToolTextGuard([STOCK_LEVEL])

    assert [guard.feed(p) for p in ("There", " are", " 57.")] == ["", "There are", " 57."]
    assert guard.finish() == "" and not guard.cut


def test_before_any_result_a_code_the_user_wrote_as_the_whole_answer_is_cut() -> None:
    said = grounding_text([{"role": "user", "content": "Check the stock level for C-3003."}])
    before, after = ToolTextGuard([STOCK_LEVEL], codes_from=said), ToolTextGuard([STOCK_LEVEL])

    assert before.feed("C-3003") == after.feed("C-3003") == ""
    assert (before.finish(), before.cut) == ("", True)
    assert (after.finish(), after.cut) == ("C-3003", False)


# --- the provider ---------------------------------------------------------------------------------------------------


def arguments_schema(server: ScriptedServer, i: int) -> dict[str, Any]:
    branch = server.schema(i)["anyOf"][0]
    schema: dict[str, Any] = branch["properties"]["arguments"]["properties"]
    return schema


def test_a_code_argument_is_decoded_as_one_of_the_conversation_s_codes(provider: LocalProvider) -> None:
    server = ScriptedServer('{"tool": "stock_level", "arguments": {"sku": "D-4004"}}')

    *chunks, final = run(provider, server, QUESTION, [STOCK_LEVEL])

    assert arguments_schema(server, 0)["sku"]["enum"] == ["D-4004"]
    assert chunks == [] and [c["arguments"] for c in final.tool_calls] == [{"sku": "D-4004"}]


def test_an_invented_code_is_decoded_again_limited_to_the_conversation_s_codes(provider: LocalProvider) -> None:
    messages: list[Message] = [{"role": "user", "content": "Look up record R-7781 for me."}]
    server = ScriptedServer(
        '{"tool": "lookup", "arguments": {"key": "R-7782"}}', '{"tool": "lookup", "arguments": {"key": "R-7781"}}'
    )

    *_, final = run(provider, server, messages, [LOOKUP])

    assert "enum" not in arguments_schema(server, 0)["key"]
    assert arguments_schema(server, 1)["key"]["enum"] == ["R-7781"]
    assert [c["arguments"] for c in final.tool_calls] == [{"key": "R-7781"}]


def test_an_invented_code_with_no_code_in_the_conversation_is_answered_without_the_tool(
    provider: LocalProvider,
) -> None:
    messages: list[Message] = [{"role": "user", "content": "Look up my last record."}]
    server = ScriptedServer('{"tool": "lookup", "arguments": {"key": "R-1002"}}', "Which record do you mean?")

    *chunks, final = run(provider, server, messages, [LOOKUP])

    assert isinstance(final, Completion) and final.tool_calls == []
    assert final.text == "Which record do you mean?" == "".join(chunks)
    # in the model's own words: no grammar (a JSON answer on a chat that never mentions JSON came out as ");")
    assert "response_format" not in server.requests[1]
    assert "You can use these tools" not in json.dumps(server.requests[1]["messages"])
    assert final.usage.output_tokens == 2 * 9  # both decodings are counted


def test_a_call_copying_the_example_with_no_code_asked_about_is_answered_in_words(provider: LocalProvider) -> None:
    """A question naming no SKU: the model called with the docstring's A-1001; the answer is then the model's own
    words, not a JSON answer (on the real model those came out as ");" and "123456789012345A")."""
    messages: list[Message] = [{"role": "user", "content": "How many units do we have?"}]
    server = ScriptedServer('{"tool": "stock_level", "arguments": {"sku": "A-1001"}}', "Which product do you mean?")

    *chunks, final = run(provider, server, messages, [STOCK_LEVEL])

    assert isinstance(final, Completion) and final.tool_calls == []
    assert final.text == "Which product do you mean?" == "".join(chunks)
    assert "response_format" not in server.requests[1] and len(server.requests) == 2


def test_an_answer_written_as_a_call_is_decoded_again_as_a_call_of_the_tool_it_names(provider: LocalProvider) -> None:
    messages: list[Message] = [{"role": "user", "content": "How many units of C-3003 are in stock?"}]
    server = ScriptedServer(
        '{"answer": "check_stock_level_c-3003"}', '{"tool": "stock_level", "arguments": {"sku": "C-3003"}}'
    )

    *chunks, final = run(provider, server, messages, [STOCK_LEVEL, CLOCK])

    assert chunks == []  # the tool-call text never reached the screen
    assert [(c["name"], c["arguments"]) for c in final.tool_calls] == [("stock_level", {"sku": "C-3003"})]
    retry = server.schema(1)["anyOf"]
    assert [b["properties"]["tool"]["const"] for b in retry] == ["stock_level"]  # a call, and no answer branch


def test_a_code_alone_as_the_answer_is_decoded_again_as_a_call_of_the_only_tool(provider: LocalProvider) -> None:
    messages: list[Message] = [{"role": "user", "content": "Check the stock level for C-3003."}]
    server = ScriptedServer('{"answer": "C-3003"}', '{"tool": "stock_level", "arguments": {"sku": "C-3003"}}')

    *chunks, final = run(provider, server, messages, [STOCK_LEVEL])

    assert chunks == [] and [c["arguments"] for c in final.tool_calls] == [{"sku": "C-3003"}]


def test_tool_call_text_after_the_result_gives_way_to_the_result(provider: LocalProvider) -> None:
    messages: list[Message] = [
        {"role": "user", "content": "How many units of C-3003 are in stock?"},
        {"role": "assistant", "content": "", "tool_calls": [call("stock_level", sku="C-3003")]},
        {"role": "tool", "tool_call_id": "call_1", "name": "stock_level", "content": "57"},
    ]
    server = ScriptedServer('{"answer": "stock_level_c-3003"}')

    *chunks, final = run(provider, server, messages, [STOCK_LEVEL])

    assert isinstance(final, Completion) and final.text == "57" == "".join(chunks)
    assert final.tool_calls == [] and len(server.requests) == 1


def test_an_answer_in_words_streams_and_stands(provider: LocalProvider) -> None:
    server = ScriptedServer('{"answer": "There are 3 units of D-4004 in stock."}')

    *chunks, final = run(provider, server, QUESTION, [STOCK_LEVEL])

    assert final.text == "There are 3 units of D-4004 in stock." == "".join(chunks) and len(chunks) > 1
    assert len(server.requests) == 1
