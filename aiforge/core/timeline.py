"""A turn's or a batch's steps on one time axis: ``ChatResponse.timeline()`` and ``BatchResult.timeline()``.

Built from the trace records that already exist (``core.types.TraceRecord``): model calls, tool calls, retries,
waits, cache hits and validations, each at its ``start_ms`` for ``latency_ms``. A batch lays its rows' turns on the
batch's axis: a row's turn starts when its wait for a free worker ends, and that wait is measured from the batch's
start (``batch.runner``), so each row is shifted by it. The steps are ``core.trace_steps``; the HTML is
``core.timeline_html``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from aiforge.core.timeline_html import timeline_html
from aiforge.core.trace_steps import Lane, Step, span_of, steps_of, turn_shift
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
        return span_of(self.lanes, self.wall_ms)

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
        return timeline_html(self.kind, self.lanes, self.shown, order=self.order, wall_ms=self.wall_ms)

    def __repr__(self) -> str:
        steps = self.steps
        kinds = {kind: sum(s.kind == kind for s in steps) for kind in ("model", "tool", "retry", "wait")}
        counts = ", ".join(f"{kind}={n}" for kind, n in kinds.items() if n)
        return f"Timeline({self.kind}, rows={len(self.lanes)}, {counts or 'no steps'}, cost={self.cost:.6f})"


def turn_timeline(
    trace: Sequence[TraceRecord], *, label: Any, latency_ms: float | None = None, queue_ms: float = 0.0
) -> Timeline:
    """The timeline of one turn's trace (``ChatResponse.timeline()``): one lane, its steps from 0."""
    lane = Lane(label, tuple(steps_of(trace, turn_shift(trace))), latency_ms, queue_ms)
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
        label, tuple(steps_of(trace, turn_shift(trace))), getattr(result, "latency_ms", None),
        getattr(result, "queue_ms", 0.0) or 0.0,
    )
