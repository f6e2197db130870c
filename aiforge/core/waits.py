"""Time a turn spends waiting for its turn, kept apart from the time its requests take; and the steps no node sees.

A turn can wait before its requests go out: a batch item for a free worker of the batch's pool
(``concurrency``), a request for the rate pacer (``RPM`` / ``TPM``, a 429's pause), a request for the embedded
model's one decoding slot. Counted in the turn's latency, these waits made the last items of a batch look
slow (latency growing with position while each request took the same time). So each turn carries a
``Waits``: ``ChatResponse.latency_ms`` and the log's ``latency_ms`` are the turn's own time, waits left out,
and ``queue_ms`` is the wait.

A retry's backoff is not a wait in that sense: the request failed and is sent again, which is the request's own
time (the user waits for this request, not for other ones). So the backoff stays in ``latency_ms``; the trace
shows it as a ``retry`` step, apart from the model call's answer.

The record also collects the trace steps that happen below the chat graph, where no node sees them: each wait
(``wait`` records) and each retry (``retry`` records); the turn merges them
into its trace by their ``start_ms``, the offset from the turn's start (``origin``), a step inside a model call
before that call's record (``core.trace_steps.with_steps``).

The record travels in a context variable: set when the turn starts, it is seen by the pacer and the
provider in every task the turn starts (tasks copy the context, and the copy names the same record).
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aiforge.core.types import TraceRecord

MIN_TRACED_WAIT_MS = 1.0
"""Shorter waits (a thread pool's hand-over, a worker free at once) count in ``queue_ms`` but get no trace step
(so a batch's timeline may place a row up to this early: its wait for a worker says where its turn starts)."""
ERROR_CHARS = 300
"""A retry record keeps this much of its error's text."""


@dataclass(slots=True)
class Waits:
    """One turn's waits, in seconds, and the wait and retry steps of its trace."""

    before_s: float = 0.0
    """Waited before the turn started: a batch item for a free worker."""
    inside_s: float = 0.0
    """Waited during the turn, before its requests could go: the rate pacer, the embedded model's queue."""
    origin: float = field(default_factory=time.perf_counter)
    """When the turn started (``time.perf_counter``): the zero of its records' ``start_ms``."""
    steps: list[TraceRecord] = field(default_factory=list)
    """The ``wait`` and ``retry`` records of the turn, in the order they happened."""

    @property
    def queue_ms(self) -> float:
        """Every wait of the turn, in milliseconds."""
        return (self.before_s + self.inside_s) * 1000.0

    def offset_ms(self, moment: float) -> float:
        """``moment`` (``time.perf_counter``) as milliseconds since the turn started."""
        return (moment - self.origin) * 1000.0


_queued: ContextVar[float] = ContextVar("aiforge_queued", default=0.0)
_current: ContextVar[Waits | None] = ContextVar("aiforge_turn_waits", default=None)


def queued(seconds: float) -> None:
    """The next turn started in this context waited ``seconds`` before it (a batch item, for a free worker)."""
    _queued.set(max(0.0, seconds))


def start_turn() -> Waits:
    """A new turn's waits, current from now on in this context, with the wait ``queued`` reported."""
    waits = Waits(before_s=_queued.get())
    _queued.set(0.0)  # counted once: a later turn of this context was not queued
    _current.set(waits)
    if waits.before_s * 1000.0 >= MIN_TRACED_WAIT_MS:
        waits.steps.append(_wait_record("worker", -waits.before_s * 1000.0, waits.before_s))
    return waits


def waited(seconds: float, reason: str, *, since: float | None = None) -> None:
    """Count ``seconds`` of waiting in the current turn (outside a turn: nowhere); ``reason`` names it in the trace.

    ``since`` is when the wait began (``time.perf_counter``); None: it begins now (a wait about to be slept).
    """
    waits = _current.get()
    if waits is None or seconds <= 0:
        return
    waits.inside_s += seconds
    if seconds * 1000.0 >= MIN_TRACED_WAIT_MS:
        began = time.perf_counter() if since is None else since
        waits.steps.append(_wait_record(reason, waits.offset_ms(began), seconds))


def retried(attempt: int, error: BaseException, backoff_s: float) -> None:
    """Trace a failed attempt of the current turn's request, retried after ``backoff_s`` (outside a turn: nowhere).

    The error's text is already mapped and redacted by the provider (no key); it is kept short.
    """
    waits = _current.get()
    if waits is None:
        return
    waits.steps.append({
        "step": "retry", "node": "provider", "name": type(error).__name__, "attempt": attempt,
        "error": str(error)[:ERROR_CHARS], "start_ms": waits.offset_ms(time.perf_counter()),
        "latency_ms": backoff_s * 1000.0,
    })


def stamped(record: TraceRecord, started: float) -> TraceRecord:
    """``record`` with its ``start_ms``: ``started`` (``time.perf_counter``) from the current turn's start.

    Outside a turn (a tool run directly) the record is returned as it is.
    """
    waits = _current.get()
    if waits is not None:
        record["start_ms"] = waits.offset_ms(started)
    return record


def _wait_record(reason: str, start_ms: float, seconds: float) -> TraceRecord:
    return {"step": "wait", "node": "queue", "name": reason, "start_ms": start_ms, "latency_ms": seconds * 1000.0}
