"""The providers' Batch APIs behind one small protocol: submit requests, poll, cancel, read results.

A Batch API runs many single model calls asynchronously (within 24 hours) at half the price. A vendor
module (``openai_batch``, ``anthropic_batch``, the scripted provider's in-process one) translates
requests and results; ``batch_api_for(provider)`` finds the one of a provider. Splitting a job over
a provider's limits (``BatchLimits``) is shared here. Nothing here imports an SDK.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from aiforge.core.types import AIForgeError, CallParams, Completion, Message, ProviderError, ToolSpec

if TYPE_CHECKING:
    from aiforge.providers.base import Provider
    from aiforge.providers.sdk import SDKProvider

T = TypeVar("T")

JobState = Literal["running", "cancelling", "completed", "expired", "cancelled", "failed"]
"""A job's state in every provider's terms; ``BatchStatus.provider_status`` keeps the vendor's own word."""

FINAL_STATES: frozenset[str] = frozenset({"completed", "expired", "cancelled", "failed"})


class ItemNotRunError(AIForgeError):
    """A batch request the provider never ran: the job expired, was cancelled or failed before reaching it.

    ``reason`` is ``"expired"``, ``"cancelled"`` or ``"failed"``; submitting the item again runs it.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"not run: the batch job was {reason}" + (f" ({detail})" if detail else ""))
        self.reason = reason


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


class ProviderBatchAPI(ABC):
    """One provider's Batch API; ``provider`` builds each request exactly as a live call would."""

    limits: BatchLimits

    def __init__(self, provider: Provider, limits: BatchLimits) -> None:
        self.provider = provider
        self.limits = limits

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


def batch_api_for(provider: Provider, limits: BatchLimits | None = None) -> ProviderBatchAPI:
    """The Batch API of ``provider``; ``limits`` replaces the provider's own (to test splitting).

    Raises ``ProviderError`` naming the providers that have one when ``provider`` has none.
    """
    own = getattr(provider, "batch_api", None)
    if callable(own):
        api: ProviderBatchAPI = own(limits)
        return api
    name = getattr(provider, "provider_name", None) or provider.name
    if name in ("openai", "internal_gateway"):
        from aiforge.providers.openai_batch import OpenAIBatchAPI

        return OpenAIBatchAPI(provider, limits)  # type: ignore[arg-type]
    if name == "anthropic":
        from aiforge.providers.anthropic_batch import AnthropicBatchAPI

        return AnthropicBatchAPI(provider, limits)  # type: ignore[arg-type]
    raise ProviderError(
        f"the {name} provider has no Batch API; submit_batch works with openai, internal_gateway (a gateway "
        f"serving /v1/files and /v1/batches), anthropic and scripted. Use run_batch for {name}.",
        provider=name,
    )


async def sdk_call(provider: SDKProvider[Any], call: Callable[[Any], Awaitable[T]]) -> T:
    """``call(client)`` with the provider's retry policy, its SDK errors mapped as for a live call."""
    from aiforge.core.retry import call_with_retries

    caught = provider._sdk_errors().caught

    async def attempt() -> T:
        try:
            return await call(provider.client())
        except caught as exc:
            provider._fail(exc)

    return await call_with_retries(attempt, policy=provider.retry_policy)
