"""``JobStatus``: a Batch API job as last seen, over all the provider jobs it was split into."""

from __future__ import annotations

from dataclasses import dataclass

from aiforge.providers.batch_api import BatchStatus


@dataclass(frozen=True, slots=True)
class JobStatus:
    """A job as last seen: its state over all its provider jobs, and request counts."""

    state: str
    """``running``, ``cancelling``, or when final ``completed``, ``expired``, ``cancelled`` or ``failed``."""
    total: int
    succeeded: int
    failed: int
    jobs: tuple[BatchStatus, ...]

    @property
    def done(self) -> int:
        return self.succeeded + self.failed

    @property
    def final(self) -> bool:
        return all(job.final for job in self.jobs)

    def __str__(self) -> str:
        return f"{self.state}: {self.succeeded} ok, {self.failed} failed of {self.total} requests"


def job_status(jobs: tuple[BatchStatus, ...]) -> JobStatus:
    """One status over the provider jobs of a (split) job: the least finished state wins."""
    states = {job.state for job in jobs}
    state = next((s for s in ("running", "cancelling", "failed", "expired", "cancelled") if s in states), "completed")
    return JobStatus(
        state=state,
        total=sum(j.total for j in jobs),
        succeeded=sum(j.succeeded for j in jobs),
        failed=sum(j.failed for j in jobs),
        jobs=jobs,
    )
