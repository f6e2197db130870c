"""The import path the docs and the tutorials give for ``job_summary`` and ``compute``: the Dask accessor lives in
``aiforge.dataframes.dask``; importing this registers ``ddf.aiforge`` as that does."""

from __future__ import annotations

from aiforge.dataframes.dask import DaskOperations, JobSummary, compute, job_summary

__all__ = ["DaskOperations", "JobSummary", "compute", "job_summary"]
