"""One pandas partition in, its new columns out, through ``run_batch``: what every engine's adapter calls.

``partition_columns(part, spec)`` is pure in the sense engines need: it depends only on the partition and
the picklable ``PartitionSpec`` (no client, no cluster), so Dask's ``map_partitions``, Ray Data's
``map_batches(batch_format="pandas")`` and Spark's ``mapInPandas`` can all call it. The columns it returns:

- ``map``: ``response`` (text), or the fields of ``output``;
- ``extract``: the fields of ``output`` extracted from ``column``;
- ``classify``: ``label``, a categorical of the labels;
- ``filter``: ``keep``, a boolean (a failed row is False, as the pandas accessor leaves it out).

The ``BatchResult`` of the partition is in the result's ``.attrs["aiforge"]``. The agent is built from
``spec.settings`` once per process and reused by every partition with the same settings (an embedded model is
loaded once per worker). A spec never carries an API key: workers read it from their environment, so it never
travels in a task graph. ``checkpoint=`` names a file on a filesystem every worker sees: each partition keeps its
batch in a file of its own beside it, named by the partition's content (``batch.resume.checkpoint_beside``), so a
partition retried on another worker resumes from what was answered and every file has one writer (SQLite's
write-ahead log needs every writer of a file on one host).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from aiforge.batch.options import DEFAULT_CONCURRENCY, PARTITION_OPTIONS, take_options
from aiforge.batch.resume import checkpoint_beside, checkpoint_file
from aiforge.core.columns import OUTPUT_COLUMN, output_columns
from aiforge.core.labels import checked_labels
from aiforge.core.output import OutputSpec
from aiforge.core.templates import no_such_column
from aiforge.core.types import UsageError
from aiforge.dataframes.accessor import (
    ATTRS_KEY,
    LABEL_COLUMN,
    RESPONSE_COLUMN,
    _columns,
    extraction_prompt,
    holds_files,
)

if TYPE_CHECKING:
    from aiforge.batch.results import BatchResult
    from aiforge.chat.agent import ChatAgent

Operation = Literal["map", "classify", "filter", "extract"]
KEEP_COLUMN = "keep"
"""``filter``'s column: whether the model answered true for the row."""

_agents: dict[str, ChatAgent] = {}
_agents_lock = threading.Lock()


@dataclass(frozen=True)
class PartitionSpec:
    """What a partition is asked, picklable: operation, row template, ``output=`` type, agent settings, limits."""

    operation: Operation
    prompt: str
    output: Any = None
    labels: tuple[str, ...] = ()
    column: str | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    settings: Mapping[str, Any] = field(default_factory=dict)
    """Keywords of ``ChatAgent(memory="none", ...)`` (never an API key)."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """``run_batch``'s options of ``PARTITION_OPTIONS`` (``checkpoint``: a file each partition's beside)."""

    @classmethod
    def of(
        cls,
        operation: Operation,
        prompt: str | None = None,
        *,
        output: Any = None,
        labels: Sequence[str] = (),
        column: str | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> PartitionSpec:
        """The spec of one accessor call: ``settings`` split into ``run_batch`` options and agent settings."""
        check_no_keys(settings)
        if settings.get("cascade") is not None or settings.get("plan", "as_is") != "as_is":
            # A Cascade holds agents (with their keys) and calibrates once over the whole batch; a plan is chosen
            # for the whole batch too: neither can be split into partitions.
            raise UsageError(
                "cascade= and plan= work on the whole batch, not per partition: run them with df.aiforge on a "
                "pandas DataFrame (ddf.compute() first, or one partition at a time)"
            )
        options = take_options(settings, PARTITION_OPTIONS, operation)
        checkpoint_file(options.get("checkpoint"), operation)  # on the client, before the graph runs
        if operation == "classify":
            labels = checked_labels(labels, "classify")
            output = Literal[labels]
        elif operation == "filter":
            output = bool
        elif operation == "extract":
            prompt = extraction_prompt(output)
        if prompt is None:
            raise UsageError(f"{operation}: give the row template, e.g. 'Summarise: {{review}}'.")
        return cls(operation, prompt, output, tuple(labels), column, concurrency, dict(settings), options)

    def empty_columns(self, index: pd.Index) -> pd.DataFrame:
        """The columns of a partition with no row: the dtypes of every other partition's (Dask's ``meta``)."""
        if self.operation == "classify":
            return pd.DataFrame({LABEL_COLUMN: pd.Categorical([], categories=list(self.labels))}, index=index)
        if self.operation == "filter":
            return pd.DataFrame({KEEP_COLUMN: pd.Series([], dtype=bool)}, index=index)
        if self.output is None:
            return pd.DataFrame({RESPONSE_COLUMN: pd.array([], dtype="string")}, index=index)
        return output_columns([], OutputSpec.of(self.output), index)


def partition_columns(part: pd.DataFrame, spec: PartitionSpec) -> pd.DataFrame:
    """The new columns of ``part`` (on its index) for ``spec``; its ``BatchResult`` in ``.attrs["aiforge"]``."""
    if len(part) == 0:
        return spec.empty_columns(part.index)
    batch = run_partition(part, spec)
    columns = _columns(batch)
    if spec.operation == "classify":
        columns = columns[[OUTPUT_COLUMN]].rename(columns={OUTPUT_COLUMN: LABEL_COLUMN})
    elif spec.operation == "filter":
        keep = columns[OUTPUT_COLUMN].fillna(False).to_numpy(dtype=bool)
        columns = pd.DataFrame({KEEP_COLUMN: keep}, index=part.index)
    columns.attrs[ATTRS_KEY] = batch
    return columns


def run_partition(part: pd.DataFrame, spec: PartitionSpec) -> BatchResult:
    """``run_batch`` over the rows of ``part`` with the process's agent for ``spec.settings``."""
    if spec.operation == "extract":
        if spec.column not in part.columns:
            raise UsageError(no_such_column("extract", spec.column, part.columns))
        items: Any = part[spec.column]
        if holds_files(items, spec.options.get("files") or ()):
            spec = replace(spec, prompt=extraction_prompt(spec.output, document=True))
    else:
        items = part
    options = dict(spec.options)
    if options.get("checkpoint") is not None:  # a file of its own beside the call's, named by its content
        options["checkpoint"] = checkpoint_beside(options["checkpoint"], f"partition-{partition_key(part)}", "dask")
    agent = process_agent(spec.settings)
    result: BatchResult = agent.run_batch(
        items, spec.concurrency, max(len(items), 1), output=spec.output, prompt=spec.prompt, **options
    )
    return result


def check_no_keys(settings: Mapping[str, Any]) -> None:
    """A UsageError naming the keys among ``settings``: what a Dask call is given travels in the task graph.

    OPENAI_API_KEY, api_key, GATEWAY_API_KEY... reach the workers through their environment instead.

    >>> check_no_keys({"provider": "openai", "OPENAI_API_KEY": "sk-..."})  # UsageError: OPENAI_API_KEY: a key ...
    """
    secret = [name for name in settings if "api_key" in name.lower()]
    if secret:
        raise UsageError(
            f"{', '.join(secret)}: a key passed here would travel in the task graph to every worker. "
            "Set it in the workers' environment instead (OPENAI_API_KEY, ANTHROPIC_API_KEY, AIFORGE_*)."
        )


def process_agent(settings: Mapping[str, Any]) -> ChatAgent:
    """This process's agent for ``settings``, built on first use and reused (one embedded model per worker).

    It draws no progress bar: a worker's stderr reaches a notebook (a ``LocalCluster`` shares the kernel's) as a
    box of half-drawn bars per partition, and on a cluster nobody sees it. The engine shows the progress.
    """
    key = repr(sorted(settings.items()))
    with _agents_lock:
        agent = _agents.get(key)
        if agent is None:
            from aiforge.chat.agent import ChatAgent

            quiet = {name: value for name, value in settings.items() if name.upper() != "PROGRESS_BAR"}
            agent = _agents[key] = ChatAgent(memory="none", **quiet, PROGRESS_BAR=False)
    return agent


def partition_key(part: pd.DataFrame) -> str:
    """A digest of the partition's index and values: the same rows give the same key on any worker."""
    hashed = pd.util.hash_pandas_object(part, index=True).to_numpy()
    return hashlib.sha256(hashed.tobytes()).hexdigest()[:20]


def with_concurrency(spec: PartitionSpec, concurrency: int) -> PartitionSpec:
    """``spec`` running at most ``concurrency`` requests at once."""
    return replace(spec, concurrency=concurrency)
