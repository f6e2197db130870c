"""Per-call cost records and the thread-safe ``CostTracker`` that sums them for a session."""

from __future__ import annotations

import asyncio
import html
import os
import sys
import threading
import time
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from aiforge.core.pricing import lookup_price, price_of
from aiforge.core.types import Usage

if TYPE_CHECKING:
    from types import FrameType

    import pandas as pd


@dataclass(frozen=True, slots=True)
class CostRecord:
    """The tokens and cost of one model call."""

    timestamp: float
    """Seconds since the epoch when the call was recorded."""
    provider: str
    model: str
    input_tokens: int
    """All input tokens, cached and cache writes included."""
    output_tokens: int
    cached_input_tokens: int
    cache_write_tokens: int
    cost: float
    """USD; 0.0 when ``priced`` is False."""
    priced: bool
    """False when the model had no price: ``cost`` is then not the real cost."""
    kind: str = "chat"
    """What the call was for: "chat", "summary"..."""
    trace_id: str = ""
    conversation_id: str = ""
    service_tier: str | None = None
    """The tier the response says served the call (OpenAI's ``service_tier``), which ``cost`` is at."""


COLUMNS = tuple(f.name for f in fields(CostRecord))
"""``CostRecord`` field names, the columns of ``CostTracker.to_dataframe``."""

_warned_models: set[tuple[str, str | None]] = set()
_warned_lock = threading.Lock()


_INTERNAL = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.dirname(asyncio.__file__))


def caller_stacklevel() -> int:
    """The stacklevel of the first frame outside aiforge, LangGraph and asyncio (1 if none)."""
    frame: FrameType | None = sys._getframe(2)
    level = 2
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(_INTERNAL) and "langgraph" not in name and "langchain_core" not in name:
            return level
        frame = frame.f_back
        level += 1
    return 1


def _warn_unpriced_once(model: str, service_tier: str | None) -> None:
    with _warned_lock:
        if (model, service_tier) in _warned_models:
            return
        _warned_models.add((model, service_tier))
    if lookup_price(model) is not None:  # the model has a list price, but not at the tier that served the call
        warnings.warn(
            f"aiforge has no {service_tier}-tier price for model {model!r}: its calls at that service tier are "
            "recorded at $0.00 (priced=False). The tier prices are core/pricing.py's FLEX_DISCOUNT and "
            "PRIORITY_PRICES; SERVICE_TIER=default is billed at the list price.",
            UserWarning,
            stacklevel=caller_stacklevel(),
        )
        return
    warnings.warn(
        f"aiforge has no price for model {model!r}: its calls are recorded at $0.00. "
        f"Add it to the PRICES setting, e.g. PRICES={{{model!r}: {{'input': 1.0, 'output': 2.0}}}} "
        "(USD per 1M tokens), in aiforge.yaml, AIFORGE_PRICES or the PRICES= keyword.",
        UserWarning,
        stacklevel=caller_stacklevel(),
    )


class CostTracker:
    """Cost and tokens of every model call in a session; safe to share between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[CostRecord] = []
        self._total = 0.0
        self._input_tokens = 0
        self._output_tokens = 0
        self._by_model: dict[str, dict[str, Any]] = {}
        self._unpriced: set[str] = set()

    def record(
        self,
        usage: Usage,
        model: str,
        *,
        provider: str,
        kind: str = "chat",
        trace_id: str = "",
        conversation_id: str = "",
        price_overrides: Mapping[str, Any] | None = None,
        free: bool = False,
        service_tier: str | None = None,
    ) -> CostRecord:
        """Price one call with ``price_of`` and add it; returns the record.

        ``price_overrides`` is the ``PRICES`` setting. ``free`` marks a provider whose calls cost
        nothing (local, scripted): cost 0.0, priced, no warning. ``service_tier`` is the tier the
        response says served the call. A model with no price (at that tier) is recorded at 0.0 with
        ``priced=False`` and one ``UserWarning`` per model and tier per process.
        """
        cost, priced = (0.0, True) if free else price_of(usage, model, price_overrides, service_tier)
        entry = CostRecord(
            timestamp=time.time(),
            provider=provider,
            model=model,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cached_input_tokens=usage.cached_input_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            cost=cost,
            priced=priced,
            kind=kind,
            trace_id=trace_id,
            conversation_id=conversation_id,
            service_tier=service_tier,
        )
        with self._lock:
            self._add(entry)
        # With no token counts (plain function providers) there is nothing PRICES could fix:
        # the record says unpriced, but a warning would only be noise.
        if not priced and usage.total_tokens:
            _warn_unpriced_once(model, service_tier)
        return entry

    def extend(self, records: Iterable[CostRecord]) -> None:
        """Add records priced elsewhere, e.g. by the agents of a batch."""
        records = list(records)
        with self._lock:
            for entry in records:
                self._add(entry)

    def merge(self, other: CostTracker) -> None:
        """Add every record of ``other`` to this tracker; ``other`` is left unchanged."""
        if other is self:
            raise ValueError("cannot merge a CostTracker into itself")
        self.extend(other.records)

    def _add(self, entry: CostRecord) -> None:
        self._records.append(entry)
        self._total += entry.cost
        self._input_tokens += entry.input_tokens
        self._output_tokens += entry.output_tokens
        stats = self._by_model.get(entry.model)
        if stats is None:
            stats = self._by_model[entry.model] = {"cost": 0.0, "input_tokens": 0, "output_tokens": 0, "calls": 0}
        stats["cost"] += entry.cost
        stats["input_tokens"] += entry.input_tokens
        stats["output_tokens"] += entry.output_tokens
        stats["calls"] += 1
        if not entry.priced:
            self._unpriced.add(entry.model)

    @property
    def session_total(self) -> float:
        """USD spent on priced calls since creation or the last ``reset``."""
        with self._lock:
            return self._total

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens of every recorded call."""
        with self._lock:
            return self._input_tokens + self._output_tokens

    @property
    def calls(self) -> int:
        """Number of recorded calls."""
        with self._lock:
            return len(self._records)

    @property
    def by_model(self) -> dict[str, dict[str, Any]]:
        """model -> {"cost", "input_tokens", "output_tokens", "calls"}; a copy."""
        with self._lock:
            return {model: dict(stats) for model, stats in self._by_model.items()}

    @property
    def records(self) -> list[CostRecord]:
        """Every record in the order added; a copy."""
        with self._lock:
            return list(self._records)

    @property
    def unpriced_models(self) -> set[str]:
        """Models recorded without a price; their cost is missing from the totals."""
        with self._lock:
            return set(self._unpriced)

    def reset(self) -> None:
        """Forget every record."""
        with self._lock:
            self._records.clear()
            self._total = 0.0
            self._input_tokens = self._output_tokens = 0
            self._by_model.clear()
            self._unpriced.clear()

    def to_dataframe(self) -> pd.DataFrame:
        """One row per record, columns in ``CostRecord`` field order (``COLUMNS``); timestamps as UTC datetimes."""
        import pandas as pd

        rows = [tuple(getattr(entry, column) for column in COLUMNS) for entry in self.records]
        frame = pd.DataFrame(rows, columns=list(COLUMNS))
        frame["timestamp"] = pd.to_datetime(frame["timestamp"].astype(float), unit="s", utc=True)
        return frame

    def totals(self) -> list[dict[str, Any]]:
        """Calls, tokens and cost per (provider, model), most expensive first."""
        groups: dict[tuple[str, str], dict[str, Any]] = {}
        for entry in self.records:
            row = groups.setdefault(
                (entry.provider, entry.model),
                {"provider": entry.provider, "model": entry.model, "calls": 0, "input_tokens": 0,
                 "output_tokens": 0, "cost": 0.0, "priced": True},
            )
            row["calls"] += 1
            row["input_tokens"] += entry.input_tokens
            row["output_tokens"] += entry.output_tokens
            row["cost"] += entry.cost
            row["priced"] = row["priced"] and entry.priced
        return sorted(groups.values(), key=lambda row: (-row["cost"], row["provider"], row["model"]))

    def _repr_html_(self) -> str:
        rows = self.totals()
        cells = "".join(
            f"<tr><td>{html.escape(r['provider'])}</td><td>{html.escape(r['model'])}</td><td>{r['calls']:,}</td>"
            f"<td>{r['input_tokens']:,}</td><td>{r['output_tokens']:,}</td>"
            f"<td>${r['cost']:.6f}{'' if r['priced'] else ' (unpriced)'}</td></tr>"
            for r in rows
        )
        total = (
            f"<tr><th colspan='2' style='text-align:left'>total</th><th>{sum(r['calls'] for r in rows):,}</th>"
            f"<th>{sum(r['input_tokens'] for r in rows):,}</th><th>{sum(r['output_tokens'] for r in rows):,}</th>"
            f"<th>${self.session_total:.6f}</th></tr>"
        )
        head = "".join(f"<th>{h}</th>" for h in ("provider", "model", "calls", "input tokens", "output tokens", "cost"))
        return f"<table><thead><tr>{head}</tr></thead><tbody>{cells}</tbody><tfoot>{total}</tfoot></table>"

    def __repr__(self) -> str:
        with self._lock:
            return f"<CostTracker total=${self._total:.6f} calls={len(self._records)}>"
