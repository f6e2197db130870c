"""Sessions and the log: what a turn pays for being logged (STORE on) and saved (session=), and run_batch throughput.

Per turn, the provider is the in-process scripted one, so the difference between contenders is aiforge's
store work alone (no network noise). ``run_batch`` throughput is measured as ``bench.batch`` does it (the real
openai SDK, 200 items at concurrency 20, a server taking 100 ms per request), and with the scripted
provider as a CPU-bound worst case (informational). For the design choice, LangGraph's checkpointer cost is
measured on a bare two-node graph with ``InMemorySaver`` (a lower bound for ``SqliteSaver``, which writes).
"""

from __future__ import annotations

import itertools
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import Contender, Row, ServerProcess, error_rows, info_row, interleave
from bench.peers import aiforge_agent

GROUP = "sessions and log"
TARGET_MS = 1.0
BATCH_RATIO = 0.95


def _agent(store: Any, **kwargs: Any) -> Any:
    from aiforge import ChatAgent, ScriptedProvider

    return ChatAgent(provider=ScriptedProvider(), STORE=store, **kwargs)


def _checkpointed_graph() -> Any:
    from langgraph.checkpoint.memory import InMemorySaver

    from bench.common import PROMPT
    from bench.peers import bare_graph

    graph = bare_graph().builder.compile(checkpointer=InMemorySaver())
    state = {"messages": [{"role": "user", "content": PROMPT}]}
    threads = itertools.count()
    # A new thread per call: on one thread the state (and its messages) would grow with every invoke.
    return lambda: graph.invoke(state, {"configurable": {"thread_id": str(next(threads))}})


def _batch_rates(off: Any, on: Any, items: list[str], concurrency: int, rounds: int) -> tuple[float, float]:
    """Median items per second of ``run_batch``, logging off and on, alternated round by round."""
    rates: tuple[list[float], list[float]] = ([], [])
    for _ in range(rounds):
        for agent, out in ((off, rates[0]), (on, rates[1])):
            started = time.perf_counter()
            result = agent.run_batch(items, concurrency=concurrency, max_batch=len(items))
            if result.failed:
                raise RuntimeError(f"{len(result.failed)} items failed, e.g. {result.failed[0]!r}")
            out.append(len(items) / (time.perf_counter() - started))
    return statistics.median(rates[0]), statistics.median(rates[1])


def _batch_row(label: str, rates: tuple[float, float], target: bool) -> Row:
    off, on = rates
    return Row(
        GROUP, label, f"{on:.0f} vs {off:.0f} items/s", "", on / off, f">= {BATCH_RATIO:.2f}x" if target else "",
        on / off >= BATCH_RATIO if target else None,
    )


def run(quick: bool) -> list[Row]:
    from bench.common import PROMPT
    from bench.peers import bare_graph_invoke

    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "store.sqlite")
        off, logged = _agent(False, log=False), _agent(path)
        # A session keeps its history (20 messages once full): compared with an agent that keeps one too.
        kept, session = _agent(False, log=False), _agent(path, session="bench")
        contenders = [
            Contender("log off", lambda: off.chat(PROMPT), before=off.reset),
            Contender("log on", lambda: logged.chat(PROMPT), before=logged.reset),
            Contender("history, store off", lambda: kept.chat(PROMPT)),
            Contender("session + log", lambda: session.chat(PROMPT)),
            Contender("graph", bare_graph_invoke()),
            Contender("graph + checkpointer", _checkpointed_graph()),
        ]
        t = interleave(contenders, rounds=3 if quick else 15, calls=10 if quick else 40)
        scripted = _batch_rates(_agent(False, log=False), _agent(path), [f"item {i}" for i in range(400)], 10,
                                2 if quick else 7)
        with ServerProcess(latency=0.1) as server:
            wire = _batch_rates(
                aiforge_agent(server.openai_base_url, STORE=False, log=False),
                aiforge_agent(server.openai_base_url, STORE=path),
                [f"Question {i}: what is {i} squared?" for i in range(200)], 20, 2 if quick else 5,
            )
    g = GROUP
    rows = [info_row(t, g, "turn, logging off (scripted provider)", "log off")]
    pairs = (
        ("log on", "log off", "per-turn cost of the log"),
        ("session + log", "history, store off", "per-turn cost of session + log (20-message history)"),
    )
    for name, base, label in pairs:
        if t.ok(name, base):
            stat = t.diff(name, base)
            rows.append(Row(g, label, stat.fmt(), "", None, f"< {TARGET_MS:.0f} ms", stat.median * 1e3 < TARGET_MS))
        else:
            rows.append(info_row(t, g, label, name, base))
    rows.append(info_row(t, g, "LangGraph InMemorySaver per 2-node invoke (SqliteSaver is more)",
                         "graph + checkpointer", "graph"))
    rows.append(_batch_row("run_batch 200 items, openai SDK, 100 ms server: logging on / off", wire, True))
    rows.append(_batch_row("run_batch 400 items, scripted (CPU-bound worst case): logging on / off", scripted, False))
    return rows + error_rows(t, g)
