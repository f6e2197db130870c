"""``BatchOptions``: how a batch runs, checked once when it is made (a frozen value the orchestrator reads)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from aiforge.core.output import OutputSpec
from aiforge.core.templates import RowTemplate
from aiforge.core.types import UsageError


@dataclass(frozen=True)
class BatchOptions:
    """``run_batch``'s arguments after the items: see ``ChatAgent.arun_batch`` for what each one does."""

    concurrency: int = 10
    max_batch: int = 100
    output: OutputSpec | None = None
    prompt: str | RowTemplate | None = None
    cache: bool | str | os.PathLike[str] | None = None
    checkpoint: str | os.PathLike[str] | None = None
    restart: bool = False
    max_cost: float | None = None
    estimate: bool = False

    def __post_init__(self) -> None:
        for name in ("concurrency", "max_batch"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"{name} must be an integer >= 1, got {value!r}")
        cost = self.max_cost
        if cost is not None and (isinstance(cost, bool) or not isinstance(cost, int | float) or not cost >= 0):
            raise UsageError(f"max_cost must be a number of USD >= 0, got {cost!r}")
        if self.checkpoint is not None and (isinstance(self.checkpoint, bool) or self.checkpoint == "memory"):
            raise UsageError(f"checkpoint= is a file path (one file per batch), not {self.checkpoint!r}")

    @classmethod
    def of(cls, output: Any = None, **options: Any) -> BatchOptions:
        """The options with ``output=`` converted (the one conversion: a type, a spec, or None)."""
        return cls(output=None if output is None else OutputSpec.of(output), **options)
