"""``df.aiforge`` and ``s.aiforge``: map, classify, filter, extract and judge over rows with one batch each; the
semantic operators agg, embed, dedup, cluster, join and topk; and evaluate.

Every operation is one ``run_batch`` (same progress bar, concurrency, failures kept per row), and
returns pandas data aligned on the input's index, so ``df.join(df.aiforge.map(...))`` lines up, also
on a filtered frame. The ``BatchResult`` (costs, tokens, ``failed``, ``saved``) is in the result's
``.attrs["aiforge"]``; a failed row is null in the new columns (its error is in that batch), and the call says how
many failed in one ``FailedRowsWarning`` (``core.failed_rows``). Rows whose
prompt is the same are asked once (``run_batch``'s dedup).

Prompts are row templates (``core.templates``): ``"Classify: {review}"`` names a DataFrame's columns;
on a Series, ``{value}`` (or the Series' name) is the value. ``agent=None`` builds a
``ChatAgent(memory="none", **settings)``; the model is asked about each row independently either way.
``cache=``, ``checkpoint=``, ``restart=``, ``max_cost=``, ``dedup=``, ``cascade=``, ``pack=`` and ``calibrate=`` are
``run_batch``'s and go to it. On a provider that classifies by scoring (the embedded model), ``classify``, ``filter``
and a label ``output=`` score each row rather than generate it (``LABELS_BY``), with a ``confidence`` per row.

``agg`` reduces all the rows (or each group's, ``by=``) to one answer under ``CONTEXT_WINDOW``
(``semantic.agg``); ``df.groupby(keys).aiforge.agg`` does it per group of a pandas groupby. ``embed``,
``dedup``, ``cluster``, ``join`` and ``topk`` are thin wrappers over ``aiforge.semantic`` (each puts its report,
with requests and cost, in ``.attrs["aiforge"]``).
``df.aiforge.evaluate`` (a grid of prompts x agents scored against a truth column) and ``judge`` (a rubric's score
and reason per row) are thin wrappers over ``aiforge.evaluation``.

Importing this module registers the accessors (``aiforge`` imports it when pandas is imported), and the
``aiforge`` property of pandas' groupby objects (``GroupByOperations``). They are built from one idea a module:

- ``results``: how a result is put together (new columns on the input's index, the report in ``.attrs``);
- ``row_operations``: map, classify, filter, extract and judge, one batch over the rows;
- ``column_operations``: topk, agg, embed, dedup and cluster, over all the rows at once;
- ``split``: a column of documents (texts, PDFs) to one row a chunk on the input's index then ``chunk``
  (``core.chunks`` cuts them), whose answers ``agg(by="document")`` folds back onto the documents;
- ``frame_accessor`` (``df.aiforge``), ``series_accessor`` (``s.aiforge``), ``groupby_accessor``
  (``df.groupby(keys).aiforge``): the accessors registered with pandas.
"""

from __future__ import annotations

from aiforge.dataframes.frame_accessor import DataFrameOperations
from aiforge.dataframes.groupby_accessor import GroupByOperations
from aiforge.dataframes.results import ATTRS_KEY, LABEL_COLUMN, RESPONSE_COLUMN, attach, batch_columns
from aiforge.dataframes.row_operations import extraction_prompt, holds_files
from aiforge.dataframes.series_accessor import SeriesOperations

_attach = attach
_columns = batch_columns
"""The names ``partition`` and ``dask_accessor`` import from here (``results.attach``, ``results.batch_columns``)."""

__all__ = [
    "ATTRS_KEY",
    "LABEL_COLUMN",
    "RESPONSE_COLUMN",
    "DataFrameOperations",
    "GroupByOperations",
    "SeriesOperations",
    "_attach",
    "_columns",
    "attach",
    "batch_columns",
    "extraction_prompt",
    "holds_files",
]
