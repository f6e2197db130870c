"""The response cache through the real openai SDK: hits make no request (also in another process), cost 0 and
are marked; only complete, successful, tool-free replies are stored; no key ever reaches the file."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from aiforge import ChatAgent
from aiforge.core.errors import OutputRefusedError
from aiforge.core.types import ConfigError
from fakellm import Fault, LLMServer, Reply, ToolCallSpec

KEY = "sk-test-key-never-stored-0123456789"
ITEMS = [f"question {i}" for i in range(6)]


class Verdict(BaseModel):
    ok: bool


@pytest.fixture
def srv() -> Iterator[LLMServer]:
    with LLMServer(strict=True) as server:
        yield server


def agent(server: LLMServer, **settings: object) -> ChatAgent:
    settings = {"TEMPERATURE": 0, **settings}
    return ChatAgent(
        provider="openai", OPENAI_API_KEY=KEY, OPENAI_BASE_URL=server.openai_base_url, MAX_RETRIES=0, **settings
    )


def test_rerunning_a_batch_with_the_cache_on_makes_no_request_and_costs_nothing(srv: LLMServer) -> None:
    first = agent(srv, CACHE="memory").run_batch(ITEMS)
    assert srv.request_count == len(ITEMS) and first.total_cost > 0 and first.cached == 0
    again = agent(srv, CACHE="memory").run_batch(ITEMS)
    assert srv.request_count == len(ITEMS)
    assert [r.message for r in again.results] == [r.message for r in first.results]
    assert again.total_cost == 0 and again.cached == len(ITEMS)
    hit = again.results[0]
    assert hit.cached and hit.cost == 0 and hit.cached_cost == pytest.approx(first.results[0].cost)
    # the row's record, after any wait for a free worker (a busy machine adds one before it)
    served = [record for record in hit.trace if record["step"] != "wait"]
    assert [r["step"] for r in served] == ["cache"] and served[0]["cached_cost"] == hit.cached_cost
    frame = again.to_dataframe()
    assert frame["cached"].tolist() == [True] * len(ITEMS) and frame["cost"].sum() == 0


def test_a_hit_is_not_counted_by_the_cost_tracker(srv: LLMServer) -> None:
    agent(srv, CACHE="memory").run_batch(ITEMS[:2])
    cached = agent(srv, CACHE="memory")
    cached.run_batch(ITEMS[:2])
    assert cached.cost_tracker.session_total == 0 and cached.cost_tracker.calls == 0


def test_cache_false_on_run_batch_turns_the_agents_cache_off(srv: LLMServer) -> None:
    cached = agent(srv, CACHE="memory")
    cached.run_batch(ITEMS[:3])
    cached.run_batch(ITEMS[:3], cache=False)
    assert srv.request_count == 6


def test_run_batch_cache_argument_uses_that_file(srv: LLMServer, tmp_path: Path) -> None:
    plain = agent(srv)
    plain.run_batch(ITEMS, cache=tmp_path / "c.sqlite")
    assert plain.run_batch(ITEMS, cache=tmp_path / "c.sqlite").cached == len(ITEMS)
    assert srv.request_count == len(ITEMS)


def test_the_key_is_the_whole_context_model_and_parameters(srv: LLMServer) -> None:
    srv.default = lambda req: Reply(output={"ok": True}) if req.output_schema else None
    agent(srv, CACHE="memory").run_batch(ITEMS[:2])
    agent(srv, CACHE="memory", TEMPERATURE=0.5).run_batch(ITEMS[:2])
    agent(srv, CACHE="memory", MODEL="gpt-4o").run_batch(ITEMS[:2])
    agent(srv, CACHE="memory").run_batch(ITEMS[:2], output=Verdict)
    ChatAgent(
        "Answer in French.", provider="openai", OPENAI_API_KEY=KEY, OPENAI_BASE_URL=srv.openai_base_url,
        TEMPERATURE=0, CACHE="memory",
    ).run_batch(ITEMS[:2])
    assert srv.request_count == 10


def test_chat_turns_hit_only_for_the_same_conversation_so_far(srv: LLMServer) -> None:
    one, two = agent(srv, CACHE="memory"), agent(srv, CACHE="memory")
    assert [one.chat(t).message for t in ("hi", "more")] == [two.chat(t).message for t in ("hi", "more")]
    assert srv.request_count == 2 and two.last_response.cached
    assert [m["content"] for m in two.history] == ["hi", "echo: hi", "more", "echo: more"]
    two.chat("different")
    assert srv.request_count == 3


def test_a_streamed_hit_streams_the_stored_reply(srv: LLMServer) -> None:
    agent(srv, CACHE="memory").chat("hi")
    cached = agent(srv, CACHE="memory")
    assert "".join(cached.run_stream("hi")) == "echo: hi" and cached.last_response.cached
    assert srv.request_count == 1


@pytest.mark.parametrize(
    "reply",
    [
        Fault(500),
        Reply(text="cut of", stop_reason="length"),
    ],
    ids=["error", "truncated"],
)
def test_errors_and_truncated_replies_are_not_stored(srv: LLMServer, reply: Reply | Fault) -> None:
    srv.enqueue(reply)
    agent(srv, CACHE="memory").run_batch(ITEMS[:1])
    agent(srv, CACHE="memory").run_batch(ITEMS[:1])
    assert srv.request_count == 2


def test_a_refusal_is_not_stored(srv: LLMServer) -> None:
    srv.enqueue(Reply(refusal="I cannot judge that."))
    with pytest.raises(OutputRefusedError):
        agent(srv, CACHE="memory", output_retries=0).chat("judge", output=Verdict)
    srv.enqueue(Reply(output={"ok": True}))
    assert agent(srv, CACHE="memory").chat("judge", output=Verdict).output == Verdict(ok=True)
    assert srv.request_count == 2


def test_a_cached_structured_reply_is_validated_again(srv: LLMServer) -> None:
    srv.default = lambda req: Reply(output={"ok": True})
    agent(srv, CACHE="memory").run_batch(ITEMS[:2], output=Verdict)
    again = agent(srv, CACHE="memory").run_batch(ITEMS[:2], output=Verdict)
    assert [r.output for r in again.results] == [Verdict(ok=True)] * 2 and again.cached == 2
    assert srv.request_count == 2


def test_turns_that_ran_a_tool_are_not_stored(srv: LLMServer) -> None:
    def clock() -> str:
        """The current time."""
        return "12:00"

    for _ in range(2):
        srv.enqueue(Reply(tool_calls=[ToolCallSpec("clock", "{}")]), Reply(text="It is noon."))
        tooled = ChatAgent(
            tools=[clock], provider="openai", OPENAI_API_KEY=KEY, OPENAI_BASE_URL=srv.openai_base_url,
            TEMPERATURE=0, CACHE="memory",
        )
        assert tooled.chat("time?").message == "It is noon." and not tooled.last_response.cached
    assert srv.request_count == 4


CHILD = """
import sys
from aiforge import ChatAgent
agent = ChatAgent(provider="openai", OPENAI_API_KEY=sys.argv[1], OPENAI_BASE_URL=sys.argv[2], TEMPERATURE=0,
                  MAX_RETRIES=0, CACHE=sys.argv[3])
batch = agent.run_batch([f"question {i}" for i in range(6)])
print(batch.cached, len(batch.results))
"""


@pytest.mark.slow
def test_hits_across_processes_make_no_request_and_the_file_holds_no_key(srv: LLMServer, tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"

    def child() -> str:
        args = [sys.executable, "-c", CHILD, KEY, srv.openai_base_url, str(path)]
        return subprocess.run(args, capture_output=True, text=True, timeout=120, check=True).stdout.split()

    assert child() == ["0", "6"]
    assert child() == ["6", "6"]
    assert srv.request_count == len(ITEMS)
    for file in tmp_path.glob("cache.sqlite*"):
        assert KEY.encode() not in file.read_bytes() and b"sk-test" not in file.read_bytes()


def test_a_cache_setting_from_the_environment_reads_booleans_and_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    from aiforge.core.settings import load_settings

    monkeypatch.setenv("AIFORGE_CACHE", "true")
    assert load_settings().CACHE is True
    monkeypatch.setenv("AIFORGE_CACHE", "0")
    assert load_settings().CACHE is False
    monkeypatch.setenv("AIFORGE_CACHE", "~/replies.sqlite")
    assert load_settings().CACHE == "~/replies.sqlite"


def test_chat_agent_cache_argument_sets_the_cache(srv: LLMServer, tmp_path: Path) -> None:
    for _ in range(2):
        chatty = ChatAgent(
            provider="openai", OPENAI_API_KEY=KEY, OPENAI_BASE_URL=srv.openai_base_url, cache=tmp_path / "c.sqlite"
        )
        chatty.chat("hi")
    assert srv.request_count == 1 and chatty.last_response.cached
    assert chatty.response_cache.stats().hits == 1


def test_a_cache_value_that_is_no_store_is_a_clear_error(srv: LLMServer) -> None:
    with pytest.raises(ConfigError, match="CACHE"):
        agent(srv, CACHE=3)
