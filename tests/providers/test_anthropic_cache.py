"""Anthropic prompt caching over real HTTP: the real ``anthropic`` SDK against the fake server, which bills cache
writes and reads for ``cache_control`` as the Messages API does (``fakellm.prompt_cache``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from aiforge import ChatAgent
from aiforge.core.types import CallParams, Message
from fakellm import LLMServer
from tests.providers.conftest import ANTHROPIC, SECRET, WEATHER_TOOL, WireProtocol

MODEL = "claude-sonnet-4-5"
"""Caches prefixes of 1024 tokens and more; $3 input, $3.75 cache write, $0.30 cache read, $15 output per 1M."""
LONG_PROMPT = "You label customer reviews of kitchen appliances. " + "Answer with one word, never explain. " * 165
"""About 1,540 tokens at 4 characters a token: over claude-sonnet-4-5's minimum, under claude-haiku-4-5's 4096."""
SHORT_PROMPT = LONG_PROMPT[:3_600]
"""About 900 tokens: under every model's minimum."""
EPHEMERAL = {"type": "ephemeral"}


@pytest.fixture
def protocol() -> WireProtocol:
    """Pins conftest's ``make_provider`` to the anthropic provider."""
    return ANTHROPIC


@pytest.fixture
def make_agent(llm_server: LLMServer) -> Callable[..., ChatAgent]:
    def make(system_prompt: str = LONG_PROMPT, **settings: Any) -> ChatAgent:
        return ChatAgent(
            provider="anthropic", ANTHROPIC_API_KEY=SECRET, ANTHROPIC_BASE_URL=llm_server.anthropic_base_url,
            MODEL=settings.pop("MODEL", MODEL), system_prompt=system_prompt, **settings,
        )

    return make


def test_a_long_shared_system_prompt_is_marked_for_the_prompt_cache(
    llm_server: LLMServer, make_agent: Callable[..., ChatAgent]
) -> None:
    make_agent().run("The kettle leaks.")
    assert llm_server.requests[-1].body["system"] == [
        {"type": "text", "text": LONG_PROMPT, "cache_control": EPHEMERAL}
    ]


def test_only_a_prefix_reaching_the_models_minimum_is_marked(
    llm_server: LLMServer, make_agent: Callable[..., ChatAgent]
) -> None:
    make_agent(LONG_PROMPT).run("The kettle leaks.")
    make_agent(SHORT_PROMPT).run("The kettle leaks.")  # under 1024 tokens
    make_agent(LONG_PROMPT, MODEL="claude-haiku-4-5").run("The kettle leaks.")  # under Haiku 4.5's 4096
    marked, short, haiku = (r.body["system"] for r in llm_server.requests)
    assert marked == [{"type": "text", "text": LONG_PROMPT, "cache_control": EPHEMERAL}]
    # Sent as without caching: a shorter prefix would not be cached, marked or not.
    assert (short, haiku) == (SHORT_PROMPT, LONG_PROMPT)


def test_prompt_cache_off_marks_nothing(llm_server: LLMServer, make_agent: Callable[..., ChatAgent]) -> None:
    make_agent(PROMPT_CACHE="off").run("The kettle leaks.")
    make_agent(PROMPT_CACHE="auto").run("The kettle leaks.")
    off, auto = (r.body["system"] for r in llm_server.requests)
    assert off == LONG_PROMPT and auto != LONG_PROMPT


async def test_a_later_system_message_follows_the_cached_prompt_in_a_block_of_its_own(
    llm_server: LLMServer, make_provider: Any
) -> None:
    # A memory summary changes every few turns: inside the marked block it would make every call a cache write.
    messages: list[Message] = [
        {"role": "system", "content": LONG_PROMPT},
        {"role": "system", "content": "Summary of the conversation so far: two reviews."},
        {"role": "user", "content": "The kettle leaks."},
    ]
    await make_provider(llm_server.anthropic_base_url).complete(messages, None, CallParams(model=MODEL))
    assert llm_server.requests[-1].body["system"] == [
        {"type": "text", "text": LONG_PROMPT, "cache_control": EPHEMERAL},
        {"type": "text", "text": "Summary of the conversation so far: two reviews."},
    ]


async def test_without_a_system_prompt_long_tools_are_marked_at_the_last_tool(
    llm_server: LLMServer, make_provider: Any
) -> None:
    tools = [WEATHER_TOOL, {**WEATHER_TOOL, "name": "get_forecast", "description": LONG_PROMPT}]
    await make_provider(llm_server.anthropic_base_url).complete(
        [{"role": "user", "content": "Rain in Oslo?"}], tools, CallParams(model=MODEL)
    )
    sent = llm_server.requests[-1].body["tools"]
    assert "cache_control" not in sent[0] and sent[1]["cache_control"] == EPHEMERAL


def test_cache_writes_and_reads_are_priced_at_their_rates(make_agent: Callable[..., ChatAgent]) -> None:
    agent = make_agent()
    first, second = agent.run("The kettle leaks."), agent.run("The toaster is fine.")
    written, read = agent.cost_tracker.records
    prefix = len(LONG_PROMPT) // 4  # what the fake server bills for the marked prefix
    assert (written.cache_write_tokens, written.cached_input_tokens) == (prefix, 0)
    assert (read.cache_write_tokens, read.cached_input_tokens) == (0, prefix)
    for record, response in ((written, first), (read, second)):
        uncached = record.input_tokens - record.cache_write_tokens - record.cached_input_tokens
        expected = (
            uncached * 3.00 + record.cache_write_tokens * 3.75 + record.cached_input_tokens * 0.30
            + record.output_tokens * 15.00
        ) / 1e6
        assert response.cost == pytest.approx(expected) and response.priced
    assert second.cost < first.cost / 5  # a read is a tenth of the input price, a write 1.25 times it
    assert (first.cached_tokens, second.cached_tokens) == (0, prefix)


def test_run_batch_rows_say_how_many_tokens_came_from_the_cache(make_agent: Callable[..., ChatAgent]) -> None:
    frame = make_agent().run_batch(["The kettle leaks.", "Fine toaster.", "Loud fridge."], concurrency=1).to_dataframe()
    assert str(frame["cached_tokens"].dtype) == "Int64"
    assert list(frame["cached_tokens"]) == [0, len(LONG_PROMPT) // 4, len(LONG_PROMPT) // 4]


def test_a_message_batch_request_is_marked_like_a_live_call(
    llm_server: LLMServer, make_agent: Callable[..., ChatAgent]
) -> None:
    agent = make_agent()
    result = agent.submit_batch(["The kettle leaks.", "Fine toaster."]).wait(poll_interval=0)
    bodies = [r.body for r in llm_server.requests if r.headers.get("x-fake-batch") == "1"]
    marked = [{"type": "text", "text": LONG_PROMPT, "cache_control": EPHEMERAL}]
    assert [body["system"] for body in bodies] == [marked, marked]
    assert [r.cached_tokens for r in result.results] == [0, len(LONG_PROMPT) // 4]
