"""The providers' Batch APIs for aiforge modules: ``agent.submit_batch(items) -> BatchJob``.

See ``job`` for the job's life and how it is found again after a restart, ``requests`` for what each
item sends, and ``aiforge.providers.batch_api`` for the providers' side.
"""

from aiforge.modules.jobs.job import BatchJob, JobNotFinishedError, JobStatus
from aiforge.providers.batch_api import BatchLimits, ItemNotRunError

__all__ = ["BatchJob", "BatchLimits", "ItemNotRunError", "JobNotFinishedError", "JobStatus"]
