"""``Plan``: one way to run a batch, as ``BatchEstimate.plans`` lists them (issue 24's cost planner).

Each plan has its requests, tokens, dollars and expected time. The time is a rough, stated model, not a promise:

- live requests (as is, deduped, packed, cascade): ``ceil(requests / concurrency)`` rounds of one request's
  typical latency (``ASSUMED_LATENCY_S``), as if each round waited for its slowest request and nothing throttled;
- flex: the same times ``FLEX_SLOWDOWN`` (OpenAI: flex "may take longer" and answers 429 when resources are
  short, which aiforge retries);
- Batch API: ``BATCH_API_WINDOW_S`` (the providers answer "within 24 hours", often far sooner).
"""

from __future__ import annotations

import datetime
import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiforge.core.types import UsageError

PLANS = ("as_is", "deduped", "flex", "batch_api", "packed", "cascade")
"""The plans an estimate lists, in order; ``run_batch(plan="cheapest")`` chooses among deduped, flex and batch_api."""
PLAN_LABELS = {
    "as_is": "as is", "deduped": "deduped", "flex": "flex", "batch_api": "Batch API", "packed": "packed",
    "cascade": "cascade",
}
RUN_PLANS = ("as_is", "cheapest")
"""What ``run_batch(plan=...)`` takes."""

# Assumed seconds for one short request (a few hundred tokens in, a short answer out), by model name prefix: an
# order of magnitude from typical observed chat-completion latencies, not a measurement. Reasoning models think
# before answering, hence their larger numbers. The longest matching prefix wins.
ASSUMED_LATENCY_S: dict[str, float] = {
    "gpt-4o-mini": 1.0, "gpt-4.1-nano": 1.0, "gpt-4.1-mini": 1.5, "gpt-4o": 2.0, "gpt-4.1": 2.0,
    "gpt-5-nano": 4.0, "gpt-5-mini": 5.0, "gpt-5": 10.0, "o4-mini": 8.0, "o3": 15.0, "o1": 20.0,
    "claude-3-5-haiku": 1.5, "claude-haiku": 1.5, "claude-3-haiku": 1.0, "claude-sonnet": 3.0, "claude-opus": 5.0,
    "scripted": 0.01, "fake": 0.01,
}
DEFAULT_LATENCY_S = 2.0
"""A model missing from ``ASSUMED_LATENCY_S``."""
FLEX_SLOWDOWN = 3.0
"""How many times slower a flex batch is assumed to be than the same batch at the default tier."""
BATCH_API_WINDOW_S = 24 * 3600.0
"""The Batch APIs' completion window: what a Batch API plan is assumed to take (its worst case)."""


@dataclass(frozen=True, slots=True)
class Plan:
    """One way to run a batch: what it sends, costs and takes, or why it is not available (``available``)."""

    name: str
    """One of ``PLANS``: ``as_is``, ``deduped``, ``flex``, ``batch_api``, ``packed``, ``cascade``."""
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    dollars: float | None = None
    """USD (the low end with ``dollars_high``); None when not available or the model has no price."""
    dollars_high: float | None = None
    """The high end of a range (``cascade``: every row answered by the strong model); None for one number."""
    seconds: float | None = None
    """Expected wall time under the module's stated model; None when not available."""
    note: str = ""
    available: bool = True
    cheapest: bool = False

    @property
    def label(self) -> str:
        return PLAN_LABELS.get(self.name, self.name)

    def row(self) -> dict[str, Any]:
        """The plan as a table row (``BatchEstimate.to_dataframe``)."""
        return {
            "plan": self.label, "requests": self.requests if self.available else None,
            "input_tokens": self.input_tokens if self.available else None,
            "output_tokens": self.output_tokens if self.available else None,
            "dollars": self.dollars, "dollars_high": self.dollars_high, "expected_time": self.time_text(),
            "cheapest": self.cheapest, "note": self.note,
        }

    def dollars_text(self) -> str:
        if not self.available:
            return "n/a"
        if self.dollars is None:
            return "unpriced"
        high = "" if self.dollars_high is None else f"-{self.dollars_high:.4f}"
        return f"${self.dollars:.4f}{high}"

    def time_text(self) -> str:
        if not self.available or self.seconds is None:
            return "n/a"
        if self.name == "batch_api":
            return "up to 24 h"
        return "~" + duration_text(self.seconds) + (" or more" if self.name == "flex" else "")


def duration_text(seconds: float) -> str:
    """``seconds`` as a short duration: ``40 s``, ``12 min``, ``3.5 h``."""
    if seconds < 1:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def assumed_latency(model: str) -> float:
    """``ASSUMED_LATENCY_S`` for ``model`` (the longest prefix of its last ``/`` segment), else the default."""
    name = model.rsplit("/", 1)[-1].lower()
    matches = [prefix for prefix in ASSUMED_LATENCY_S if name.startswith(prefix)]
    return ASSUMED_LATENCY_S[max(matches, key=len)] if matches else DEFAULT_LATENCY_S


def live_seconds(requests: int, concurrency: int, model: str) -> float:
    """The expected wall time of ``requests`` live requests ``concurrency`` at a time (the module's model)."""
    return math.ceil(requests / max(concurrency, 1)) * assumed_latency(model)


def marked_cheapest(plans: Sequence[Plan]) -> tuple[Plan, ...]:
    """``plans`` with the available plan of the fewest dollars (its low end; on a tie the faster, then the fewer
    requests) marked."""
    priced = [p for p in plans if p.available and p.dollars is not None]
    best = min(priced, key=lambda p: (p.dollars, p.seconds or 0.0, p.requests), default=None)
    return tuple(Plan(**{**_fields(p), "cheapest": p is best}) for p in plans)


def _fields(plan: Plan) -> dict[str, Any]:
    return {name: getattr(plan, name) for name in Plan.__dataclass_fields__}


def plans_text(plans: Sequence[Plan]) -> str:
    """A compact text table of ``plans`` (``BatchEstimate.__repr__``); the cheapest is starred."""
    rows = [("plan", "requests", "in tok", "out tok", "USD", "time", "note")]
    for p in plans:
        star = "*" if p.cheapest else " "
        counts = (f"{p.requests:,}", f"{p.input_tokens:,}", f"{p.output_tokens:,}") if p.available else ("-",) * 3
        rows.append((star + p.label, *counts, p.dollars_text(), p.time_text(), p.note))
    widths = [max(len(row[n]) for row in rows) for n in range(6)]
    lines = ["  ".join(cell.ljust(widths[n]) for n, cell in enumerate(row[:6])) + "  " + row[6] for row in rows]
    return "\n".join(line.rstrip() for line in lines) + "\n(* cheapest)"


def plans_html(plans: Sequence[Plan]) -> str:
    """An HTML table of ``plans`` (``BatchEstimate._repr_html_``); the cheapest in bold."""
    columns = ("plan", "requests", "input tokens", "output tokens", "USD", "time", "note")
    head = "".join(f"<th>{h}</th>" for h in columns)
    body = []
    for p in plans:
        counts = (f"{p.requests:,}", f"{p.input_tokens:,}", f"{p.output_tokens:,}") if p.available else ("-",) * 3
        cells = (p.label + (" (cheapest)" if p.cheapest else ""), *counts, p.dollars_text(), p.time_text(), p.note)
        style = ' style="font-weight:bold"' if p.cheapest else ""
        body.append(f"<tr{style}>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|hr|d)?\s*$", re.IGNORECASE)
_UNIT_S = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hr": 3600, "d": 86400}


def deadline_seconds(deadline: Any) -> float | None:
    """``run_batch(deadline=...)`` in seconds: a ``timedelta``, a number of seconds, or ``"2h"``, ``"30m"``, ``"90s"``,
    ``"1d"``; None for no deadline. ``UsageError`` for anything else."""
    if deadline is None:
        return None
    if isinstance(deadline, datetime.timedelta):
        seconds = deadline.total_seconds()
    elif isinstance(deadline, int | float) and not isinstance(deadline, bool):
        seconds = float(deadline)
    elif isinstance(deadline, str) and (found := _DURATION.match(deadline)):
        seconds = float(found.group(1)) * _UNIT_S[(found.group(2) or "s").lower()]
    else:
        seconds = math.nan
    if not seconds > 0 or math.isinf(seconds):
        raise UsageError(
            f"deadline= takes a datetime.timedelta, a number of seconds > 0, or a string such as '90s', '30m', "
            f"'2h' or '1d' (None: no deadline), not {deadline!r}"
        )
    return seconds
