"""``submit_items``: a batch's items to the provider's Batch API, as one or several ``BatchJob``s."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from aiforge.core.templates import RowTemplate

if TYPE_CHECKING:
    from aiforge.batch.batch_api.job import BatchJob
    from aiforge.batch.owner import BatchOwner
    from aiforge.providers.batch_api import BatchLimits


async def submit_items(
    owner: BatchOwner, items: Any, *, output: Any = None, prompt: str | RowTemplate | None = None,
    checkpoint: str | os.PathLike[str] | None = None, limits: BatchLimits | None = None,
) -> BatchJob:
    """Send ``items`` to ``owner``'s provider's Batch API and return the job at once (see ``BatchJob``)."""
    from aiforge.batch.batch_api.job import BatchJob

    return await BatchJob.asubmit(owner, items, output=output, prompt=prompt, checkpoint=checkpoint, limits=limits)
