"""OpenTelemetry: what a turn pays for ``OTEL=True`` (goal: under 0.2 ms), with no SDK and with the SDK recording.

The provider is the in-process scripted one and the store is off, so the difference between contenders is the
spans alone. Two setups, each against its own ``OTEL=False`` baseline, interleaved block by block:

- no SDK configured: ``OTEL=True`` with only opentelemetry-api's default (proxy) tracer provider, whose spans are
  no-ops: the price of leaving the setting on where nobody collects;
- the SDK recording: a ``TracerProvider`` with a ``SimpleSpanProcessor`` into an ``InMemorySpanExporter``, the
  cheapest full pipeline (a real exporter adds its own I/O, off the turn when batched). A plain turn makes two
  spans (``invoke_agent``, ``chat``), the goal's case; a tool turn four (two ``chat``, one ``execute_tool``),
  reported for information.

The global tracer provider can be set only once a process, so the no-op setup is measured first.
"""

from __future__ import annotations

from typing import Any

from bench.common import PROMPT, Contender, Row, Timings, error_rows, info_row, interleave

GROUP = "opentelemetry"
TARGET_MS = 0.2


def _agent(otel: bool, tools: bool = False) -> Any:
    from aiforge import ChatAgent, ScriptedProvider
    from aiforge.providers.scripted import tool_call

    async def weather(city: str) -> str:  # async: a sync tool's hop to a worker thread would swamp the spans' cost
        """The weather in a city."""
        return f"sunny in {city}"

    def script(messages: list[Any]) -> Any:  # a tool call for the question, an answer after the tool's result
        return tool_call("weather", city="Paris") if messages[-1]["role"] == "user" else "It is sunny."

    provider = ScriptedProvider(default=script) if tools else ScriptedProvider()
    return ChatAgent(provider=provider, tools=[weather] if tools else None, STORE=False, log=False, OTEL=otel)


def _contenders(label: str, tools: bool = False) -> list[Contender]:
    off, on = _agent(False, tools), _agent(True, tools)
    return [
        Contender(f"off{label}", lambda: off.chat(PROMPT), before=off.reset),
        Contender(f"on{label}", lambda: on.chat(PROMPT), before=on.reset),
    ]


def _overhead_row(t: Timings, label: str, on: str, off: str, *, target: bool = True) -> Row:
    if not t.ok(on, off):
        return info_row(t, GROUP, label, on, off)
    stat = t.diff(on, off)
    if not target:
        return Row(GROUP, label, stat.fmt(digits=3))
    return Row(GROUP, label, stat.fmt(digits=3), "", None, f"< {TARGET_MS} ms", stat.median * 1e3 < TARGET_MS)


def run(quick: bool) -> list[Row]:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    rounds, calls = (3, 20) if quick else (15, 60)
    rows: list[Row] = []
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):  # nothing set up yet in this process
        noop = interleave(_contenders(" (no-op)"), rounds=rounds, calls=calls)
        rows.append(info_row(noop, GROUP, "turn, OTEL=False (scripted provider, store off)", "off (no-op)"))
        rows.append(_overhead_row(noop, "per-turn cost of OTEL=True, no SDK configured (no-op spans)",
                                  "on (no-op)", "off (no-op)"))
        rows += error_rows(noop, GROUP)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    plain = _contenders(" (sdk)")
    tool = _contenders(" (sdk, tool)", tools=True)
    recorded = interleave([*plain, *tool], rounds=rounds, calls=calls, warmup=3)
    spans_made = len(exporter.get_finished_spans())
    exporter.clear()
    rows.append(_overhead_row(recorded, "per-turn cost of OTEL=True, SDK + in-memory exporter (2 spans)",
                              "on (sdk)", "off (sdk)"))
    rows.append(_overhead_row(recorded, "cost of OTEL=True, tool turn (3 model/tool spans + the turn's), SDK",
                              "on (sdk, tool)", "off (sdk, tool)", target=False))
    if not spans_made:
        rows.append(Row(GROUP, "spans recorded by the SDK", "none: the setup did not record", passed=False))
    return rows + error_rows(recorded, GROUP)


if __name__ == "__main__":
    for row in run(quick=False):
        print(row)
