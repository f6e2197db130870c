"""The providers' Batch APIs for an agent's items: ``agent.submit_batch(items) -> BatchJob``.

Not ``run_batch`` (many live calls at once): a Batch API job is sent whole and answered within 24 hours at
half price. See ``job`` for the job's life and how it is found again after a restart, ``status`` for what a
job reports, ``requests`` for what each item sends, and ``aiforge.providers.batch_api`` for the providers' side.
"""

from aiforge.batch.batch_api.job import BatchJob
from aiforge.batch.batch_api.status import JobStatus
from aiforge.core.errors import ItemNotRunError, JobNotFinishedError
from aiforge.providers.batch_api import BatchLimits

__all__ = ["BatchJob", "BatchLimits", "ItemNotRunError", "JobNotFinishedError", "JobStatus"]
