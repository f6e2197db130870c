"""``TurnOutcome``: what one turn's model call(s) produced, however it was answered (generated, scored, cached), and
the ``ChatResponse`` fields it gives (``response_fields``)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from aiforge.batch.request.call import final_call_truncated
from aiforge.core.trace_steps import with_steps
from aiforge.core.types import Message, ToolResult, TraceRecord

if TYPE_CHECKING:
    from aiforge.batch.request.call import ChatAgentState, Turn

CACHE_STEP: Final = "cache"
"""The ``step`` of a trace record for a reply served from the response cache (``batch.request.cache``)."""


@dataclass(slots=True)
class TurnOutcome:
    """What the graph run(s) of one turn produced, summed over the attempts."""

    produced: list[Message] = field(default_factory=list)
    """What the turn adds to history after the user message: tool units and the final reply."""
    reply: str = ""
    output: Any = None
    tool_results: list[ToolResult] = field(default_factory=list)
    trace: list[TraceRecord] = field(default_factory=list)
    iteration: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    model: str = ""
    confidence: float | None = None
    """The answer's probability when the turn was scored (``batch.request.scored``), not generated."""
    label_probabilities: dict[str, float] | None = None
    """Each label's probability, when the turn was scored."""

    def add_attempt(self, final: ChatAgentState) -> None:
        self.tool_results += final["tool_results"]
        self.trace += final["trace"]
        self.iteration = final["iteration"]
        self.input_tokens += final["total_input_tokens"]
        self.output_tokens += final["total_output_tokens"]
        self.model = final["model"]


def response_fields(
    outcome: TurnOutcome, turn: Turn, started: float, *, conversation_id: str, memory_mode: str
) -> dict[str, Any]:
    """The ``ChatResponse`` of a finished turn as its fields (``turn.waits`` holds its waits, ``started`` its start)."""
    trace = with_steps(outcome.trace, turn.waits.steps)
    # The graph's state sums its model steps; the memory summary ran after the graph.
    summaries = [r for r in trace if r["step"] == "model" and r["node"] == "summary"]
    return {
        "message": outcome.reply,
        "output": outcome.output,
        "conversation_id": conversation_id,
        "tool_calls": [
            {"tool": r["tool"], "input": r["input"], "output": r["output"], "id": r["id"], "error": r["error"]}
            for r in outcome.tool_results
        ],
        "iterations": outcome.iteration,
        "memory_mode": memory_mode,
        "cost": turn.cost,
        "input_tokens": outcome.input_tokens + sum(r["input_tokens"] for r in summaries),
        "output_tokens": outcome.output_tokens + sum(r["output_tokens"] for r in summaries),
        "cached_tokens": sum(r.get("cached_input_tokens", 0) for r in trace if r["step"] == "model"),
        "model": outcome.model,
        "trace_id": turn.trace_id,
        # The turn's own time: waiting for the pacer or the local engine's queue is queue_ms.
        "latency_ms": (time.perf_counter() - started - turn.waits.inside_s) * 1000.0,
        "queue_ms": turn.waits.queue_ms,
        "provider": turn.runtime.provider_name,
        "priced": turn.priced,
        "stopped_by_limit": any(r.get("stopped_by_limit") for r in trace),
        "truncated": final_call_truncated(trace),
        # ChatResponse.strategy (a scored label row's; all unset for a generated answer)
        "strategy": {"confidence": outcome.confidence, "label_probabilities": outcome.label_probabilities},
        "trace": trace,
        **cache_marks(trace),
    }


def cache_marks(trace: list[TraceRecord]) -> dict[str, Any]:
    """``ChatResponse`` fields of a turn served from the cache (none for a turn that ran)."""
    # A batch row's wait for a worker may come first.
    hit = next((r for r in trace if r["step"] == CACHE_STEP), None)
    return {} if hit is None else {"cached": True, "cached_cost": hit["cached_cost"]}
