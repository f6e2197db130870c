"""Persistent sessions and the turn log: restarts, concurrent writers, failed turns, search, export and import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import aiforge
from aiforge import ChatAgent, ScriptedProvider
from aiforge.core.types import CallParams, Completion, Message, ProviderError, ToolSpec
from aiforge.providers.base import Provider
from aiforge.store.access import store_of
from aiforge.store.sessions import Sessions
from fakellm import LLMServer, Reply

ROOT = Path(__file__).resolve().parents[3]


def _valid(history: list[dict]) -> None:
    """User and assistant messages alternate, starting with the user: no half-saved turn."""
    assert [m["role"] for m in history] == ["user", "assistant"] * (len(history) // 2)


def test_a_session_continues_in_a_new_agent_and_reset_keeps_the_old_conversation_in_the_log() -> None:
    first = ChatAgent(provider=ScriptedProvider(), session="notes")
    first.chat("My name is Ada.")
    old_id = first.conversation_id

    again = ChatAgent(provider=ScriptedProvider(), session="notes")
    assert again.conversation_id == old_id
    assert [m["content"] for m in again.history] == ["My name is Ada.", "You said: My name is Ada."]

    again.reset()
    again.chat("Hello")
    third = ChatAgent(provider=ScriptedProvider(), session="notes")
    assert third.conversation_id != old_id and len(third.history) == 2
    logged = aiforge.logs("notes")
    assert list(logged["conversation_id"]) == [third.conversation_id, old_id]


@pytest.mark.slow
def test_a_restarted_process_continues_the_session_and_the_provider_receives_the_history(tmp_path: Path) -> None:
    store = tmp_path / "sessions.sqlite"
    script = textwrap.dedent(
        """
        import sys
        from aiforge import ChatAgent
        agent = ChatAgent(session="support", provider="openai", MAX_RETRIES=0)
        print(agent.chat(sys.argv[1]).conversation_id)
        """
    )
    with LLMServer() as server:
        env = {
            **os.environ, "AIFORGE_STORE": str(store), "OPENAI_API_KEY": "sk-secret-restart-key",
            "OPENAI_BASE_URL": server.openai_base_url, "PYTHONPATH": str(ROOT),
        }
        server.enqueue(Reply("Noted: order 42."), Reply("Your order is 42."))
        ids = [
            subprocess.run(
                [sys.executable, "-c", script, message], env=env, capture_output=True, text=True, check=True
            ).stdout.strip()
            for message in ("My order is 42.", "What is my order?")
        ]
        second = server.requests[1].messages
    assert ids[0] == ids[1]
    assert [m["content"] for m in second[1:]] == ["My order is 42.", "Noted: order 42.", "What is my order?"]
    assert b"sk-secret-restart-key" not in b"".join(p.read_bytes() for p in tmp_path.iterdir())


def test_two_agents_of_one_process_share_a_session_turn_by_turn() -> None:
    agents = [ChatAgent(provider=ScriptedProvider(), session="shared", memory_k=1000) for _ in range(2)]

    def talk(agent: ChatAgent, who: str) -> None:
        for i in range(15):
            agent.chat(f"{who} {i}")

    threads = [threading.Thread(target=talk, args=(agent, who)) for agent, who in zip(agents, "ab", strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    stored = ChatAgent(provider=ScriptedProvider(), session="shared").history
    _valid(stored)
    assert len(stored) == 60 and agents[0].history == agents[1].history == stored


@pytest.mark.slow
def test_two_processes_writing_one_session_leave_a_whole_history(tmp_path: Path) -> None:
    store = tmp_path / "race.sqlite"
    script = textwrap.dedent(
        """
        import sys
        from aiforge import ChatAgent, ScriptedProvider
        agent = ChatAgent(session="race", provider=ScriptedProvider(), memory_k=1000)
        for i in range(20):
            agent.chat(f"{sys.argv[1]} {i}")
        """
    )
    env = {**os.environ, "AIFORGE_STORE": str(store), "PYTHONPATH": str(ROOT)}
    workers = [subprocess.Popen([sys.executable, "-c", script, who], env=env) for who in "ab"]
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0]

    history = ChatAgent(provider=ScriptedProvider(), session="race", STORE=str(store)).history
    _valid(history)
    # However the two interleave, no turn overwrites another: every turn of both is in the history, once,
    # and each process's own turns keep their order.
    asked = [m["content"] for m in history if m["role"] == "user"]
    assert sorted(asked) == sorted(f"{who} {i}" for who in "ab" for i in range(20))
    for who in "ab":
        assert [text for text in asked if text.startswith(who)] == [f"{who} {i}" for i in range(20)]
    assert len(aiforge.logs("race", store=str(store))) == 40


class _SavedMeanwhile(ScriptedProvider):
    """Another process saves the session while this turn's model call is out (its store write, made here)."""

    def __init__(self, other: Sessions) -> None:
        super().__init__()
        self.other = other

    async def complete(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> Completion:
        stored = self.other.load("meanwhile")
        assert stored is not None
        self.other.save(
            "meanwhile", conversation_id=stored.conversation_id,
            history=[*stored.history, {"role": "user", "content": "theirs"}, {"role": "assistant", "content": "ok"}],
            summary=None, memory_mode="buffer",
        )
        return await super().complete(messages, tools, params)


@pytest.mark.parametrize("memory_k", [20, 4])
def test_a_turn_saved_by_another_process_during_this_turn_is_kept_and_this_turn_follows_it(memory_k: int) -> None:
    ChatAgent(provider=ScriptedProvider(), session="meanwhile").chat("first")
    other = Sessions(store_of())
    agent = ChatAgent(provider=_SavedMeanwhile(other), session="meanwhile", memory_k=memory_k)
    agent.chat("mine")

    everything = ["first", "You said: first", "theirs", "ok", "mine", "You said: mine"]
    expected = everything[-memory_k:]
    assert [m["content"] for m in agent.history] == expected
    assert [m["content"] for m in ChatAgent(provider=ScriptedProvider(), session="meanwhile").history] == expected
    # The model saw the history as the turn began; the other process's turn is there from the next turn on.
    assert agent.chat("next").message == "You said: next"


class _Failing(Provider):
    name = "failing"

    async def complete(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> Completion:
        raise ProviderError("the provider is down")


def test_a_failed_turn_leaves_the_stored_session_as_it_was() -> None:
    ChatAgent(provider=ScriptedProvider(), session="steady").chat("first")
    failing = ChatAgent(provider=_Failing(), session="steady")
    with pytest.raises(ProviderError):
        failing.chat("second")
    assert [m["content"] for m in ChatAgent(provider=ScriptedProvider(), session="steady").history] == [
        "first", "You said: first"
    ]
    assert list(aiforge.logs("steady")["prompt"]) == ["first"]


async def test_an_interrupted_turn_leaves_the_stored_session_as_it_was() -> None:
    await ChatAgent(provider=ScriptedProvider(), session="calm").achat("first")
    slow = ChatAgent(provider=ScriptedProvider(["a long reply " * 30], chunk_size=1, delay=0.005), session="calm")
    stream = slow.stream_turn("second")
    deltas = aiter(stream)
    await anext(deltas)

    await stream.cancel()

    stored = Sessions(store_of()).load("calm")
    assert stored is not None and stored.version == 1
    kept = ["first", "You said: first"]
    assert [m["content"] for m in stored.history] == kept == [m["content"] for m in slow.history]
    assert list(aiforge.logs("calm")["prompt"]) == ["first"]


def test_the_log_filters_searches_and_sums_costs_by_day() -> None:
    agent = ChatAgent(provider=ScriptedProvider(), session="log", MODEL="m-1")
    agent.chat("the refund policy please")
    agent.chat("shipping times")
    ChatAgent(provider=ScriptedProvider(), MODEL="m-2").chat("a refund for order 7")

    everything = aiforge.logs()
    assert list(everything["prompt"]) == ["a refund for order 7", "shipping times", "the refund policy please"]
    assert list(aiforge.logs(search="refund")["model"]) == ["m-2", "m-1"]
    assert list(aiforge.logs(search="refund", session="log")["prompt"]) == ["the refund policy please"]
    assert list(aiforge.logs(model="m-2")["session"]) == [None]
    assert len(aiforge.logs(since="2000-01-01", until="2001-01-01")) == 0
    row = everything.iloc[0]
    assert row["messages_in"][-1] == {"role": "user", "content": "a refund for order 7"}
    assert row["messages_out"] == [{"role": "assistant", "content": "You said: a refund for order 7"}]
    assert row["trace"][0]["step"] == "model" and row["latency_ms"] > 0
    by_day = everything.costs_by_day()
    assert list(by_day["turns"]) == [2, 1] and list(by_day.index.get_level_values("model")) == ["m-1", "m-2"]


def test_batch_items_are_logged_unless_log_is_false() -> None:
    ChatAgent(provider=ScriptedProvider()).run_batch(["one", "two"])
    ChatAgent(provider=ScriptedProvider(), log=False).run_batch(["three"])
    ChatAgent(provider=ScriptedProvider(), log=False).chat("four")
    logged = aiforge.logs()
    assert sorted(logged["prompt"]) == ["one", "two"] and set(logged["kind"]) == {"batch"}


def test_turns_faster_than_the_log_wait_for_it_instead_of_queueing_without_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import aiforge.store.log as log_module

    agent = ChatAgent(provider=ScriptedProvider())
    agent.chat("warm-up")  # the writer thread exists and the store is open
    aiforge.logs()
    monkeypatch.setattr(log_module, "MAX_QUEUED_CHARS", 2000)  # a few rows of this test
    store = store_of()
    done: list[int] = []

    def chat_on() -> None:
        for turn in range(40):
            agent.chat(f"turn {turn}")
            done.append(turn)

    with store.write():  # the writer cannot write: a slow disk, or another process holding the file
        worker = threading.Thread(target=chat_on)
        worker.start()
        worker.join(timeout=2.0)
        blocked_at = len(done)
        assert worker.is_alive()  # blocked on the full queue, not racing ahead of the log
    worker.join()
    assert blocked_at < 40
    assert len(done) == 40
    assert [f"turn {n}" for n in range(39, -1, -1)] == list(aiforge.logs()["prompt"])[:40]


def test_store_off_logs_nothing_and_a_session_needs_it() -> None:
    ChatAgent(provider=ScriptedProvider(), STORE=False).chat("hi")
    assert len(aiforge.logs()) == 0
    with pytest.raises(aiforge.ConfigError, match="session='x' needs the STORE setting"):
        ChatAgent(provider=ScriptedProvider(), STORE=False, session="x")


def test_a_session_exports_to_markdown_and_jsonl_and_imports_again(tmp_path: Path, calc_tool) -> None:
    from aiforge.providers.scripted import tool_call

    fake = ScriptedProvider()
    fake.enqueue(tool_call("calculator", expression="6*7"), "It is 42.")
    agent = ChatAgent(provider=fake, tools=[calc_tool], session="maths")
    agent.chat("What is 6*7?")

    markdown = aiforge.export_session("maths", tmp_path / "maths.md").read_text()
    assert "## user\n\nWhat is 6*7?" in markdown and "calculator" in markdown and "It is 42." in markdown
    aiforge.export_session("maths", tmp_path / "maths.jsonl")
    assert aiforge.import_session(tmp_path / "maths.jsonl", "maths-copy") == "maths-copy"

    copy = ChatAgent(provider=ScriptedProvider(), tools=[calc_tool], session="maths-copy")
    assert copy.history == agent.history and copy.conversation_id == agent.conversation_id
    assert set(aiforge.sessions()) == {"maths", "maths-copy"}
    lines = (tmp_path / "maths.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["aiforge_session"] == "maths" and len(lines) == 1 + len(agent.history)


def test_a_chat_panel_continues_a_session(monkeypatch: pytest.MonkeyPatch) -> None:
    from aiforge import ChatPanel

    monkeypatch.setenv("AIFORGE_PROVIDER", "scripted")
    ChatAgent(session="panel").chat("Remember the blue door.")
    panel = ChatPanel(tools=None, session="panel")
    assert panel.agent.history[0]["content"] == "Remember the blue door."
    with pytest.raises(ValueError, match="pass session= to the ChatAgent"):
        ChatPanel(ChatAgent(), session="panel")
