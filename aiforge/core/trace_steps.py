"""The steps of a turn's trace on its time axis: ``Step`` (one model call, tool, retry, wait ...) and ``Lane`` (a turn).

Built from the trace records that already exist (``core.types.TraceRecord``), each at its ``start_ms`` for
``latency_ms``; records of older traces (no ``start_ms``) follow each other. Pure data, read by ``core.timeline``
(the ``Timeline`` a user sees) and ``core.timeline_html`` (its bars).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiforge.core.types import TraceRecord


def with_steps(trace: list[TraceRecord], steps: Sequence[TraceRecord]) -> list[TraceRecord]:
    """``trace`` with ``steps`` (waits and retries, from ``core.waits``) placed by their ``start_ms``.

    Each step goes before the first record that started after it, or before the model call it happened inside
    (a wait for the embedded engine's slot or the pacer, a failed attempt retried): a model call stays the last
    record of what it did, so ``response.trace[-1]`` of a plain reply is its model call, however busy the
    machine. Records without a ``start_ms`` keep their place. The timeline still draws each step at its time.

    >>> [r["name"] for r in with_steps(
    ...     [{"step": "model", "node": "route", "name": "chat", "start_ms": 0.0, "latency_ms": 30.0}],
    ...     [{"step": "wait", "node": "queue", "name": "worker", "start_ms": -5.0},
    ...      {"step": "wait", "node": "queue", "name": "engine", "start_ms": 2.0, "latency_ms": 20.0}])]
    ['worker', 'engine', 'chat']
    """
    if not steps:
        return trace
    merged = list(trace)
    for step in steps:
        start = step.get("start_ms", 0.0)
        at = next((i for i, r in enumerate(merged) if _starts_after(r, start) or _holds(r, start)), len(merged))
        merged.insert(at, step)
    return merged


def _starts_after(record: TraceRecord, moment_ms: float) -> bool:
    return bool(record.get("start_ms", moment_ms) > moment_ms)


def _holds(record: TraceRecord, moment_ms: float) -> bool:
    """Whether ``moment_ms`` lies inside the model call ``record`` (from its start to its end)."""
    if record.get("step") != "model" or "start_ms" not in record:
        return False
    begun = float(record["start_ms"])
    return begun <= moment_ms <= begun + float(record.get("latency_ms") or 0.0)


@dataclass(frozen=True, slots=True)
class Step:
    """One step on a timeline: what ran, when (``start_ms`` on the timeline's axis) and for how long."""

    kind: str
    """``model``, ``tool``, ``retry``, ``wait``, ``cache``, ``validation`` or ``context``."""
    name: str
    """A model call's node (``route``, ``process_result``, ``summary``), a tool's name, a wait's reason
    (``worker``, ``pacer``, ``engine``), a retry's error class, a cache hit's kind (``hit``, ``duplicate``)."""
    start_ms: float
    duration_ms: float
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    """Input tokens read from the provider's prompt cache."""
    cost: float | None = None
    finish_reason: str | None = None
    attempt: int | None = None
    """A retry's failed attempt (from 1)."""
    error: str | None = None

    @property
    def end_ms(self) -> float:
        return self.start_ms + self.duration_ms


def steps_of(trace: Iterable[TraceRecord], shift_ms: float = 0.0) -> list[Step]:
    """The steps of one turn's trace, by start; records of older traces (no ``start_ms``) follow each other."""
    steps: list[Step] = []
    cursor = 0.0
    for record in trace:
        duration = float(record.get("latency_ms") or 0.0)
        start = float(record.get("start_ms", cursor))
        cursor = max(cursor, start + duration)
        steps.append(_step(record, start + shift_ms, duration))
    return sorted(steps, key=lambda s: s.start_ms)


def _step(record: TraceRecord, start_ms: float, duration_ms: float) -> Step:
    kind = record["step"]
    error = record.get("error")
    return Step(
        kind=kind,
        name=record.get("node", "") if kind == "model" else record.get("name", ""),
        start_ms=start_ms,
        duration_ms=duration_ms,
        model=record.get("model"),
        input_tokens=record.get("input_tokens"),
        output_tokens=record.get("output_tokens"),
        cached_tokens=record.get("cached_input_tokens"),
        cost=record.get("cost"),
        finish_reason=record.get("finish_reason"),
        attempt=record.get("attempt"),
        error=None if error is None else str(error),
    )


def turn_shift(trace: Sequence[TraceRecord]) -> float:
    """How far a turn's records move so its earliest (a batch row's wait for a worker) starts at 0."""
    earliest = min((r["start_ms"] for r in trace if "start_ms" in r), default=0.0)
    return max(0.0, -earliest)


@dataclass(frozen=True, slots=True)
class Lane:
    """One turn on a timeline (a batch row), or a row that failed without one (``error``)."""

    label: Any
    steps: tuple[Step, ...] = ()
    latency_ms: float | None = None
    """The turn's own time (``ChatResponse.latency_ms``)."""
    queue_ms: float = 0.0
    """What it waited for its turn (``ChatResponse.queue_ms``)."""
    error: str | None = None
    """Why the row has no turn: its error."""

    cost: float = field(init=False)
    """USD of its model calls."""
    input_tokens: int = field(init=False)
    output_tokens: int = field(init=False)
    end_ms: float = field(init=False)
    """When its last step ended."""

    def __post_init__(self) -> None:
        # Totals once, at construction: a batch's view reads them for every row, several times.
        cost, tokens_in, tokens_out, end = 0.0, 0, 0, 0.0
        for step in self.steps:
            cost += step.cost or 0.0
            if step.kind == "model":
                tokens_in += step.input_tokens or 0
                tokens_out += step.output_tokens or 0
            end = max(end, step.end_ms)
        totals = {"cost": cost, "input_tokens": tokens_in, "output_tokens": tokens_out, "end_ms": end}
        for name, value in totals.items():
            object.__setattr__(self, name, value)


def span_of(lanes: Iterable[Lane], wall_ms: float | None = None) -> float:
    """The length of a time axis holding ``lanes``: the latest end of a step, or ``wall_ms`` when longer."""
    return max([lane.end_ms for lane in lanes] + [wall_ms or 0.0])
