"""``BatchJob``: items sent to a provider's Batch API (half price, answered within 24 hours).

``agent.submit_batch(items)`` sends them and returns at once; ``status()``, ``wait()``, ``cancel()``
and ``results()`` follow the job. A submission over the provider's limits (requests per job, bytes)
becomes several provider jobs, merged back in input order.

The manifest (which jobs, which item is which) lives with the provider: ``job.id`` is the provider's
job id, or the ids of a split job joined by ``,``; each request's ``custom_id`` is ``item-<position>``.
``BatchJob.attach(job.id, agent=...)`` after a kernel restart finds everything again; the item texts
come back from OpenAI's input file or the scripted provider, and for Anthropic (which returns no
inputs) from ``items=`` given again. With ``checkpoint=`` the job's id is kept in that file as soon as it is
submitted: the same ``submit_batch`` call again (a re-run cell, a restarted kernel) attaches to that job instead
of paying twice, and ``BatchJob.attach(checkpoint=..., agent=...)`` needs no id. When the results are read,
the finished items are recorded there too, so ``run_batch(items, checkpoint=...)`` afterwards runs only the
items that failed or never ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from aiforge.batch.batch_api.finished import job_result, record_finished
from aiforge.batch.batch_api.requests import batch_requests, call_params, index_of
from aiforge.batch.batch_api.status import JobStatus, job_status
from aiforge.batch.file_route import file_route_of
from aiforge.batch.identity import batch_identity
from aiforge.batch.results import BatchFailure, BatchResult
from aiforge.batch.resume import open_checkpoint, recorded_job
from aiforge.core.aio import run_sync
from aiforge.core.errors import (
    FileInputError,
    ItemNotRunError,
    JobNotFinishedError,
)
from aiforge.core.output import OutputSpec
from aiforge.core.templates import BatchPrompts, RowTemplate, batch_prompts
from aiforge.core.types import ProviderError
from aiforge.providers.batch_api import BatchLimits, BatchStatus, ProviderBatchAPI

if TYPE_CHECKING:
    from aiforge.batch.owner import BatchOwner
    from aiforge.store import Checkpoint

JOB_ID_SEPARATOR = ","
DEFAULT_POLL_INTERVAL = 30.0
"""Seconds between status calls in ``wait``: Batch API jobs take minutes to hours."""


class BatchJob:
    """Items of one ``submit_batch`` call, running in a provider's Batch API."""

    def __init__(
        self, module: BatchOwner, api: ProviderBatchAPI[Any], ids: list[str], *, inputs: list[str] | None,
        index: Any = None, output: OutputSpec | None = None, missing: dict[int, str | BaseException] | None = None,
        checkpoint: str | os.PathLike[str] | None = None,
    ) -> None:
        self.module = module
        self.api = api
        self.ids = ids
        """The provider's job ids (several when the submission was split)."""
        self.inputs = inputs
        self.index = index
        self.output = output
        self.missing: dict[int, str | BaseException] = missing or {}
        self.checkpoint = checkpoint
        self.params = call_params(module, output)
        self.not_run: list[BatchFailure] = []
        """After ``results()``: the items the provider never ran (job expired, cancelled or failed)."""
        self.reattached = False
        """True when ``submit_batch(..., checkpoint=)`` found this batch's job in the checkpoint (nothing submitted)."""
        self.store: Checkpoint | None = None
        """The checkpoint at ``checkpoint`` once opened for this batch (``record_finished`` writes to it)."""
        self._started = time.monotonic()
        self._last: dict[str, BatchStatus] = {}

    @property
    def id(self) -> str:
        """What ``BatchJob.attach`` takes: the provider's job id, or a split job's ids joined by ``,``."""
        return JOB_ID_SEPARATOR.join(self.ids)

    def __repr__(self) -> str:
        return f"BatchJob(id={self.id!r}, provider={self.module.provider_name!r})"

    # -- following the job ------------------------------------------------------------------

    async def astatus(self) -> JobStatus:
        jobs = tuple(await asyncio.gather(*(self.api.status(job_id) for job_id in self.ids)))
        self._last.update((job.id, job) for job in jobs)
        return job_status(jobs)

    def status(self) -> JobStatus:
        """Where the job is now (one status call per provider job)."""
        return run_sync(self.astatus())

    async def acancel(self) -> JobStatus:
        for job_id in self.ids:
            last = self._last.get(job_id)
            if last is None or not last.final:
                try:
                    self._last[job_id] = await self.api.cancel(job_id)
                except ProviderError:
                    self._last[job_id] = await self.api.status(job_id)
                    if not self._last[job_id].final:  # not "it ended meanwhile": a real failure
                        raise
        return job_status(tuple(self._last[job_id] for job_id in self.ids))

    def cancel(self) -> JobStatus:
        """Ask the provider to stop; items it has not run end as not run (see ``not_run``)."""
        return run_sync(self.acancel())

    async def await_results(
        self, *, progress: bool = True, poll_interval: float = DEFAULT_POLL_INTERVAL, timeout: float | None = None,
        first_poll: float | None = None,
    ) -> BatchResult:
        """``wait()`` in async code; ``first_poll``: the first pause, doubled at each poll up to ``poll_interval``."""
        pause = poll_interval if first_poll is None else min(first_poll, poll_interval)
        bar = None
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                status = await self.astatus()
                if bar is None:
                    bar = _progress_bar(self.module, progress and not status.final, status.total)
                if bar is not None:
                    bar.set_postfix_str(status.state, refresh=False)
                    bar.update(status.done - bar.n)
                if status.final:
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError(f"batch job {self.id} still {status}; wait() again or attach later")
                await asyncio.sleep(pause)
                pause = min(pause * 2, poll_interval)
        finally:
            if bar is not None:
                bar.close()
        return await self.aresults()

    def wait(
        self, *, progress: bool = True, poll_interval: float = DEFAULT_POLL_INTERVAL, timeout: float | None = None
    ) -> BatchResult:
        """Poll until the job is final, with a progress bar of its request counts; then ``results()``.

        Ctrl-C stops waiting, never the job: ``wait()`` again, or ``BatchJob.attach(job.id, ...)`` later.
        """
        return run_sync(self.await_results(progress=progress, poll_interval=poll_interval, timeout=timeout))

    # -- results ----------------------------------------------------------------------------

    async def aresults(self) -> BatchResult:
        status = await self.astatus()
        if not status.final:
            raise JobNotFinishedError(f"batch job {self.id} is {status}; call wait() first")
        outcomes: dict[int, Any] = {}
        for job in status.jobs:
            found = {} if job.state == "failed" else await self.api.results(job.id, self.params)
            for key, found_outcome in found.items():
                index = index_of(key)
                if index is not None:
                    outcomes[index] = found_outcome
        inputs = self.inputs if self.inputs is not None else await self._recovered_inputs(outcomes)
        reason = next((job.state for job in status.jobs if job.state != "completed"), "failed")
        result = job_result(
            self.module, inputs, outcomes, missing=self.missing, reason=reason, output=self.output,
            discount=self.api.discount, index=self.index, wall_time_s=time.monotonic() - self._started,
        )
        self.not_run = [f for f in result.failed if isinstance(f.error, ItemNotRunError)]
        if self.checkpoint is not None:
            record_finished(result, self.module, self.output, self.checkpoint, self.store)
        return result

    def results(self) -> BatchResult:
        """The items in input order: answers at the Batch API's price, failures with their errors.

        An item the provider never ran fails with ``ItemNotRunError`` (also in ``job.not_run``).
        """
        return run_sync(self.aresults())

    async def _recovered_inputs(self, outcomes: dict[int, Any]) -> list[str]:
        texts: dict[int, str] = {}
        for job_id in self.ids:
            for key, text in (await self.api.inputs(job_id) or {}).items():
                if (index := index_of(key)) is not None:
                    texts[index] = text
        count = max([*texts, *outcomes, *self.missing], default=-1) + 1
        self.inputs = [texts.get(i, "") for i in range(count)]
        return self.inputs

    # -- submitting and attaching -----------------------------------------------------------

    @classmethod
    async def asubmit(
        cls, module: BatchOwner, items: Any, *, output: Any = None, prompt: str | RowTemplate | None = None,
        checkpoint: str | os.PathLike[str] | None = None, limits: BatchLimits | None = None,
    ) -> BatchJob:
        """``submit_batch``."""
        spec = None if output is None else OutputSpec.of(output)
        prompts = batch_prompts(items, prompt, route=file_route_of(module))
        identity = batch_identity(module, prompts.texts, spec)
        store = None if checkpoint is None else open_checkpoint(checkpoint, identity, False)
        return await cls.asubmit_prompts(module, prompts, spec, checkpoint=checkpoint, store=store, limits=limits)

    @classmethod
    async def asubmit_prompts(
        cls, module: BatchOwner, prompts: BatchPrompts, spec: OutputSpec | None, *,
        checkpoint: str | os.PathLike[str] | None, store: Checkpoint | None, limits: BatchLimits | None = None,
        only: Collection[int] | None = None,
    ) -> BatchJob:
        """Send ``prompts`` (``only``: the positions to send, None for every row with a value); ``store`` is the
        checkpoint at ``checkpoint`` of this very batch (its identity computed once, by the caller). A row whose file
        is gone, changed or over the provider's limit when its request is built fails alone, as at prepare."""
        api = module.provider.batch_api(limits)
        unsent: dict[int, str | BaseException] = {**prompts.missing, **prompts.failed}  # a file that failed
        job = cls(module, api, [], inputs=prompts.texts, index=prompts.index, output=spec,
                  missing=unsent, checkpoint=checkpoint)
        job.store = store
        if store is not None:
            # A rerun of the cell (or after a restart) attaches to the job this batch already has: pay once.
            if (submitted := store.job()) is not None:
                job.ids = [part for part in submitted.split(JOB_ID_SEPARATOR) if part]
                job.reattached = True
                return job
        texts = {
            i: text
            for i, text in enumerate(prompts.texts)
            if i not in prompts.missing and i not in prompts.failed and (only is None or i in only)
        }
        entries = []
        for position, request in zip(texts, batch_requests(module, texts, job.params), strict=True):
            try:
                entries.append(api.encode(request))
            except FileInputError as exc:  # gone, changed or over a limit since prepare: this row alone fails
                job.missing[position] = exc
        chunks = api.split(entries)
        try:
            for part, chunk in enumerate(chunks, start=1):
                metadata = {"aiforge_items": str(len(prompts.texts)), "aiforge_part": f"{part}/{len(chunks)}"}
                job.ids.append((await api.submit(chunk, metadata)).id)
        except BaseException:
            # The caller gets an error and no job: parts already submitted must not run (and bill) unseen.
            for job_id in job.ids:
                with contextlib.suppress(Exception):
                    await api.cancel(job_id)
            raise
        if store is not None:
            store.record_job(job.id, module.provider_name)
        return job

    @classmethod
    def attach(
        cls, job_id: str | None = None, *, agent: BatchOwner, items: Any = None,
        prompt: str | RowTemplate | None = None, output: Any = None,
        checkpoint: str | os.PathLike[str] | None = None, limits: BatchLimits | None = None,
    ) -> BatchJob:
        """The job ``job_id`` (a ``BatchJob.id``) again, e.g. after a kernel restart, through ``agent``.

        Without ``job_id``, the job is the one ``submit_batch(..., checkpoint=)`` recorded in ``checkpoint``.
        Pass the same ``output=`` to get typed results; ``items=`` (and ``prompt=``) restore the item
        texts where the provider keeps no inputs (Anthropic) and must be the items submitted.
        """
        if job_id is None:
            job_id = recorded_job(checkpoint, agent.provider_name)
        spec = None if output is None else OutputSpec.of(output)
        api = agent.provider.batch_api(limits)
        inputs, index, missing = None, None, dict[int, str | BaseException]()
        if items is not None:
            prompts = batch_prompts(items, prompt, route=file_route_of(agent))
            inputs, index, missing = prompts.texts, prompts.index, dict(prompts.missing)
        ids = [part for part in job_id.split(JOB_ID_SEPARATOR) if part]
        return cls(agent, api, ids, inputs=inputs, index=index, output=spec, missing=missing, checkpoint=checkpoint)


def _progress_bar(module: BatchOwner, progress: bool, total: int) -> Any:
    from aiforge.core.progress import progress_bar, progress_enabled

    if not (progress and progress_enabled(module.settings.PROGRESS_BAR)):
        return None
    return progress_bar(total, desc="aiforge batch job")
