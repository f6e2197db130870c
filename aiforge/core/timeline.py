"""A turn's or a batch's steps on one time axis: ``ChatResponse.timeline()`` and ``BatchResult.timeline()``.

Built from the trace records that already exist (``core.types.TraceRecord``): model calls, tool calls, retries,
waits, cache hits and validations, each at its ``start_ms`` for ``latency_ms``. A batch lays its rows' turns on the
batch's axis: a row's turn starts when its wait for a free worker ends, and that wait is measured from the batch's
start (``batch.runner``), so each row is shifted by it. Pure data here; the HTML is ``core.timeline_html``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from aiforge.core.types import TraceRecord, UsageError

if TYPE_CHECKING:
    import pandas as pd

Order = Literal["slowest", "input"]

MAX_ROWS = 30
"""Rows a batch's timeline shows by default (``to_frame`` has every row's steps)."""

FRAME_DTYPES: dict[str, str] = {
    "row": "object", "kind": "string", "name": "string", "start_ms": "float64", "duration_ms": "float64",
    "model": "string", "input_tokens": "Int64", "output_tokens": "Int64", "cached_tokens": "Int64",
    "cost": "Float64", "finish_reason": "string", "attempt": "Int64", "error": "string",
}
"""The columns of ``Timeline.to_frame()`` and their pandas dtypes."""


def with_steps(trace: list[TraceRecord], steps: Sequence[TraceRecord]) -> list[TraceRecord]:
    """``trace`` with ``steps`` (waits and retries, from ``core.waits``) placed by their ``start_ms``.

    Each step goes before the first record that started after it; records without a ``start_ms`` keep their
    place. A model call starts before the waits and retries inside it, so they follow it.

    >>> with_steps([{"step": "model", "node": "route", "name": "chat", "start_ms": 0.0}],
    ...            [{"step": "wait", "node": "queue", "name": "worker", "start_ms": -5.0}])[0]["name"]
    'worker'
    """
    if not steps:
        return trace
    merged = list(trace)
    for step in steps:
        start = step.get("start_ms", 0.0)
        at = next((i for i, r in enumerate(merged) if r.get("start_ms", start) > start), len(merged))
        merged.insert(at, step)
    return merged


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


def _turn_shift(trace: Sequence[TraceRecord]) -> float:
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

    @property
    def cost(self) -> float:
        return sum(s.cost or 0.0 for s in self.steps)

    @property
    def input_tokens(self) -> int:
        return sum(s.input_tokens or 0 for s in self.steps if s.kind == "model")

    @property
    def output_tokens(self) -> int:
        return sum(s.output_tokens or 0 for s in self.steps if s.kind == "model")

    @property
    def end_ms(self) -> float:
        return max((s.end_ms for s in self.steps), default=0.0)


@dataclass(frozen=True, slots=True)
class Timeline:
    """Steps of a turn or of a batch's rows on one time axis: shown as HTML bars in a notebook, or ``to_frame()``.

    ``lanes`` hold every row, in the order shown; the HTML shows the first ``max_rows`` of them and says how
    many it left out.

    >>> from aiforge.core.timeline import turn_timeline
    >>> trace = [{"step": "model", "node": "route", "name": "chat", "start_ms": 0.0, "latency_ms": 12.0}]
    >>> turn_timeline(trace, label="t").lanes[0].steps[0].duration_ms
    12.0
    """

    lanes: tuple[Lane, ...]
    kind: Literal["turn", "batch"] = "turn"
    max_rows: int | None = None
    """Lanes the HTML shows; None: all."""
    order: Order = "input"
    wall_ms: float | None = None
    """A batch's wall time, when known."""
    shown: tuple[Lane, ...] = field(init=False)

    def __post_init__(self) -> None:
        shown = self.lanes if self.max_rows is None else self.lanes[: self.max_rows]
        object.__setattr__(self, "shown", shown)

    @property
    def steps(self) -> list[Step]:
        """Every lane's steps, lane after lane."""
        return [s for lane in self.lanes for s in lane.steps]

    @property
    def cost(self) -> float:
        return sum(lane.cost for lane in self.lanes)

    @property
    def span_ms(self) -> float:
        """The axis' length: the latest end of a step (or the batch's wall time when longer)."""
        return max([lane.end_ms for lane in self.lanes] + [self.wall_ms or 0.0])

    def to_frame(self) -> pd.DataFrame:
        """Every step of every lane as a DataFrame (``FRAME_DTYPES``): ``row`` is the lane's label.

        >>> frame = response.timeline().to_frame()          # doctest: +SKIP
        >>> frame.groupby("kind")["duration_ms"].sum()      # doctest: +SKIP
        """
        import pandas as pd

        columns = list(FRAME_DTYPES)
        rows = [
            [lane.label, *(getattr(step, c) for c in columns[1:])] for lane in self.lanes for step in lane.steps
        ]
        return pd.DataFrame(rows, columns=columns).astype(FRAME_DTYPES)

    def _repr_html_(self) -> str:
        from aiforge.core.timeline_html import timeline_html

        return timeline_html(self)

    def __repr__(self) -> str:
        steps = self.steps
        kinds = {kind: sum(s.kind == kind for s in steps) for kind in ("model", "tool", "retry", "wait")}
        counts = ", ".join(f"{kind}={n}" for kind, n in kinds.items() if n)
        return f"Timeline({self.kind}, rows={len(self.lanes)}, {counts or 'no steps'}, cost={self.cost:.6f})"


def turn_timeline(
    trace: Sequence[TraceRecord], *, label: Any, latency_ms: float | None = None, queue_ms: float = 0.0
) -> Timeline:
    """The timeline of one turn's trace (``ChatResponse.timeline()``): one lane, its steps from 0."""
    lane = Lane(label, tuple(steps_of(trace, _turn_shift(trace))), latency_ms, queue_ms)
    return Timeline((lane,))


def batch_timeline(
    rows: Iterable[tuple[Any, Any, str | None]],
    *,
    order: Order = "slowest",
    max_rows: int | None = MAX_ROWS,
    wall_ms: float | None = None,
) -> Timeline:
    """The timeline of a batch's rows: ``(label, result or None, error or None)`` each, on the batch's axis.

    A result is read for ``trace``, ``latency_ms`` and ``queue_ms`` (a result type without a trace gets an
    empty lane). ``order="slowest"`` puts the rows with the longest latency first (failed rows last);
    ``"input"`` keeps the input order.
    """
    if order not in ("slowest", "input"):
        raise UsageError(f"order must be 'slowest' or 'input', got {order!r}")
    if max_rows is not None and (not isinstance(max_rows, int) or max_rows < 1):
        raise UsageError(f"max_rows must be a positive int or None, got {max_rows!r}")
    lanes = [_row_lane(label, result, error) for label, result, error in rows]
    if order == "slowest":
        lanes.sort(key=lambda lane: -1.0 if lane.latency_ms is None else lane.latency_ms, reverse=True)
    return Timeline(tuple(lanes), kind="batch", max_rows=max_rows, order=order, wall_ms=wall_ms)


def _row_lane(label: Any, result: Any, error: str | None) -> Lane:
    if result is None:
        return Lane(label, error=error)
    trace: Sequence[TraceRecord] = getattr(result, "trace", None) or ()
    return Lane(
        label, tuple(steps_of(trace, _turn_shift(trace))), getattr(result, "latency_ms", None),
        getattr(result, "queue_ms", 0.0) or 0.0,
    )
