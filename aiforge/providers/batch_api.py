"""The providers' Batch APIs behind one small protocol: submit requests, poll, cancel, read results.

A Batch API runs many single model calls asynchronously (within 24 hours) at half the price. A vendor
module (``openai_batch``, ``anthropic_batch``, the scripted provider's in-process one) translates
requests and results; a provider that has one returns it from ``Provider.batch_api()`` (the others
raise). Splitting a job over a provider's limits (``BatchLimits``) is shared here. Nothing here
imports an SDK or a provider.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar

from aiforge.core.pricing import BATCH_DISCOUNT
from aiforge.core.types import CallParams, Completion, Message, ToolSpec


class _Registered(Protocol):
    @property
    def registry_name(self) -> str: ...


P = TypeVar("P", bound=_Registered)
"""The provider whose calls a Batch API sends."""

JobState = Literal["running", "cancelling", "completed", "expired", "cancelled", "failed"]
"""A job's state in every provider's terms; ``BatchStatus.provider_status`` keeps the vendor's own word."""

FINAL_STATES: frozenset[str] = frozenset({"completed", "expired", "cancelled", "failed"})


@dataclass(frozen=True, slots=True)
class BatchRequest:
    """One model call of a batch, in neutral form; ``custom_id`` finds its result."""

    custom_id: str
    messages: list[Message]
    params: CallParams
    tools: list[ToolSpec] | None = None


@dataclass(frozen=True, slots=True)
class BatchLimits:
    """How much one provider job may hold; a bigger submission is split into several jobs."""

    max_requests: int
    max_bytes: int
    """The size of the JSONL file (OpenAI) or of the create request's body (Anthropic)."""


@dataclass(frozen=True, slots=True)
class BatchStatus:
    """A provider job as last seen: its state and request counts."""

    id: str
    state: JobState
    provider_status: str
    total: int
    succeeded: int = 0
    failed: int = 0
    """Requests that ran and failed; items that never ran are counted by ``not_run`` when final."""
    metadata: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    """Why a job ``failed`` as a whole (validation), None otherwise."""

    @property
    def done(self) -> int:
        return self.succeeded + self.failed

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES


ItemResult = Completion | BaseException
"""A request's outcome: its ``Completion``, or the error it failed with (``ItemNotRunError`` if never run)."""


class ProviderBatchAPI(ABC, Generic[P]):
    """One provider's Batch API; ``provider`` builds each request exactly as a live call would."""

    limits: BatchLimits

    def __init__(self, provider: P, limits: BatchLimits) -> None:
        self.provider = provider
        self.limits = limits

    @property
    def discount(self) -> float:
        """The share of the list price this Batch API bills (``core.pricing.BATCH_DISCOUNT``; 1.0: the list price)."""
        return BATCH_DISCOUNT.get(self.provider.registry_name, 1.0)

    @abstractmethod
    def encode(self, request: BatchRequest) -> dict[str, Any]:
        """The request as one entry of the job's input (a JSONL line, a ``requests`` element)."""

    @abstractmethod
    async def submit(self, entries: list[dict[str, Any]], metadata: dict[str, str]) -> BatchStatus:
        """Create one job of ``encode``d entries (within ``limits``)."""

    @abstractmethod
    async def status(self, job_id: str) -> BatchStatus:
        """The job as it is now."""

    @abstractmethod
    async def cancel(self, job_id: str) -> BatchStatus:
        """Ask the provider to stop the job; requests not yet run end as not run."""

    @abstractmethod
    async def results(self, job_id: str, params: CallParams) -> dict[str, ItemResult]:
        """Every request's outcome by ``custom_id``, once the job is final (``params``: how it was asked)."""

    async def inputs(self, job_id: str) -> dict[str, str] | None:
        """The last user message of each request by ``custom_id``, when the provider keeps inputs (else None)."""
        return None

    def split(self, entries: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        """``entries`` in order, cut into chunks within ``limits`` (an entry over the size limit alone)."""
        chunks: list[list[dict[str, Any]]] = [[]]
        size = 0
        for entry in entries:
            entry_size = len(json.dumps(entry, separators=(",", ":"), default=str).encode()) + 1
            chunk = chunks[-1]
            if chunk and (len(chunk) >= self.limits.max_requests or size + entry_size > self.limits.max_bytes):
                chunks.append(chunk := [])
                size = 0
            chunk.append(entry)
            size += entry_size
        return [chunk for chunk in chunks if chunk]
