"""Record and replay through the real SDKs over HTTP: replies, streamed chunks, mismatches, no secrets."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from aiforge import ChatAgent
from aiforge.core.errors import ReplayMismatchError
from fakellm import LLMServer, Reply

KEYS = {
    "openai": ("OPENAI_API_KEY", "sk-cassette-secret-1234"),
    "anthropic": ("ANTHROPIC_API_KEY", "sk-ant-cassette-99"),
}


def agent(protocol: str, cassette: Path, mode: str, server: LLMServer | None = None, key: bool = True) -> ChatAgent:
    settings = {"REPLAY": mode, "REPLAY_FILE": str(cassette), "MAX_RETRIES": 0}
    if key:
        name, value = KEYS[protocol]
        settings[name] = value
    if server is not None:
        url = server.openai_base_url if protocol == "openai" else server.anthropic_base_url
        settings[f"{protocol.upper()}_BASE_URL"] = url
    return ChatAgent(provider=protocol, **settings)


async def _streamed(chat: ChatAgent, message: str) -> list[str]:
    return [chunk async for chunk in chat.chat_stream(message)]


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_a_recorded_conversation_replays_without_a_request_or_a_key(protocol: str, tmp_path: Path) -> None:
    cassette = tmp_path / "cassette.jsonl"
    with LLMServer(chunk_size=4) as server:
        server.enqueue(Reply("Paris is the capital of France."), Reply("About 2.1 million people live there."))
        recorder = agent(protocol, cassette, "record", server)
        first = recorder.chat("What is the capital of France?")
        recorded_chunks = asyncio.run(_streamed(recorder, "How many people live there?"))
        assert len(server.requests) == 2
    assert len(recorded_chunks) > 3

    player = agent(protocol, cassette, "replay", key=False)
    again = player.chat("What is the capital of France?")
    assert (again.message, again.input_tokens, again.output_tokens) == (
        first.message, first.input_tokens, first.output_tokens
    )
    assert asyncio.run(_streamed(player, "How many people live there?")) == recorded_chunks
    text = cassette.read_text()
    assert KEYS[protocol][1] not in text and "authorization" not in text.lower() and "x-api-key" not in text


def test_a_request_not_in_the_cassette_names_what_differs_from_the_closest(tmp_path: Path) -> None:
    cassette = tmp_path / "cassette.jsonl"
    with LLMServer() as server:
        server.enqueue(Reply("Hello!"), Reply("Fine."))
        recorder = agent("openai", cassette, "record", server)
        recorder.chat("Hi")
        recorder.chat("How are you?")

    player = agent("openai", cassette, "replay", key=False)
    player.chat("Hi")
    with pytest.raises(ReplayMismatchError) as caught:
        player.chat("How old are you?")
    message = str(caught.value)
    assert str(cassette) in message and "messages[3] (user): recorded 'How are you?', now 'How old are you?'" in message
    assert player.history[-1]["content"] == "Hello!"  # the failed turn left the conversation as it was

    with pytest.raises(ReplayMismatchError, match="model: recorded 'gpt-4o-mini', now 'gpt-4o'"):
        ChatAgent(provider="openai", REPLAY="replay", REPLAY_FILE=str(cassette), MODEL="gpt-4o").chat("Hi")


def test_auto_replays_without_a_key_and_calls_and_appends_with_one(tmp_path: Path) -> None:
    cassette = tmp_path / "cassette.jsonl"
    with LLMServer() as server:
        server.enqueue(Reply("One."), Reply("Two."))
        assert agent("openai", cassette, "auto", server).chat("first").message == "One."
        assert agent("openai", cassette, "auto", key=False).chat("first").message == "One."
        assert agent("openai", cassette, "auto", server).chat("second").message == "Two."
        assert len(server.requests) == 2
    assert len(cassette.read_text().splitlines()) == 2
    with pytest.raises(ReplayMismatchError):
        agent("openai", cassette, "auto", key=False).chat("third")


def test_replay_needs_a_file(tmp_path: Path) -> None:
    from aiforge import ConfigError

    with pytest.raises(ConfigError, match="REPLAY='replay' needs REPLAY_FILE"):
        ChatAgent(provider="scripted", REPLAY="replay")


def test_auto_with_a_keyless_provider_records_once_then_replays(tmp_path: Path) -> None:
    from aiforge import ScriptedProvider

    fake = ScriptedProvider()
    chat = ChatAgent(provider=fake, REPLAY="auto", REPLAY_FILE=str(tmp_path / "c.jsonl"))
    first = chat.chat("hi").message
    chat.reset()
    assert chat.chat("hi").message == first and len(fake.calls) == 1
