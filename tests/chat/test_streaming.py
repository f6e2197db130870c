"""Streaming: deltas as the provider sends them, turns recorded like chat(), early close and cancellation."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from pathlib import Path

import pytest
from langchain_core.tools import StructuredTool

from aiforge import ChatAgent
from aiforge.core.types import Completion, ProviderError
from aiforge.providers.base import Provider
from aiforge.providers.scripted import ScriptedProvider, ScriptedReply, tool_call
from fakellm import LLMServer, Reply
from tests.chat.checks import assert_valid_history

POEM = "APIs whisper softly, requests travel far, responses come back home."


def poet(*extra: object, **kwargs: object) -> tuple[ChatAgent, ScriptedProvider]:
    fake = ScriptedProvider([POEM, *extra], chunk_size=2)
    return ChatAgent(provider=fake, **kwargs), fake


async def test_chat_stream_yields_several_deltas_that_join_to_the_reply() -> None:
    agent, _ = poet()

    chunks = [chunk async for chunk in agent.chat_stream("Write a short poem about APIs")]

    assert len(chunks) > 3
    assert "".join(chunks) == POEM


async def test_chat_stream_yields_before_the_reply_is_complete() -> None:
    agent, fake = poet()
    fake.delay = 0.001
    state_at_first_chunk = None

    async for _chunk in agent.chat_stream("poem"):
        if state_at_first_chunk is None:
            state_at_first_chunk = (len(agent.history), agent.last_response)

    assert state_at_first_chunk == (0, None)  # the turn had not finished when the first delta arrived
    assert len(agent.history) == 2


class BufferedStream(Provider):
    """Yields every delta without awaiting, as a provider does when the whole response came in one read."""

    supports_streaming = True
    free = True

    def __init__(self) -> None:
        self.produced = 0

    async def complete(self, messages, tools, params) -> Completion:
        return Completion(text="one two three")

    async def stream(self, messages, tools, params):
        for piece in ("one ", "two ", "three"):
            self.produced += 1
            yield piece
        yield Completion(text="one two three")


async def test_each_chunk_reaches_the_consumer_before_the_provider_parses_the_next() -> None:
    provider = BufferedStream()
    agent = ChatAgent(provider=provider)

    produced_at_arrival = [provider.produced async for _chunk in agent.chat_stream("count")]

    assert produced_at_arrival == [1, 2, 3]


async def test_streamed_turn_is_recorded_in_history_and_last_response() -> None:
    agent, _ = poet()

    chunks = [chunk async for chunk in agent.chat_stream("poem")]

    assert agent.history == [{"role": "user", "content": "poem"}, {"role": "assistant", "content": POEM}]
    assert agent.last_response.message == "".join(chunks)
    assert agent.last_response.output_tokens > 0


async def test_streamed_turn_is_recorded_in_the_cost_tracker() -> None:
    agent, _ = poet()

    _ = [chunk async for chunk in agent.chat_stream("poem")]

    (record,) = agent.cost_tracker.records
    assert record.trace_id == agent.last_response.trace_id and record.output_tokens > 0


async def test_achat_stream_is_an_alias_of_chat_stream() -> None:
    agent, _ = poet()

    chunks = [chunk async for chunk in agent.achat_stream("Tell me a joke")]

    assert "".join(chunks) == POEM and len(chunks) > 1


async def test_arun_stream_delegates_to_chat_stream() -> None:
    agent, _ = poet()

    chunks = [chunk async for chunk in agent.arun_stream("poem", system_prompt="Be poetic.")]

    assert "".join(chunks) == POEM
    assert agent.provider.calls[0].messages[0]["content"] == "Be poetic."


def test_run_stream_iterates_chunks_synchronously() -> None:
    agent, _ = poet()

    chunks = list(agent.run_stream("Explain REST vs GraphQL"))

    assert len(chunks) > 3 and "".join(chunks) == POEM
    assert agent.last_response.message == POEM


def test_run_stream_inside_a_running_loop_works() -> None:
    agent, _ = poet()

    async def cell() -> list[str]:
        return list(agent.run_stream("poem"))  # as in a Jupyter cell

    assert "".join(asyncio.run(cell())) == POEM


async def test_streaming_a_turn_that_calls_a_tool_first_streams_the_final_answer(calc_tool) -> None:
    fake = ScriptedProvider(
        [tool_call("calculator", expression="249.99 * 0.85"), "The price is $212.49 after the discount."], chunk_size=1
    )
    agent = ChatAgent(provider=fake, tools=[calc_tool])
    history_at_first_chunk = None

    chunks = []
    async for chunk in agent.chat_stream("15% off $249.99?"):
        if history_at_first_chunk is None:
            history_at_first_chunk = len(agent.history)
        chunks.append(chunk)

    assert history_at_first_chunk == 0
    assert len(chunks) > 3 and "".join(chunks) == "The price is $212.49 after the discount."
    assert agent.last_response.tool_calls[0].output == "212.4915"
    assert agent.last_response.iterations == 1
    assert_valid_history(agent.history)


async def test_text_before_a_tool_call_is_streamed_apart_from_the_final_answer(calc_tool) -> None:
    preamble = ScriptedReply(text="Let me calculate.", tool_calls=tool_call("calculator", expression="2+2").tool_calls)
    agent = ChatAgent(provider=ScriptedProvider([preamble, "It is 4."]), tools=[calc_tool])

    chunks = [chunk async for chunk in agent.chat_stream("2+2?")]

    assert "".join(chunks) == "Let me calculate.\n\nIt is 4."
    assert agent.last_response.message == "It is 4."


async def test_streaming_with_the_prompted_protocol_never_shows_tool_call_json(calc_tool) -> None:
    fake = ScriptedProvider(
        ['{"tool": "calculator", "input": {"expression": "6 * 7"}}', "Six times seven is 42."], chunk_size=1
    )
    agent = ChatAgent(provider=fake, tools=[calc_tool], native_tools=False)

    chunks = [chunk async for chunk in agent.chat_stream("6*7?")]

    assert "".join(chunks) == "Six times seven is 42."
    assert agent.last_response.tool_calls[0].output == "42"


async def test_streaming_with_the_prompted_protocol_shows_a_json_answer_that_is_not_a_tool_call(calc_tool) -> None:
    fake = ScriptedProvider(['{"answer": 42}'], chunk_size=1)
    agent = ChatAgent(provider=fake, tools=[calc_tool], native_tools=False)

    chunks = [chunk async for chunk in agent.chat_stream("json")]

    assert "".join(chunks) == '{"answer": 42}'


async def test_streaming_the_iteration_cap_streams_the_closing_message(calc_tool) -> None:
    fake = ScriptedProvider(default=lambda messages: tool_call("calculator", expression="1"))
    agent = ChatAgent(provider=fake, tools=[calc_tool], max_tool_iterations=1)

    chunks = [chunk async for chunk in agent.chat_stream("loop")]

    assert "".join(chunks) == agent.last_response.message and "max_tool_iterations=1" in chunks[-1]


async def test_closing_a_stream_early_still_records_the_whole_turn() -> None:
    agent, _ = poet()
    stream = agent.chat_stream("poem")

    first = await stream.__anext__()
    await stream.aclose()

    assert POEM.startswith(first) and first != POEM
    assert agent.history[-1] == {"role": "assistant", "content": POEM}
    assert agent.last_response.message == POEM
    assert agent.cost_tracker.calls == 1


def test_breaking_out_of_run_stream_still_records_the_turn() -> None:
    agent, _ = poet()
    chunks = agent.run_stream("poem")

    next(chunks)
    chunks.close()

    assert agent.history[-1]["content"] == POEM
    assert agent.last_response.message == POEM


async def test_cancelling_the_consumer_of_a_stream_leaves_history_unchanged() -> None:
    agent, fake = poet("after")
    fake.delay = 0.02
    got_first = asyncio.Event()

    async def consume() -> None:
        async for _chunk in agent.chat_stream("poem"):
            got_first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(got_first.wait(), 60)  # 60 s only guards against a hang
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert agent.history == []
    fake.delay = 0
    assert (await agent.achat("again")).message == "after"


async def test_provider_error_mid_stream_reaches_the_consumer_and_keeps_history() -> None:
    class FailingMidStream(ScriptedProvider):
        async def stream(self, messages, tools, params):
            yield "partial "
            yield "answer"
            raise ProviderError("stream broke", provider="scripted", partial_text="partial answer")

    agent = ChatAgent(provider=FailingMidStream())
    chunks = []

    with pytest.raises(ProviderError, match="stream broke"):
        async for chunk in agent.chat_stream("hi"):
            chunks.append(chunk)

    assert chunks == ["partial ", "answer"]
    assert agent.history == [] and agent.last_response is None


async def test_chat_stream_with_empty_message_is_a_value_error() -> None:
    agent, fake = poet()

    with pytest.raises(ValueError):
        async for _ in agent.chat_stream("   "):
            pass

    assert fake.calls == []


async def test_streamed_summary_turn_counts_the_summary_and_streams_only_the_answer() -> None:
    def model(messages):
        if messages[0]["content"].startswith("You write faithful"):
            return ScriptedReply(text="SUMMARY TEXT")
        return "streamed answer here"

    agent = ChatAgent(provider=ScriptedProvider(default=model), memory="summary", memory_k=1)
    await agent.achat("first")

    chunks = [chunk async for chunk in agent.chat_stream("second")]

    assert "".join(chunks) == "streamed answer here"
    assert agent.summary == "SUMMARY TEXT"
    assert [r["name"] for r in agent.last_response.trace] == ["chat", "summary"]


async def test_two_concurrent_streams_on_one_agent_are_serialised() -> None:
    agent = ChatAgent(provider=ScriptedProvider(delay=0.001))

    async def collect(message: str) -> str:
        return "".join([chunk async for chunk in agent.chat_stream(message)])

    answers = await asyncio.gather(collect("one two three"), collect("four five six"))

    assert answers == ["You said: one two three", "You said: four five six"]
    assert [m["content"] for m in agent.history] == ["one two three", answers[0], "four five six", answers[1]]


def test_streaming_tool_turn_with_a_tool_defined_as_a_coroutine() -> None:
    async def lookup(key: str) -> str:
        """Async lookup."""
        await asyncio.sleep(0)
        return key * 2

    tool = StructuredTool.from_function(coroutine=lookup, name="lookup", description="Lookup")
    agent = ChatAgent(
        provider=ScriptedProvider([tool_call("lookup", key="ab"), "It is abab, as computed."]), tools=[tool]
    )

    chunks = list(agent.run_stream("lookup ab"))

    assert "".join(chunks) == "It is abab, as computed." and len(chunks) > 1
    assert agent.last_response.tool_calls[0].output == "abab"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_during_run_stream_cancels_the_turn_and_keeps_history() -> None:
    assert threading.current_thread() is threading.main_thread()
    fake = ScriptedProvider(["first answer", POEM, "after"], chunk_size=1)
    agent = ChatAgent(provider=fake)
    agent.chat("one")
    before = agent.history
    fake.delay = 0.2  # the main thread waits on the loop nearly all the time, where Ctrl-C lands
    chunks = []

    with pytest.raises(KeyboardInterrupt):
        for chunk in agent.run_stream("two"):
            chunks.append(chunk)
            if len(chunks) == 2:
                threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start()

    assert 2 <= len(chunks) < len(POEM.split())
    assert agent.history == before and agent.last_response.message == "first answer"
    fake.delay = 0
    assert agent.chat("three").message == "after"


class InterruptingStream(ScriptedProvider):
    """Streams one chunk, then raises KeyboardInterrupt inside the turn (a tool or a hook the user wrote)."""

    async def stream(self, messages, tools, params):  # noqa: ANN001, ANN201
        yield "partial "
        await asyncio.sleep(0.05)  # the consumer is waiting for the next chunk when the interrupt comes
        raise KeyboardInterrupt


def test_an_interrupt_raised_inside_a_streamed_turn_leaves_no_unretrieved_task_exception() -> None:
    """The turn's task ends holding the KeyboardInterrupt, which escaped the loop to the caller: the stream
    retrieves it, so asyncio reports nothing when the task is collected (tests/strict_asyncio.py fails this
    test on such a report)."""
    import gc

    from aiforge.core.aio import iterate_sync, run_sync

    agent = ChatAgent(provider=InterruptingStream())
    stream = agent.stream_turn("hello")
    chunks = iterate_sync(stream)
    interrupts = 0
    try:  # as %%chat and the panel consume it; not pytest.raises, whose ExceptionInfo keeps the task alive
        for _chunk in chunks:
            pass
    except KeyboardInterrupt:
        interrupts += 1
        run_sync(stream.cancel())
        chunks.close()
    assert interrupts == 1
    assert agent.history == []
    del agent, stream, chunks
    gc.collect()


# ---------------------------------------------------------------------------
# The streamed turn as one object (what ChatPanel and %%chat consume)
# ---------------------------------------------------------------------------


async def test_stream_turn_yields_the_text_then_holds_the_turns_response() -> None:
    agent, _ = poet()
    stream = agent.stream_turn("poem")

    chunks = [chunk async for chunk in stream]

    assert stream.response is agent.last_response
    assert stream.response.message == "".join(chunks) == POEM


async def test_stream_turn_response_is_none_until_the_stream_ends() -> None:
    agent, _ = poet()
    stream = agent.stream_turn("poem")
    deltas = aiter(stream)

    await anext(deltas)

    assert stream.response is None
    await deltas.aclose()


async def test_cancelling_a_stream_turn_leaves_history_and_last_response_unchanged() -> None:
    agent, _ = poet(POEM)
    agent.chat("first")
    before, last = agent.history, agent.last_response
    stream = agent.stream_turn("poem")
    deltas = aiter(stream)
    await anext(deltas)

    await stream.cancel()

    assert agent.history == before and agent.last_response is last
    assert stream.response is None
    with pytest.raises(StopAsyncIteration):
        await anext(deltas)


async def test_a_stream_turn_is_iterated_once() -> None:
    agent, _ = poet()
    stream = agent.stream_turn("poem")
    _ = [chunk async for chunk in stream]

    with pytest.raises(RuntimeError, match="iterated once"):
        aiter(stream)


async def test_stream_turn_reports_each_tool_call_before_the_answer_streams(calc_tool) -> None:
    preamble = ScriptedReply(text="Let me calculate.", tool_calls=tool_call("calculator", expression="2+2").tool_calls)
    agent = ChatAgent(provider=ScriptedProvider([preamble, "It is 4."], chunk_size=1), tools=[calc_tool])
    stream = agent.stream_turn("2+2?")
    events: list[object] = []
    stream.on_tool = events.append

    async for chunk in stream:
        events.append(chunk)

    tool_at = next(i for i, e in enumerate(events) if isinstance(e, dict))
    assert events[tool_at] == {
        "id": agent.last_response.tool_calls[0].id, "tool": "calculator", "input": {"expression": "2+2"},
        "output": "4", "error": False,
    }
    assert "".join(e for e in events[:tool_at] if isinstance(e, str)) == "Let me calculate."
    assert "".join(e for e in events[tool_at + 1 :] if isinstance(e, str)) == "\n\nIt is 4."


async def test_chat_stream_yields_only_text_when_tools_run(calc_tool) -> None:
    provider = ScriptedProvider([tool_call("calculator", expression="2+2"), "It is 4."])
    agent = ChatAgent(provider=provider, tools=[calc_tool])

    chunks = [chunk async for chunk in agent.chat_stream("2+2?")]

    assert all(isinstance(c, str) for c in chunks) and "".join(chunks) == "It is 4."


class ClosingWatched(Provider):
    """A stream that notes which task runs its code: the turn's own, or one the garbage collector made to close it."""

    supports_streaming = True
    free = True

    def __init__(self) -> None:
        self.tasks: dict[str, asyncio.Task | None] = {}

    async def complete(self, messages, tools, params) -> Completion:
        return Completion(text="unused", finish_reason="stop")

    async def stream(self, messages, tools, params):
        self.tasks["streamed"] = asyncio.current_task()
        try:
            yield "Hello."
            yield Completion(text="Hello.", finish_reason="stop")
        finally:
            self.tasks["closed"] = asyncio.current_task()


async def test_the_turn_closes_the_provider_stream_itself() -> None:
    # The turn returned on the final Completion and left the stream suspended at it: the garbage collector
    # handed its closing to a task of its own, which a script's loop never ran ("Task was destroyed").
    provider = ClosingWatched()
    agent = ChatAgent(provider=provider)

    assert [chunk async for chunk in agent.chat_stream("hi")] == ["Hello."]

    assert provider.tasks["closed"] is provider.tasks["streamed"]


# --- a stream that ends before the reply does ---


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_stream_ended_without_a_finish_reason_fails_and_is_neither_kept_nor_cached(
    provider: str, tmp_path: Path
) -> None:
    # A broken upstream: OpenAI's role chunk then [DONE], Anthropic's message_start then the end of the body.
    # The turn took the empty text for a reply: message '' in the history, and in the cache, so the same
    # chat() later answered '' with cached=True without asking.
    prefix = provider.upper()
    with LLMServer() as server:
        server.enqueue(Reply(text="Paris.", end_after_chunks=1), Reply(text="Paris."))
        url = server.anthropic_base_url if provider == "anthropic" else server.openai_base_url
        settings = {f"{prefix}_API_KEY": "sk-test", f"{prefix}_BASE_URL": url}
        agent = ChatAgent(provider=provider, CACHE=str(tmp_path / "cache.sqlite"), MAX_RETRIES=0, **settings)

        with pytest.raises(ProviderError, match="the stream ended before the reply was complete"):
            list(agent.run_stream("What is the capital of France?"))
        assert agent.history == []

        response = agent.chat("What is the capital of France?")
        assert (response.message, response.cached, server.request_count) == ("Paris.", False, 2)


class NoFinishReason(Provider):
    """A provider of the user's own that never says why a reply ended."""

    free = True

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, messages, tools, params) -> Completion:
        self.calls += 1
        return Completion(text=f"reply {self.calls}")


def test_only_a_reply_with_a_finish_reason_is_cached(tmp_path: Path) -> None:
    provider = NoFinishReason()
    agent = ChatAgent(provider=provider, CACHE=str(tmp_path / "cache.sqlite"), memory="none")

    assert [agent.chat("hi").message for _ in range(2)] == ["reply 1", "reply 2"]
    assert provider.calls == 2
