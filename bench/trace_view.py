"""The trace view of a big batch: what ``BatchResult.timeline()``, its HTML and ``to_frame()`` take for 1 000 rows.

The batch runs once on the in-process scripted provider, each row a model call, a tool call and a second model
call (four trace steps with the waits for a worker), so what is timed is the view alone: building the steps of
every row, rendering the 30 rows shown, and the DataFrame of every step. Informational (no target): a notebook
user waits for it once per display.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bench.common import Row, Stat

GROUP = "trace view"
ROWS = 1000


def _batch(rows: int) -> Any:
    from langchain_core.tools import StructuredTool

    from aiforge import ChatAgent, ScriptedProvider
    from aiforge.providers.scripted import ScriptedReply, tool_call

    def double(n: int) -> str:
        """Twice n."""
        return str(2 * n)

    def reply(messages: list[dict[str, Any]]) -> ScriptedReply:
        if messages[-1]["role"] == "tool":
            return ScriptedReply(text=f"It is {messages[-1]['content']}.")
        return ScriptedReply(tool_calls=tool_call("double", n=21).tool_calls)

    agent = ChatAgent(
        provider=ScriptedProvider(default=reply),
        tools=[StructuredTool.from_function(double, name="double", description="Double a number")],
        STORE=False,
    )
    result = agent.run_batch([f"item {i}" for i in range(rows)], concurrency=10, max_batch=rows)
    if result.failed:
        raise RuntimeError(f"{len(result.failed)} rows failed, e.g. {result.failed[0]!r}")
    return result


def _timed(call: Callable[[], Any], repeats: int) -> Stat:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return Stat.of(samples)


def run(quick: bool) -> list[Row]:
    result = _batch(ROWS)
    steps = len(result.timeline().to_frame())
    repeats = 3 if quick else 15
    timeline = result.timeline()
    measures = (
        ("timeline() of a 1 000-row batch (steps of every row, slowest first)", lambda: result.timeline()),
        ("its HTML (_repr_html_, 30 rows shown)", timeline._repr_html_),
        (f"its to_frame() ({steps} steps)", timeline.to_frame),
        ("timeline() and its HTML: a notebook cell showing it", lambda: result.timeline()._repr_html_()),
    )
    return [
        Row(GROUP, name, _timed(call, repeats).fmt(), note=f"{ROWS} rows, {steps} steps, scripted provider")
        for name, call in measures
    ]


if __name__ == "__main__":
    for row in run(quick=True):
        print(f"{row.benchmark}: {row.aiforge}  ({row.note})")
