"""An earlier home of the Batch API jobs, kept as an import path; they live in ``aiforge.batch.batch_api``."""

from aiforge.batch.batch_api import BatchJob, BatchLimits, JobStatus
from aiforge.core.errors import ItemNotRunError, JobNotFinishedError

__all__ = ["BatchJob", "BatchLimits", "ItemNotRunError", "JobNotFinishedError", "JobStatus"]
