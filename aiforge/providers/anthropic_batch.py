"""Anthropic's Message Batches API: the wire translation.

A job is one ``POST /v1/messages/batches`` of ``{custom_id, params}`` requests, where ``params`` is
what the provider sends for a live call (``_request``). Its results stream as JSONL once the job has
ended: ``succeeded`` (a Message), ``errored`` (an error response), ``canceled`` or ``expired``.
The API keeps no metadata and does not return the requests, so a job's inputs come from the caller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiforge.core.errors import ItemNotRunError
from aiforge.core.types import CallParams
from aiforge.providers.anthropic_completion import ERROR_TYPE_STATUS, completion_from_anthropic
from aiforge.providers.anthropic_output import output_tool_of
from aiforge.providers.batch_api import BatchLimits, BatchRequest, BatchStatus, ItemResult, JobState, ProviderBatchAPI
from aiforge.providers.sdk import SDKProvider, sdk_call
from aiforge.providers.sdk_errors import error_for_status

if TYPE_CHECKING:
    import anthropic

ANTHROPIC_LIMITS = BatchLimits(max_requests=100_000, max_bytes=256 * 1024 * 1024)
"""Anthropic's documented limits for one Message Batch (batch processing guide)."""

_NOT_RUN = {"canceled": "cancelled", "expired": "expired"}


class AnthropicBatchAPI(ProviderBatchAPI["SDKProvider[anthropic.AsyncAnthropic]"]):
    """The Message Batches API of the ``anthropic`` provider (``AnthropicProvider.batch_api()``)."""

    def __init__(self, provider: SDKProvider[anthropic.AsyncAnthropic], limits: BatchLimits | None = None) -> None:
        super().__init__(provider, limits or ANTHROPIC_LIMITS)

    def encode(self, request: BatchRequest) -> dict[str, Any]:
        params = self.provider._request(request.messages, request.tools, request.params)
        return {"custom_id": request.custom_id, "params": params}

    async def submit(self, entries: list[dict[str, Any]], metadata: dict[str, str]) -> BatchStatus:
        batch = await sdk_call(self.provider, lambda client: client.messages.batches.create(requests=entries))
        return self._status(batch)

    async def status(self, job_id: str) -> BatchStatus:
        return self._status(await sdk_call(self.provider, lambda client: client.messages.batches.retrieve(job_id)))

    async def cancel(self, job_id: str) -> BatchStatus:
        return self._status(await sdk_call(self.provider, lambda client: client.messages.batches.cancel(job_id)))

    async def results(self, job_id: str, params: CallParams) -> dict[str, ItemResult]:
        output_tool = output_tool_of(params.output)

        async def read(client: anthropic.AsyncAnthropic) -> list[Any]:
            return [line async for line in await client.messages.batches.results(job_id)]

        outcomes: dict[str, ItemResult] = {}
        for line in await sdk_call(self.provider, read):
            result = line.result
            if result.type == "succeeded":
                outcomes[line.custom_id] = completion_from_anthropic(result.message, output_tool)
            elif result.type == "errored":
                error = result.error.error
                outcomes[line.custom_id] = error_for_status(
                    ERROR_TYPE_STATUS.get(error.type, 500),
                    error.message,
                    provider=self.provider.name,
                    request_id=result.error.request_id,
                )
            else:
                outcomes[line.custom_id] = ItemNotRunError(_NOT_RUN.get(result.type, result.type))
        return outcomes

    def _status(self, batch: anthropic.types.messages.MessageBatch) -> BatchStatus:
        counts = batch.request_counts
        total = counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
        state: JobState
        if batch.processing_status == "ended":
            state = "expired" if counts.expired else "cancelled" if batch.cancel_initiated_at else "completed"
        else:
            state = "cancelling" if batch.processing_status == "canceling" else "running"
        return BatchStatus(
            id=batch.id,
            state=state,
            provider_status=batch.processing_status,
            total=total,
            succeeded=counts.succeeded,
            failed=counts.errored,
        )
