"""``submit_batch`` on every module: its items to the provider's Batch API (``BatchJob``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from aiforge.core.aio import run_sync
from aiforge.core.templates import RowTemplate

if TYPE_CHECKING:
    from aiforge.modules.jobs.job import BatchJob
    from aiforge.modules.jobs.owner import JobOwner
    from aiforge.providers.batch_api import BatchLimits


class SubmitsBatchJobs:
    """What ``BaseModule`` gets from ``modules/jobs``: ``submit_batch`` and ``asubmit_batch``."""

    def submit_batch(
        self, items: Sequence[str] | Any, *, output: Any = None, prompt: str | RowTemplate | None = None,
        checkpoint: str | os.PathLike[str] | None = None, limits: BatchLimits | None = None,
    ) -> BatchJob:
        """Send ``items`` to the provider's Batch API (half price, within 24 hours) and return at once.

        ``items``, ``prompt`` and ``output`` are what ``run_batch`` takes (lists, Series, DataFrames,
        row templates, a type); every item is one model call with the agent's system prompt and
        settings (no tools). A submission over the provider's limits (``limits`` replaces them) is
        split into several jobs. Follow it with ``job.wait()`` / ``job.results()``; see ``BatchJob``.
        Works with openai, internal_gateway, anthropic and the scripted provider (in-process).
        """
        return run_sync(self.asubmit_batch(items, output=output, prompt=prompt, checkpoint=checkpoint, limits=limits))

    async def asubmit_batch(
        self, items: Sequence[str] | Any, *, output: Any = None, prompt: str | RowTemplate | None = None,
        checkpoint: str | os.PathLike[str] | None = None, limits: BatchLimits | None = None,
    ) -> BatchJob:
        """``submit_batch`` in async code."""
        from aiforge.modules.jobs.job import BatchJob

        module: JobOwner = self  # type: ignore[assignment]
        return await BatchJob.asubmit(module, items, output=output, prompt=prompt, checkpoint=checkpoint,
                                      limits=limits)
