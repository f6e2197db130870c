"""Tool turn: the model calls one tool, gets its result, then answers (two model calls).

The server answers a request that offers tools with a ``get_weather`` call unless the last
message is a tool result, then with text. The raw SDK baseline makes both calls by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench import peers
from bench.common import (
    PROMPT,
    TOOL_RUNS,
    Contender,
    Row,
    ServerProcess,
    error_rows,
    failing,
    info_row,
    interleave,
    overhead_row,
    stat_text,
)

GROUP = "tool turn"
EXPECTED = f"echo: {PROMPT}"


def counted(turn: Callable[[], Any]) -> Callable[[], tuple[Any, int]]:
    """The turn's answer and how many times the tool ran during it."""

    def call() -> tuple[Any, int]:
        before = TOOL_RUNS[0]
        answer = turn()
        return answer, TOOL_RUNS[0] - before

    return call


def _one_tool_call_then_answer(result: tuple[Any, int]) -> bool:
    return result == (EXPECTED, 1)


def contenders(server: ServerProcess) -> list[Contender]:
    url, anthropic_url = server.openai_base_url, server.anthropic_base_url
    check = _one_tool_call_then_answer
    out = [
        Contender("raw openai", counted(peers.raw_openai_tool_turn(url)), check=check),
        Contender("langchain-openai", counted(peers.langchain_tool_turn(url)), check=check),
        Contender("langgraph prebuilt", counted(peers.langgraph_prebuilt_turn(url, tools=True)), check=check),
        Contender("pydantic-ai", counted(peers.pydantic_ai_turn(url, tools=True)), check=check),
        Contender("raw anthropic", counted(peers.raw_anthropic_tool_turn(anthropic_url)), check=check),
    ]
    try:
        agent = peers.aiforge_agent(url, tools=True)
        claude = peers.aiforge_agent(anthropic_url, provider="anthropic", tools=True)
    except Exception as exc:  # noqa: BLE001 - aiforge not ready: the peers are still measured
        return [*out, Contender("aiforge", failing(exc))]
    return [
        *out,
        Contender("aiforge", counted(lambda: agent.chat(PROMPT).message), before=agent.reset, check=check),
        Contender("aiforge anthropic", counted(lambda: claude.chat(PROMPT).message), before=claude.reset, check=check),
    ]


def run(quick: bool) -> list[Row]:
    with ServerProcess() as server:
        t = interleave(contenders(server), rounds=3 if quick else 12, calls=6 if quick else 12)
    g = GROUP
    return [
        info_row(t, g, "raw openai SDK, both calls by hand (baseline)", "raw openai"),
        overhead_row(
            t, g, "overhead vs LangGraph prebuilt agent", base="raw openai", peer="langgraph prebuilt", target=0.35
        ),
        info_row(t, g, "overhead of pydantic-ai (tool registered)", "pydantic-ai", "raw openai"),
        info_row(t, g, "overhead of langchain-openai, tool loop by hand", "langchain-openai", "raw openai"),
        info_row(
            t,
            g,
            "aiforge anthropic overhead vs raw anthropic SDK",
            "aiforge anthropic",
            "raw anthropic",
            peer=f"raw anthropic turn: {stat_text(t, 'raw anthropic')}",
        ),
        *error_rows(t, g),
    ]
