"""A long randomized session per wire protocol against the strict server.

Seeded, so a failure replays exactly. Each turn scripts the server with a random plan: plain
answers, tool rounds with parallel calls, tool errors, unknown tools, malformed arguments, the
iteration cap, injected 500/429 faults (MAX_RETRIES=0 so they surface) and errors mid-stream,
on agents with small buffers and summaries. Every request must pass strict validation, and the
agent's stored history must stay valid after every turn, failed or not.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field

import pytest
from langchain_core.tools import StructuredTool

from aiforge.core.types import ProviderError, RateLimitError
from fakellm import Fault, LLMServer, RecordedRequest, Reply, ToolCallSpec
from tests.chat.checks import assert_valid_history
from tests.chat.conftest import make_wire_agent

TURNS = 120
SUMMARIZER = "You write faithful, compact conversation summaries."
AGENT_CONFIGS = [
    {"memory": "buffer", "memory_k": 1, "max_tool_iterations": 2},
    {"memory": "buffer", "memory_k": 3, "max_tool_iterations": 3},
    {"memory": "buffer", "memory_k": 6, "max_tool_iterations": 1},
    {"memory": "summary", "memory_k": 2, "max_tool_iterations": 2},
    {"memory": "summary", "memory_k": 4, "max_tool_iterations": 3},
    {"memory": "none", "memory_k": 20, "max_tool_iterations": 2},
]


def echo(x: str) -> str:
    """Echo the input."""
    return f"echo:{x}"


async def lookup(key: str) -> str:
    """Look a key up, asynchronously."""
    await asyncio.sleep(0.001)
    return f"value-of-{key}"


def flaky(x: str) -> str:
    """Fail on 'boom'."""
    if x == "boom":
        raise RuntimeError("flaky tool failed")
    return x


TOOLS = [
    StructuredTool.from_function(echo, name="echo", description="Echo the input"),
    StructuredTool.from_function(coroutine=lookup, name="lookup", description="Look a key up"),
    StructuredTool.from_function(flaky, name="flaky", description="Sometimes fails"),
]


@dataclass
class Plan:
    """What the server will answer during one turn, and how the turn must end."""

    items: list = field(default_factory=list)
    outcome: str = "ok"  # "ok", "capped", "rate_limit", "provider_error"
    stream: bool = False
    empty_answer: bool = False


def random_call(rng: random.Random, n: int) -> ToolCallSpec:
    roll = rng.random()
    if roll < 0.35:
        return ToolCallSpec("echo", {"x": f"e{n}"})
    if roll < 0.6:
        return ToolCallSpec("lookup", {"key": f"k{n}"})
    if roll < 0.75:
        return ToolCallSpec("flaky", {"x": rng.choice(["boom", "fine"])})
    if roll < 0.85:
        return ToolCallSpec("no_such_tool", {"q": 1})
    if roll < 0.93:
        return ToolCallSpec("echo", '{"x": "unterminated')  # not valid JSON
    return ToolCallSpec("echo", {"y": "wrong field"})  # does not match the schema


def random_plan(rng: random.Random, cap: int, turn: int) -> Plan:
    plan = Plan(stream=rng.random() < 0.4)
    rounds = rng.choice([0, 0, 0, 1, 1, 2, 3, cap + 1])
    calls_made = min(rounds, cap) + 1  # route, then one model call after each executed round
    for r in range(calls_made):
        if r < rounds:
            parallel = rng.choice([1, 1, 2, 3])
            text = rng.choice(["", "Let me check."])
            plan.items.append(Reply(text=text, tool_calls=[random_call(rng, turn * 10 + i) for i in range(parallel)]))
        elif rng.random() < 0.05:
            plan.items.append(Reply(text=""))  # models do end turns with no text at all
            plan.empty_answer = True
        else:
            plan.items.append(Reply(text=f"Answer {turn}: " + " ".join(f"word{i}" for i in range(rng.randint(1, 12)))))
    if rounds > cap:
        plan.outcome = "capped"
    fault = rng.random()
    if fault < 0.12:
        at = rng.randrange(len(plan.items))
        status = rng.choice([429, 500, 503])
        plan.items = [*plan.items[:at], Fault(status=status)]
        plan.outcome = "rate_limit" if status == 429 else "provider_error"
    elif fault < 0.18 and plan.stream and plan.outcome == "ok":
        last = plan.items[-1]
        last.openai_error_after_chunks = last.anthropic_error_after_chunks = 2
        plan.outcome = "provider_error"
    return plan


def is_summary_request(request: RecordedRequest) -> bool:
    system = request.body.get("system") if request.protocol == "anthropic" else request.messages[0]["content"]
    return SUMMARIZER in str(system)


def summary_hook(rng: random.Random):
    def reply(request: RecordedRequest) -> Reply | Fault:
        if not is_summary_request(request):
            return Reply(text="unplanned request")  # fails the pending/outcome checks below
        if rng.random() < 0.15:
            return Fault(status=500)  # a failed summary keeps the history verbatim
        return Reply(text=f"Summary {rng.randint(0, 99)}: the user asked many things.")

    return reply


def run_turn(agent, plan: Plan, message: str):
    if plan.stream:
        chunks = list(agent.run_stream(message))
        return "".join(chunks), agent.last_response
    response = agent.chat(message)
    return response.message, response


@pytest.mark.slow
def test_long_random_session_is_always_accepted_by_the_strict_server(protocol: str) -> None:
    rng = random.Random(f"aiforge-strict-session-{protocol}")
    with LLMServer(strict=True, chunk_size=5) as srv:
        srv.default = summary_hook(random.Random(f"summaries-{protocol}"))
        agents = [make_wire_agent(srv, protocol, tools=TOOLS, MAX_RETRIES=0, **config) for config in AGENT_CONFIGS]
        outcomes: dict[str, int] = {}
        overflowing: set[int] = set()
        summary_failures = 0
        seen = 0
        for turn in range(TURNS):
            index = rng.randrange(len(agents))
            agent, config = agents[index], AGENT_CONFIGS[index]
            plan = random_plan(rng, config["max_tool_iterations"], turn)
            before = agent.history
            last_before = agent.last_response
            srv.enqueue(*plan.items)
            context = f"turn {turn} agent {index} {config} plan {plan}"

            if plan.outcome in ("rate_limit", "provider_error"):
                expected = RateLimitError if plan.outcome == "rate_limit" else ProviderError
                with pytest.raises(expected):
                    run_turn(agent, plan, f"question {turn}")
                assert agent.history == before, context
                assert agent.last_response is last_before, context
            else:
                text, response = run_turn(agent, plan, f"question {turn}")
                assert text.endswith(response.message), context
                assert bool(response.message) != plan.empty_answer, context
                assert response.stopped_by_limit == (plan.outcome == "capped"), context
                if config["memory"] != "none" and agent.history:  # empty when a memory_k window held no whole turn
                    assert agent.history[-1] == {"role": "assistant", "content": response.message}, context

            assert srv.pending == 0, context
            new_requests = srv.requests[seen:]
            seen += len(new_requests)
            for request in new_requests:
                assert request.status == 200 or isinstance(request.response, Fault), (
                    f"{context}: strict server rejected a request with {request.status}: {request.messages}"
                )
                assert not (isinstance(request.response, Reply) and request.response.text == "unplanned request"), (
                    context
                )
            history = agent.history
            assert_valid_history(history)
            limit = {"buffer": config["memory_k"], "summary": 2 * config["memory_k"], "none": 0}[config["memory"]]
            failed_summaries = sum(isinstance(r.response, Fault) and is_summary_request(r) for r in new_requests)
            summary_failures += failed_summaries
            if failed_summaries:
                overflowing.add(index)  # a failed summary keeps older messages until the next one succeeds
            elif len(history) <= limit:
                overflowing.discard(index)
            assert len(history) <= limit or index in overflowing, context
            kind = "empty" if plan.empty_answer and plan.outcome == "ok" else plan.outcome
            outcomes[kind] = outcomes.get(kind, 0) + 1

    # The seed must exercise every kind of turn, or the session proves less than it claims.
    assert set(outcomes) == {"ok", "capped", "rate_limit", "provider_error", "empty"}, outcomes
    assert any(a.summary for a in agents), "no summary was ever made"
    assert summary_failures, "no summary ever failed"
