"""Plain turn: one question, one answer, no tools, against a zero-latency server.

Overhead = a contender's time per turn minus the raw SDK's, paired round by round.
"""

from __future__ import annotations

from bench import peers
from bench.common import (
    PROMPT,
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

GROUP = "plain turn"
EXPECTED = f"echo: {PROMPT}"


def _answer_is_echo(text: object) -> bool:
    return text == EXPECTED


def contenders(server: ServerProcess) -> list[Contender]:
    url, anthropic_url = server.openai_base_url, server.anthropic_base_url
    check = _answer_is_echo
    out = [
        Contender("raw openai", peers.raw_openai_turn(url), check=check),
        Contender("raw openai async", peers.raw_openai_async_turn(url), check=check),
        Contender("langchain-openai", peers.langchain_turn(url), check=check),
        Contender("langgraph prebuilt", peers.langgraph_prebuilt_turn(url), check=check),
        Contender("pydantic-ai", peers.pydantic_ai_turn(url), check=check),
        Contender("raw anthropic", peers.raw_anthropic_turn(anthropic_url), check=check),
        Contender("bare graph invoke", peers.bare_graph_invoke()),
        Contender("bare graph ainvoke", peers.bare_graph_ainvoke()),
    ]
    try:
        agent = peers.aiforge_agent(url)
        loop = peers.persistent_loop()
        claude = peers.aiforge_agent(anthropic_url, provider="anthropic")
    except Exception as exc:  # noqa: BLE001 - aiforge not ready: the peers are still measured
        return [*out, Contender("aiforge", failing(exc))]
    return [
        *out,
        Contender("aiforge", lambda: agent.chat(PROMPT).message, before=agent.reset, check=check),
        Contender(
            "aiforge achat",
            lambda: loop.run_until_complete(agent.achat(PROMPT)).message,
            before=agent.reset,
            check=check,
        ),
        Contender("aiforge anthropic", lambda: claude.chat(PROMPT).message, before=claude.reset, check=check),
    ]


def run(quick: bool) -> list[Row]:
    with ServerProcess() as server:
        t = interleave(contenders(server), rounds=3 if quick else 12, calls=10 if quick else 20)
    g = GROUP
    return [
        info_row(t, g, "raw openai SDK, time per turn (baseline)", "raw openai"),
        overhead_row(
            t, g, "overhead vs LangGraph prebuilt agent", base="raw openai", peer="langgraph prebuilt", target=1.0
        ),
        overhead_row(
            t,
            g,
            "overhead vs pydantic-ai Agent.run_sync",
            base="raw openai",
            peer="pydantic-ai",
            target=1.0,
            strict=True,
        ),
        info_row(t, g, "overhead of langchain-openai ChatOpenAI.invoke", "langchain-openai", "raw openai"),
        info_row(
            t,
            g,
            "bare 2-node LangGraph graph invoke (floor)",
            "bare graph invoke",
            peer=f"ainvoke: {stat_text(t, 'bare graph ainvoke')}",
        ),
        info_row(
            t,
            g,
            "aiforge achat overhead vs raw AsyncOpenAI",
            "aiforge achat",
            "raw openai async",
            peer=f"AsyncOpenAI turn: {stat_text(t, 'raw openai async')}",
        ),
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
