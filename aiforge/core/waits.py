"""Time a turn spends waiting for its turn, kept apart from the time its requests take.

A turn can wait before its requests go out: a batch item for a free worker of the batch's pool
(``concurrency``), a request for the rate pacer (``RPM`` / ``TPM``, a 429's pause), a request for the embedded
model's one decoding slot. Counted in the turn's latency, these waits made the last items of a batch look
slow (latency growing with position while each request took the same time). So each turn carries a
``Waits``: ``ChatResponse.latency_ms`` and the log's ``latency_ms`` are the turn's own time, waits left out,
and ``queue_ms`` is the wait.

The record travels in a context variable: set when the turn starts, it is seen by the pacer and the
provider in every task the turn starts (tasks copy the context, and the copy names the same record).
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(slots=True)
class Waits:
    """One turn's waits, in seconds."""

    before_s: float = 0.0
    """Waited before the turn started: a batch item for a free worker."""
    inside_s: float = 0.0
    """Waited during the turn, before its requests could go: the rate pacer, the embedded model's queue."""

    @property
    def queue_ms(self) -> float:
        """Every wait of the turn, in milliseconds."""
        return (self.before_s + self.inside_s) * 1000.0


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
    return waits


def waited(seconds: float) -> None:
    """Count ``seconds`` of waiting in the current turn (outside a turn: nowhere)."""
    waits = _current.get()
    if waits is not None and seconds > 0:
        waits.inside_s += seconds
