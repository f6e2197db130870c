"""``ddf.aiforge.agg``, computed at once: each partition's partial answers (one per group), folded on the client.

Each partition reduces its rows to partial answers with ``map_partitions`` (``final=False``); the client folds them
into the answer as ``df.aiforge.agg`` does, so every request, on a worker or the client, fits ``CONTEXT_WINDOW``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from aiforge.chat.operation_agent import operation_agent
from aiforge.dataframes.accessor import ATTRS_KEY
from aiforge.dataframes.dask.job import DaskJob, leases, new_job, scheduler_client, worker_threads
from aiforge.dataframes.partition import check_no_keys

if TYPE_CHECKING:
    import dask.dataframe as dd

PARTIAL_COLUMN = "partial"
"""The column of a partition's partial answers (one row per group) in ``ddf.aiforge.agg``."""
_SPENT_COLUMNS = ("requests", "tokens", "cost", "largest_request")


@dataclass(frozen=True)
class AggPartitionSpec:
    """What each partition of ``ddf.aiforge.agg`` reduces its rows with, picklable (never a key)."""

    prompt: str
    by: tuple[Any, ...]
    settings: dict[str, Any]
    options: dict[str, Any]


def dask_agg(data: dd.DataFrame, prompt: str, by: Any, output: Any, concurrency: int, settings: dict[str, Any]) -> Any:
    """The answer (a pandas Series by group with ``by``); its ``AggReport`` with the partitions' spend in attrs."""
    from aiforge.semantic.agg.chunks import ANSWERS
    from aiforge.semantic.agg.frames import (
        AggText,
        by_groupby,
        checked_keys,
        grouped_texts,
        instruction_for,
    )
    from aiforge.semantic.agg.reduce import check_groups, reduce_groups
    from aiforge.semantic.agg.report import PartitionTotals

    instruction = instruction_for(data._meta, prompt)
    keys = () if by is None else tuple(checked_keys(data.columns, by))
    spec, job = _agg_spec(prompt, keys, concurrency, settings)
    meta = data._meta[list(keys)].iloc[:0].assign(**{PARTIAL_COLUMN: pd.Series([], dtype=object)})
    meta = meta.assign(**{name: pd.Series([], dtype=float) for name in _SPENT_COLUMNS})
    partials: pd.DataFrame = data.map_partitions(_partition_partials, spec, job, meta=meta).compute()
    totals = PartitionTotals(
        data.npartitions,
        int(partials["requests"].sum()),
        int(partials["tokens"].sum()),
        float(partials["cost"].sum()),
        int(partials["largest_request"].max()) if len(partials) else 0,
    )
    agent, options = operation_agent(None, dict(spec.settings)), spec.options
    texts = [None if pd.isna(text) else text for text in partials[PARTIAL_COLUMN].tolist()]
    if keys:
        groups = grouped_texts(by_groupby(partials, list(keys)), texts)
        check_groups(groups.texts)
        answers, report = reduce_groups(
            agent, instruction.text, groups.texts, kind=ANSWERS, output=output, concurrency=concurrency, options=options
        )
        result: Any = groups.series(answers, typed=output is not None)
    else:
        found = [text for text in texts if text is not None]
        check_groups([found])
        answers, report = reduce_groups(
            agent, instruction.text, [found], kind=ANSWERS, output=output, concurrency=concurrency, options=options
        )
        result = answers[0] if output is not None else AggText(answers[0])
    report.partitions = totals
    if isinstance(result, pd.Series | AggText):
        result.attrs = {ATTRS_KEY: report}
    return result


def _agg_spec(
    prompt: str, keys: tuple[Any, ...], concurrency: int, settings: dict[str, Any]
) -> tuple[AggPartitionSpec, DaskJob]:
    """The partitions' spec (settings checked for keys) and the job holding their concurrency semaphore."""
    from aiforge.batch.resume import checkpoint_file
    from aiforge.semantic.agg.frames import split_settings

    check_no_keys(settings)
    agent_settings = dict(settings)
    options = split_settings(agent_settings)
    checkpoint_file(options.get("checkpoint"), "agg")  # on the client, before the graph runs
    spec = AggPartitionSpec(prompt, keys, agent_settings, options)
    threads = worker_threads(scheduler_client("concurrency limit lives"))
    return spec, new_job("aiforge-agg", concurrency, max(concurrency // threads, 1), summary=False)


def _partition_partials(part: pd.DataFrame, spec: AggPartitionSpec, job: DaskJob) -> pd.DataFrame:
    """One partial answer per group of ``part`` (``final=False``: it is folded with the other partitions'),
    with what the partition spent on its first row."""
    from aiforge.batch.embedded import stay_quiet
    from aiforge.batch.resume import checkpoint_beside
    from aiforge.dataframes.partition import partition_key, process_agent
    from aiforge.semantic.agg.frames import by_groupby, grouped_texts, instruction_for, row_texts
    from aiforge.semantic.agg.reduce import reduce_groups

    stay_quiet()
    instruction = instruction_for(part, spec.prompt)
    texts = row_texts(part, instruction)
    if spec.by:
        groups = grouped_texts(by_groupby(part, list(spec.by)), texts)
        keys = groups.index[groups.observed].to_frame(index=False)
        group_texts = groups.texts
    else:
        keys = pd.DataFrame(index=range(1))
        group_texts = [[text for text in texts if text is not None]]
    options = dict(spec.options)
    if options.get("checkpoint") is not None:  # a file of its own beside the call's: one writer a file
        options["checkpoint"] = checkpoint_beside(options["checkpoint"], f"partition-{partition_key(part)}", "agg")
    with leases(job, sum(map(len, group_texts))) as held:
        answers, report = reduce_groups(
            process_agent(spec.settings),
            instruction.text,
            group_texts,
            final=False,
            concurrency=held,
            options=options,
        )
    frame = keys.assign(**{PARTIAL_COLUMN: pd.Series(answers, index=keys.index, dtype=object)})
    spent = [report.requests, report.total_tokens, report.total_cost, report.largest_request]
    for name, value in zip(_SPENT_COLUMNS, spent, strict=True):
        frame[name] = [float(value)] + [0.0] * (len(frame) - 1)
    return frame
