"""``BaseModule``: the interface every aiforge module offers (the reference page's "BaseModule interface").

A protocol, not a base class: ``ChatAgent`` has these methods itself and runs its batches through
``aiforge.batch`` (composition). ``isinstance(agent, BaseModule)`` checks the methods are there. The batch
types, once defined here, live in ``aiforge.batch.results``; importing them from here keeps working.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

from aiforge.batch.options import DEFAULT_CONCURRENCY
from aiforge.batch.results import BatchFailure, BatchItem, BatchResult
from aiforge.core.errors import MissingValueError

__all__ = ["BaseModule", "BatchFailure", "BatchItem", "BatchResult", "MissingValueError"]


@runtime_checkable
class BaseModule(Protocol):
    """One input to one result (``run``/``arun``), streamed (``run_stream``/``arun_stream``), or many at once."""

    def run(self, text: str, **kwargs: Any) -> Any: ...

    async def arun(self, text: str, **kwargs: Any) -> Any: ...

    def run_stream(self, text: str, **kwargs: Any) -> Iterator[str]: ...

    def arun_stream(self, text: str, **kwargs: Any) -> AsyncIterator[str]: ...

    def run_batch(
        self, items: Sequence[str] | Any, concurrency: int = DEFAULT_CONCURRENCY, max_batch: int = 100, **options: Any
    ) -> Any:
        """Many inputs concurrently, results in input order (a ``BatchResult``)."""
        ...

    async def arun_batch(
        self, items: Sequence[str] | Any, concurrency: int = DEFAULT_CONCURRENCY, max_batch: int = 100, **options: Any
    ) -> Any:
        """``run_batch`` in async code."""
        ...
