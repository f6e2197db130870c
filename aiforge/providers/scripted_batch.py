"""An in-process Batch API for the scripted provider, so a Batch API lesson or test runs with no server.

Jobs live in the provider (``fake.batches``). Each ``status`` call moves a job one step, answering a
share of its requests from the script, so a progress bar moves as with a real provider::

    fake.batches.polls = 3          # status calls spent running; requests are answered across them
    fake.batches.expire_after = 5   # the job expires once 5 requests have run
    fake.batches.calls              # ("submit" | "status" | "cancel" | "results", job id)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from aiforge.core.errors import ItemNotRunError
from aiforge.core.types import CallParams
from aiforge.providers.base import Provider
from aiforge.providers.batch_api import BatchLimits, BatchRequest, BatchStatus, ItemResult, JobState, ProviderBatchAPI

SCRIPTED_LIMITS = BatchLimits(max_requests=50_000, max_bytes=200 * 1024 * 1024)
_job_ids = itertools.count(1)


@dataclass
class _Job:
    id: str
    requests: list[BatchRequest]
    metadata: dict[str, str]
    state: JobState = "running"
    outcomes: dict[str, ItemResult] = field(default_factory=dict)


class ScriptedBatches:
    """The scripted provider's jobs and the knobs that drive them (see the module docstring)."""

    def __init__(self) -> None:
        self.polls = 1
        self.expire_after: int | None = None
        self.calls: list[tuple[str, str]] = []
        self.jobs: dict[str, _Job] = {}


class ScriptedBatchAPI(ProviderBatchAPI[Provider]):
    """Batch jobs answered by ``ScriptedProvider.complete``; an exception scripted for a request is its error.

    ``batches`` is the provider's (``ScriptedProvider.batches``): its jobs outlive this object.
    """

    def __init__(self, provider: Provider, batches: ScriptedBatches, limits: BatchLimits | None = None) -> None:
        super().__init__(provider, limits or SCRIPTED_LIMITS)
        self.batches = batches

    def encode(self, request: BatchRequest) -> dict[str, Any]:
        return {"custom_id": request.custom_id, "request": request}

    async def submit(self, entries: list[dict[str, Any]], metadata: dict[str, str]) -> BatchStatus:
        job = _Job(f"scripted_batch_{next(_job_ids):06d}", [entry["request"] for entry in entries], dict(metadata))
        self.batches.jobs[job.id] = job
        self.batches.calls.append(("submit", job.id))
        return self._status(job)

    async def status(self, job_id: str) -> BatchStatus:
        job = self._job(job_id, "status")
        if job.state == "cancelling":
            job.state = "cancelled"
        elif job.state == "running":
            share = math.ceil(len(job.requests) / max(self.batches.polls, 1))
            for request in [r for r in job.requests if r.custom_id not in job.outcomes][:share]:
                if self.batches.expire_after is not None and len(job.outcomes) >= self.batches.expire_after:
                    job.state = "expired"
                    break
                job.outcomes[request.custom_id] = await self._answer(request)
            if job.state == "running" and len(job.outcomes) == len(job.requests):
                job.state = "completed"
        return self._status(job)

    async def cancel(self, job_id: str) -> BatchStatus:
        job = self._job(job_id, "cancel")
        if job.state == "running":
            job.state = "cancelling"
        return self._status(job)

    async def results(self, job_id: str, params: CallParams) -> dict[str, ItemResult]:
        job = self._job(job_id, "results")
        return {r.custom_id: job.outcomes.get(r.custom_id) or ItemNotRunError(job.state) for r in job.requests}

    async def inputs(self, job_id: str) -> dict[str, str] | None:
        job = self._job(job_id, "inputs")
        return {r.custom_id: r.messages[-1]["content"] for r in job.requests}

    async def _answer(self, request: BatchRequest) -> ItemResult:
        try:
            return await self.provider.complete(request.messages, request.tools, request.params)
        except Exception as exc:  # noqa: BLE001 - a scripted failure is this request's result
            return exc

    def _job(self, job_id: str, call: str) -> _Job:
        self.batches.calls.append((call, job_id))
        if job_id not in self.batches.jobs:
            raise KeyError(f"no scripted batch job {job_id!r} (jobs live in the provider that ran them)")
        return self.batches.jobs[job_id]

    def _status(self, job: _Job) -> BatchStatus:
        failed = sum(isinstance(o, BaseException) for o in job.outcomes.values())
        return BatchStatus(
            id=job.id,
            state=job.state,
            provider_status=job.state,
            total=len(job.requests),
            succeeded=len(job.outcomes) - failed,
            failed=failed,
            metadata=job.metadata,
        )
