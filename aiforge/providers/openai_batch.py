"""OpenAI's Batch API (Files + Batches) for ``openai`` and ``internal_gateway``: the wire translation.

A job is a JSONL file of ``{custom_id, method, url, body}`` lines uploaded with ``purpose="batch"``
and a batch over it; its answers come back as an output file (2xx) and an error file (the rest, and
lines the job never ran: ``batch_expired`` / ``batch_cancelled``). Each ``body`` is what the provider
sends for a live call (``_request``: structured output, system prompt, max tokens field).
A gateway must serve ``/v1/files`` and ``/v1/batches`` (LiteLLM does; vLLM's server does not, and
its 404 reaches the caller as a ``NotFoundError``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from aiforge.core.errors import ItemNotRunError
from aiforge.core.types import CallParams, ProviderError
from aiforge.providers.batch_api import BatchLimits, BatchRequest, BatchStatus, ItemResult, JobState, ProviderBatchAPI
from aiforge.providers.file_blocks import content_text
from aiforge.providers.openai_completion import completion_from_openai
from aiforge.providers.openai_wire import ChatCompletionsProvider
from aiforge.providers.sdk import sdk_call
from aiforge.providers.sdk_errors import error_for_status, redact_body

if TYPE_CHECKING:
    import openai

OPENAI_LIMITS = BatchLimits(max_requests=50_000, max_bytes=200 * 1024 * 1024)
"""OpenAI's documented limits for one batch (Batch API guide)."""

_ENDPOINT: Final = "/v1/chat/completions"
_STATES: dict[str, JobState] = {
    "validating": "running",
    "in_progress": "running",
    "finalizing": "running",
    "cancelling": "cancelling",
    "completed": "completed",
    "expired": "expired",
    "cancelled": "cancelled",
    "failed": "failed",
}
_NOT_RUN = {"batch_expired": "expired", "batch_cancelled": "cancelled"}


class OpenAIBatchAPI(ProviderBatchAPI[ChatCompletionsProvider]):
    """The Files + Batches API of a Chat Completions provider (``batch_api()`` of ``openai``, ``internal_gateway``)."""

    def __init__(self, provider: ChatCompletionsProvider, limits: BatchLimits | None = None) -> None:
        super().__init__(provider, limits or OPENAI_LIMITS)

    def encode(self, request: BatchRequest) -> dict[str, Any]:
        body = self.provider._request(request.messages, request.tools, request.params)
        return {"custom_id": request.custom_id, "method": "POST", "url": _ENDPOINT, "body": body}

    async def submit(self, entries: list[dict[str, Any]], metadata: dict[str, str]) -> BatchStatus:
        content = b"".join(json.dumps(entry, separators=(",", ":")).encode() + b"\n" for entry in entries)

        async def create(client: openai.AsyncOpenAI) -> Any:
            upload = await client.files.create(file=("aiforge-batch.jsonl", content), purpose="batch")
            return await client.batches.create(
                input_file_id=upload.id, endpoint=_ENDPOINT, completion_window="24h", metadata=metadata
            )

        return self._status(await sdk_call(self.provider, create))

    async def status(self, job_id: str) -> BatchStatus:
        return self._status(await sdk_call(self.provider, lambda client: client.batches.retrieve(job_id)))

    async def cancel(self, job_id: str) -> BatchStatus:
        return self._status(await sdk_call(self.provider, lambda client: client.batches.cancel(job_id)))

    async def results(self, job_id: str, params: CallParams) -> dict[str, ItemResult]:
        batch = await sdk_call(self.provider, lambda client: client.batches.retrieve(job_id))
        outcomes: dict[str, ItemResult] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            for line in await self._lines(file_id):
                outcomes[line["custom_id"]] = self._outcome(line)
        return outcomes

    async def inputs(self, job_id: str) -> dict[str, str] | None:
        batch = await sdk_call(self.provider, lambda client: client.batches.retrieve(job_id))
        texts = {}
        for line in await self._lines(batch.input_file_id):
            users = [m for m in line["body"].get("messages", []) if m.get("role") == "user"]
            texts[line["custom_id"]] = content_text(users[-1]["content"]) if users else ""
        return texts

    async def _lines(self, file_id: str | None) -> list[dict[str, Any]]:
        if not file_id:
            return []
        content = await sdk_call(self.provider, lambda client: client.files.content(file_id))
        return [json.loads(line) for line in content.text.splitlines() if line.strip()]

    def _outcome(self, line: dict[str, Any]) -> ItemResult:
        response, error = line.get("response"), line.get("error")
        if response is not None and 200 <= response.get("status_code", 0) < 300:
            return completion_from_openai(response.get("body") or {})
        if response is None:
            code = (error or {}).get("code") or ""
            if code in _NOT_RUN:
                return ItemNotRunError(_NOT_RUN[code])
            return ProviderError(f"{code}: {(error or {}).get('message', '')}", provider=self.provider.name)
        body = redact_body(response.get("body"), self.provider._secrets)
        detail = body.get("error") if isinstance(body, dict) else None
        message = detail.get("message") if isinstance(detail, dict) else None
        return error_for_status(
            response.get("status_code"),
            message or "the request failed",
            provider=self.provider.name,
            request_id=response.get("request_id"),
            body=body,
        )

    def _status(self, batch: Any) -> BatchStatus:
        counts = batch.request_counts
        errors = batch.errors.data if batch.errors and batch.errors.data else []
        return BatchStatus(
            id=batch.id,
            state=_STATES.get(batch.status, "running"),
            provider_status=batch.status,
            total=counts.total if counts else 0,
            succeeded=counts.completed if counts else 0,
            failed=counts.failed if counts else 0,
            metadata=dict(batch.metadata or {}),
            error="; ".join(f"{e.code}: {e.message}" for e in errors) or None,
        )
