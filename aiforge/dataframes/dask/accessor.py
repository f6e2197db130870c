"""``ddf.aiforge``, registered with Dask: map, classify, filter, extract and embed on a Dask DataFrame, lazily, over
``partition_columns``; ``agg`` and ``dedup``, computed at once. Each method is a signature and a call.

Each lazy operation is one ``map_partitions`` with the right ``meta`` (``rows.py``), so ``.compute()``,
``.persist()`` and ``.to_parquet()`` work and Dask's progress bar and dashboard show the partitions. It needs a
``distributed.Client``: the job's limits and its summary live on the scheduler (``job.py``, ``summary.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dask.dataframe as dd
import pandas as pd
from dask.dataframe.extensions import register_dataframe_accessor

from aiforge.batch.options import (
    DEFAULT_CONCURRENCY,
    PARTITION_OPTIONS,
    ROUND_OPTIONS,
    ROW_OPTIONS,
    VECTOR_OPTIONS,
    with_options,
)
from aiforge.core.templates import no_such_column
from aiforge.core.types import UsageError
from aiforge.dataframes.accessor import LABEL_COLUMN, _attach
from aiforge.dataframes.dask.job import JOB_ATTRIBUTE, with_job
from aiforge.dataframes.dask.rows import embedded_partition, embedding_job, job_columns, kept_rows, row_job
from aiforge.dataframes.partition import check_no_keys


@register_dataframe_accessor("aiforge")
class DaskOperations:
    """``ddf.aiforge.map / classify / filter / extract``: the pandas accessor's operations, per partition."""

    def __init__(self, data: dd.DataFrame) -> None:
        self._data = data

    @with_options(PARTITION_OPTIONS)
    def map(
        self, prompt: str, output: Any = None, *, concurrency: int = DEFAULT_CONCURRENCY, **settings: Any
    ) -> dd.DataFrame:
        """A lazy DataFrame on the input's index: ``response``, or the fields of ``output``."""
        return self._new_columns("map", concurrency, settings, prompt=prompt, output=output)

    @with_options(PARTITION_OPTIONS)
    def classify(
        self, prompt: str, labels: Sequence[str], *, concurrency: int = DEFAULT_CONCURRENCY, **settings: Any
    ) -> dd.Series:
        """A lazy categorical Series ``label`` of ``labels``."""
        result = self._new_columns("classify", concurrency, settings, prompt=prompt, labels=labels)
        labels_only: dd.Series = result[LABEL_COLUMN]
        return with_job(labels_only, getattr(result, JOB_ATTRIBUTE))

    @with_options(PARTITION_OPTIONS)
    def filter(self, prompt: str, *, concurrency: int = DEFAULT_CONCURRENCY, **settings: Any) -> dd.DataFrame:
        """The rows for which the model answers true; failed rows are left out."""
        spec, job = row_job("filter", concurrency, settings, prompt=prompt)
        result: dd.DataFrame = self._data.map_partitions(kept_rows, spec, job, meta=self._data._meta)
        return with_job(result, job)

    @with_options(PARTITION_OPTIONS)
    def extract(
        self, column: str, output: Any, *, concurrency: int = DEFAULT_CONCURRENCY, **settings: Any
    ) -> dd.DataFrame:
        """The fields of ``output`` extracted from the text column ``column``."""
        if column not in self._data.columns:
            raise UsageError(no_such_column("extract", column, self._data.columns))
        return self._new_columns("extract", concurrency, settings, output=output, column=column)

    @with_options(ROUND_OPTIONS)
    def agg(
        self,
        prompt: str,
        by: Any = None,
        output: Any = None,
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> Any:
        """One answer for all the rows (with ``by``, a pandas Series by group), computed now, not lazily.

        Each partition reduces its rows to partial answers (one per group) with ``map_partitions``; the client
        folds them into the answer, as ``df.aiforge.agg`` does: every request, on a worker or the client, fits
        ``CONTEXT_WINDOW``. The answer's ``.attrs["aiforge"]`` is the ``AggReport`` of the fold, with the
        partitions' spend in ``.partitions``. Options as ``df.aiforge.agg``'s (``checkpoint=`` a file every
        worker sees).
        """
        from aiforge.dataframes.dask.agg import dask_agg

        return dask_agg(self._data, prompt, by, output, concurrency, settings)

    @with_options(ROW_OPTIONS)
    def dedup(
        self,
        column: str,
        threshold: float | str | None = None,
        *,
        confirm: bool | tuple[float, float] | None = None,
        prompt: str | None = None,
        target_recall: float = 0.95,
        sample: int = 100,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.Series:
        """``duplicate_of`` of every row, computed now, as a pandas Series: see ``df.aiforge.dedup``.

        The embeddings are made per partition on the workers, the blocking (and the confirmation batch) on the
        client (``dataframes/dask/dedup.py``): a row's group depends on all rows. ``.attrs["aiforge"]`` holds the
        ``DedupReport``. Back on the frame: ``ddf.merge(ids.to_frame(), left_index=True, right_index=True)``.
        """
        from aiforge.batch.options import batch_options
        from aiforge.dataframes.dask.dedup import client_facts, dask_duplicate_ids
        from aiforge.semantic.near_duplicates import dedup_request

        if column not in self._data.columns:
            raise UsageError(no_such_column("dedup", column, self._data.columns))
        options = batch_options(settings)
        judge = not client_facts(settings).free  # a billed chat model judges pairs by default ("auto")
        request = dedup_request(threshold, confirm, prompt, concurrency, options, target_recall, sample, judge=judge)
        ids, report = dask_duplicate_ids(self._data[column], settings, request)
        return _attach(ids, report)

    @with_options(VECTOR_OPTIONS)
    def embed(self, column: str, *, concurrency: int = DEFAULT_CONCURRENCY, **settings: Any) -> dd.Series:
        """A lazy Series ``<column>_embedding`` of float32 vectors (None for a missing value), per partition.

        The pandas accessor's ``embed`` on each partition with this process's agent (``partition.process_agent``);
        ``model=``, ``cache=`` and ``batch_size=`` are its options, the rest agent settings (never a key). At most
        ``concurrency`` embeddings requests are in flight across the cluster; ``job_summary`` gives the cost::

            vectors = ddf.aiforge.embed("review", provider="openai")
        """
        if column not in self._data.columns:
            raise UsageError(no_such_column("embed", column, self._data.columns))
        from aiforge.batch.options import take_options
        from aiforge.semantic.embed_column import embedding_name

        check_no_keys(settings)
        options = take_options(settings, VECTOR_OPTIONS, "embed")
        options.update({name: settings.pop(name) for name in ("model", "batch_size") if name in settings})
        job = embedding_job(concurrency)
        meta = pd.Series([], dtype=object, name=embedding_name(column), index=self._data._meta.index)
        result: dd.Series = self._data.map_partitions(embedded_partition, column, settings, options, job, meta=meta)
        return with_job(result, job)

    def _new_columns(self, operation: str, concurrency: int, settings: dict[str, Any], **what: Any) -> dd.DataFrame:
        spec, job = row_job(operation, concurrency, settings, **what)
        meta = spec.empty_columns(self._data._meta.index)
        result: dd.DataFrame = self._data.map_partitions(job_columns, spec, job, meta=meta)
        return with_job(result, job)
