"""A stand-in for tqdm's bar that records what aiforge asks of it (total, initial, updates)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest


@dataclass
class RecordedBar:
    total: int
    initial: int = 0
    counted: int = 0
    """``initial`` plus every ``update``: where the bar ended."""

    def update(self, n: int) -> None:
        self.counted += n

    def close(self) -> None:
        pass


def record_bars(monkeypatch: pytest.MonkeyPatch) -> list[RecordedBar]:
    """Every bar a terminal run draws from now on, in order (``TQDM_DISABLE`` cleared so bars are drawn)."""
    import tqdm.auto

    bars: list[RecordedBar] = []

    def bar(total: int, initial: int = 0, **kwargs: Any) -> RecordedBar:
        bars.append(RecordedBar(total, initial, initial))
        return bars[-1]

    monkeypatch.setattr(tqdm.auto, "tqdm", bar)
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    return bars
