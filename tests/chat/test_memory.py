"""Memory modes on units: buffer trimming, summary compaction and "none" never split a tool exchange."""

from __future__ import annotations

import random

import pytest

from aiforge import ChatAgent
from aiforge.chat.memory import (
    SUMMARY_MAX_WORDS,
    limit_words,
    split_for_summary,
    split_units,
    transcript,
    trim_to_units,
)
from aiforge.chat.prompts import SUMMARY_PREFIX
from aiforge.core.types import ProviderError, Usage
from aiforge.providers.scripted import ScriptedProvider, ScriptedReply, tool_call, tool_calls
from tests.chat.checks import assert_valid_context, assert_valid_history

SUMMARIZER = "You write faithful, compact conversation summaries."


def is_summary_request(messages) -> bool:
    return messages[0]["content"] == SUMMARIZER


def answer_or_summarise(messages):
    if is_summary_request(messages):
        return "SUMMARY"
    return f"re: {messages[-1]['content']}"


def user(text):
    return {"role": "user", "content": text}


def assistant(text, *calls):
    message = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [{"id": c, "name": "t", "arguments": {}} for c in calls]
    return message


def result(call_id):
    return {"role": "tool", "tool_call_id": call_id, "name": "t", "content": "r"}


# ---------------------------------------------------------------------------
# Units
# ---------------------------------------------------------------------------


def test_split_units_keeps_a_tool_call_with_all_its_results() -> None:
    history = [user("q"), assistant("", "a", "b"), result("a"), result("b"), assistant("done")]

    assert [len(u) for u in split_units(history)] == [1, 3, 1]


def test_trim_to_units_never_cuts_a_tool_exchange() -> None:
    history = [user("q"), assistant("", "a", "b"), result("a"), result("b"), assistant("done")]

    trimmed = trim_to_units(history, 3)

    assert trimmed == []  # the last 3 messages would start inside the exchange; no valid window remains


def test_trim_to_units_keeps_the_newest_whole_units_starting_with_a_user_message() -> None:
    history = [user("q1"), assistant("a1"), user("q2"), assistant("", "x"), result("x"), assistant("a2")]

    assert trim_to_units(history, 4) == history[2:]
    assert trim_to_units(history, 5) == history[2:]  # q1's answer alone would start with an assistant


def test_trim_to_units_returns_short_histories_unchanged() -> None:
    history = [user("q"), assistant("a")]

    assert trim_to_units(history, 20) is history


def test_split_for_summary_returns_older_and_recent_parts_of_the_history() -> None:
    history = [user("q1"), assistant("a1"), user("q2"), assistant("a2"), user("q3"), assistant("a3")]

    older, recent = split_for_summary(history, 2)

    assert (older, recent) == (history[:4], history[4:])


def test_transcript_renders_tool_calls_and_results() -> None:
    history = [
        user("2+2?"),
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "2+2"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "calculator", "content": "4"},
        assistant("4"),
    ]

    assert transcript(history).splitlines() == [
        "User: 2+2?",
        "Assistant: [called calculator({'expression': '2+2'})]",
        "Tool result (calculator): 4",
        "Assistant: 4",
    ]


def test_limit_words_cuts_long_text_to_the_summary_limit() -> None:
    text = " ".join(f"w{i}" for i in range(700))

    limited = limit_words(text)

    assert SUMMARY_MAX_WORDS == 500
    assert len(limited.split()) == 501 and limited.endswith(" …")  # 500 words and the ellipsis


# ---------------------------------------------------------------------------
# buffer
# ---------------------------------------------------------------------------


def test_buffer_sends_system_prompt_plus_last_memory_k_messages() -> None:
    fake = ScriptedProvider()
    agent = ChatAgent(provider=fake, memory="buffer", memory_k=4)

    for i in range(1, 5):
        agent.chat(f"q{i}")

    sent = [m["content"] for m in fake.calls[-1].messages]
    assert sent[0] == agent.system_prompt
    assert sent[1:] == ["q2", "You said: q2", "q3", "You said: q3", "q4"]


def test_buffer_history_never_exceeds_memory_k_messages() -> None:
    agent = ChatAgent(provider=ScriptedProvider(), memory_k=5)

    for i in range(6):
        agent.chat(f"message {i}")
        assert len(agent.history) <= 5


def test_buffer_keeps_all_messages_below_the_limit() -> None:
    agent = ChatAgent(provider=ScriptedProvider(), memory_k=20)

    for i in range(10):
        agent.chat(f"message {i}")

    assert len(agent.history) == 20


def test_buffer_trimming_drops_a_tool_exchange_whole(calc_tool) -> None:
    fake = ScriptedProvider(
        [tool_calls(("calculator", {"expression": "1+1"}), ("calculator", {"expression": "2+2"})), "2 and 4"]
    )
    agent = ChatAgent(provider=fake, tools=[calc_tool], memory_k=3)
    agent.chat("compute")
    agent.chat("next")

    assert_valid_history(agent.history)
    assert [m["role"] for m in agent.history] == ["user", "assistant"]
    assert_valid_context(fake.calls[-1].messages)


# ---------------------------------------------------------------------------
# summary
# ---------------------------------------------------------------------------


def test_summary_is_not_made_until_history_exceeds_twice_memory_k() -> None:
    fake = ScriptedProvider(default=answer_or_summarise)
    agent = ChatAgent(provider=fake, memory="summary", memory_k=2)

    agent.chat("q1")
    agent.chat("q2")  # 4 messages == 2 x memory_k: no summary yet

    assert not any(is_summary_request(c.messages) for c in fake.calls)
    assert agent.summary is None and len(agent.history) == 4


def test_summary_triggers_when_history_exceeds_twice_memory_k() -> None:
    fake = ScriptedProvider(default=answer_or_summarise)
    agent = ChatAgent(provider=fake, memory="summary", memory_k=2)

    for i in range(1, 4):
        agent.chat(f"q{i}")

    summary_calls = [c for c in fake.calls if is_summary_request(c.messages)]
    assert len(summary_calls) == 1
    prompt = summary_calls[0].messages[-1]["content"]
    assert "User: q1\nAssistant: re: q1\nUser: q2\nAssistant: re: q2" in prompt and "q3" not in prompt
    assert agent.summary == "SUMMARY"


def test_summary_keeps_the_recent_memory_k_messages_verbatim() -> None:
    fake = ScriptedProvider(default=answer_or_summarise)
    agent = ChatAgent(provider=fake, memory="summary", memory_k=4)

    for i in range(1, 6):
        agent.chat(f"q{i}")  # 10 messages > 8

    assert [m["content"] for m in agent.history] == ["q4", "re: q4", "q5", "re: q5"]


def test_summary_is_injected_as_a_system_message_after_the_system_prompt() -> None:
    fake = ScriptedProvider(default=answer_or_summarise)
    agent = ChatAgent(provider=fake, memory="summary", memory_k=2, system_prompt="Base prompt.")
    for i in range(1, 4):
        agent.chat(f"q{i}")

    agent.chat("q4")

    sent = fake.calls[-1].messages
    assert sent[0] == {"role": "system", "content": "Base prompt."}
    assert sent[1] == {"role": "system", "content": SUMMARY_PREFIX + "SUMMARY"}
    assert [m["content"] for m in sent[2:]] == ["q3", "re: q3", "q4"]


def test_next_summary_builds_on_the_previous_one() -> None:
    fake = ScriptedProvider(default=answer_or_summarise)
    agent = ChatAgent(provider=fake, memory="summary", memory_k=2)

    for i in range(1, 6):
        agent.chat(f"q{i}")

    second = [c for c in fake.calls if is_summary_request(c.messages)][1]
    assert "Summary so far:\nSUMMARY" in second.messages[-1]["content"]


def test_summary_cost_and_tokens_are_counted_in_the_turn_that_made_it() -> None:
    def scripted(messages):
        if is_summary_request(messages):
            return ScriptedReply(text="SUMMARY", usage=Usage(input_tokens=1000, output_tokens=100))
        return ScriptedReply(text="answer", usage=Usage(input_tokens=10, output_tokens=1))

    agent = ChatAgent(provider=ScriptedProvider(default=scripted), memory="summary", memory_k=1)
    agent.chat("q1")

    response = agent.chat("q2")  # 4 messages > 2: summarised in this turn

    assert (response.input_tokens, response.output_tokens) == (1010, 101)
    assert [r["name"] for r in response.trace if r["step"] == "model"] == ["chat", "summary"]
    assert [r.kind for r in agent.cost_tracker.records if r.trace_id == response.trace_id] == ["chat", "summary"]


def test_summary_is_limited_to_500_words() -> None:
    long_summary = " ".join(["word"] * 800)
    fake = ScriptedProvider(default=lambda m: long_summary if is_summary_request(m) else "ok")
    agent = ChatAgent(provider=fake, memory="summary", memory_k=1)

    agent.chat("q1")
    agent.chat("q2")

    assert len(agent.summary.replace("…", "").split()) == 500


def test_failed_summary_keeps_the_history_and_the_turns_answer() -> None:
    def scripted(messages):
        if is_summary_request(messages):
            raise ProviderError("summariser down", provider="scripted")
        return "fine"

    agent = ChatAgent(provider=ScriptedProvider(default=scripted), memory="summary", memory_k=1)
    agent.chat("q1")

    response = agent.chat("q2")

    assert response.message == "fine"
    assert agent.summary is None and [m["content"] for m in agent.history] == ["q1", "fine", "q2", "fine"]


def test_summary_never_leaves_an_orphan_tool_result(calc_tool) -> None:
    replies = [tool_call("calculator", expression="1+1"), "two", tool_call("calculator", expression="2+2"), "four"]
    fake = ScriptedProvider(replies, default=answer_or_summarise)
    agent = ChatAgent(provider=fake, tools=[calc_tool], memory="summary", memory_k=3)

    agent.chat("first")
    agent.chat("second")

    assert agent.summary == "SUMMARY"
    assert_valid_history(agent.history)


def test_reset_forgets_the_summary() -> None:
    agent = ChatAgent(provider=ScriptedProvider(default=answer_or_summarise), memory="summary", memory_k=1)
    agent.chat("q1")
    agent.chat("q2")

    agent.reset()

    assert agent.summary is None and agent.history == []


# ---------------------------------------------------------------------------
# none
# ---------------------------------------------------------------------------


def test_none_memory_sends_only_the_system_prompt_and_the_message() -> None:
    fake = ScriptedProvider()
    agent = ChatAgent(provider=fake, memory="none")

    agent.chat("first")
    agent.chat("second")

    assert [m["content"] for m in fake.calls[-1].messages] == [agent.system_prompt, "second"]
    assert agent.history == []


def test_none_memory_still_runs_tools_within_a_turn(calc_tool) -> None:
    fake = ScriptedProvider([tool_call("calculator", expression="6*7"), "42"])
    agent = ChatAgent(provider=fake, memory="none", tools=[calc_tool])

    response = agent.chat("6*7?")

    assert response.message == "42" and response.tool_calls[0].output == "42"
    assert fake.calls[1].messages[-1]["content"] == "42" and agent.history == []


# ---------------------------------------------------------------------------
# Property: no memory_k, mode or tool pattern leaves an invalid history
# ---------------------------------------------------------------------------


def random_model(rng: random.Random):
    """A model that randomly answers, calls one tool, or calls several at once."""

    def reply(messages):
        if is_summary_request(messages):
            return "SUMMARY"
        roll = rng.random()
        if roll < 0.35:
            return f"answer {rng.randint(0, 999)}"
        if roll < 0.7:
            return tool_call("calculator", expression=f"{rng.randint(1, 9)}+1")
        return tool_calls(*[("calculator", {"expression": f"{i}*2"}) for i in range(rng.randint(2, 4))])

    return reply


@pytest.mark.parametrize("mode", ["buffer", "summary"])
def test_memory_never_orphans_tool_calls_for_any_memory_k(mode: str, calc_tool) -> None:
    for memory_k in range(1, 13):
        rng = random.Random(memory_k * 7919 + len(mode))
        fake = ScriptedProvider(default=random_model(rng))
        agent = ChatAgent(provider=fake, tools=[calc_tool], memory=mode, memory_k=memory_k, max_tool_iterations=3)
        for turn in range(25):
            agent.chat(f"turn {turn}")
            history = agent.history
            assert_valid_history(history)
            limit = memory_k if mode == "buffer" else 2 * memory_k
            assert len(history) <= limit, (memory_k, turn, len(history))
        for call in fake.calls:
            if not is_summary_request(call.messages):
                assert_valid_context(call.messages)
