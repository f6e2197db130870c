"""``LogFrame``: the log as a pandas DataFrame that keeps its ``costs_by_day()`` through filtering."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd


class LogFrame(pd.DataFrame):
    """One row per turn, newest first; ``costs_by_day()`` sums turns, tokens and cost per day and model."""

    @property
    def _constructor(self) -> type[LogFrame]:
        return LogFrame

    @classmethod
    def of(cls, records: Sequence[dict[str, Any]], columns: Sequence[str]) -> LogFrame:
        frame = cls(list(records), columns=list(columns))
        frame["time"] = pd.to_datetime(frame["time"], unit="s", utc=True).dt.tz_convert(None)
        return frame

    def costs_by_day(self) -> pd.DataFrame:
        """Turns, input and output tokens and cost (USD) per UTC day and model, the latest day first."""
        day = self["time"].dt.floor("D").rename("day")
        grouped = self.groupby([day, self["model"]]).agg(
            turns=("id", "count"), input_tokens=("input_tokens", "sum"), output_tokens=("output_tokens", "sum"),
            cost=("cost", "sum"),
        )
        return pd.DataFrame(grouped).sort_index(level=["day", "model"], ascending=[False, True])
