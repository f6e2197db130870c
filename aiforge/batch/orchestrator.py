"""``run_items``: the one batch pipeline, many items through one ``BatchOwner`` (the agent) driven by ``BatchOptions``.

1. Prepare once (``prepare``): the prompts (a list, a pandas Series or DataFrame, with a row template; a row with a
   missing value fails without a call), every check before any request, the batch's identity, the rows an earlier
   run finished (``resume``: a checkpoint or an interrupted run) and the repeated rows (``dedup``). An estimate
   stops here (every plan compared: ``plan_table``).
2. A strategy answers the lead rows: live (``live``, packed with ``pack=k``), flex or a Batch API job
   (``planner``, chosen by ``plan="cheapest"``), or a cascade (``cascade``); the repeats take their leads' answers.
3. Assemble once: the ``BatchResult`` in input order, its plan, the strategy's report and what it saved
   (``BatchResult.saved``, ``savings``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from aiforge.batch.cascade.run import answer_cascade, check_cascade_options
from aiforge.batch.embedded import warn_if_embedded
from aiforge.batch.estimate import BatchEstimate
from aiforge.batch.label_debiasing import calibrated
from aiforge.batch.live import answer_live
from aiforge.batch.options import BatchOptions
from aiforge.batch.plan_table import estimate_of_batch
from aiforge.batch.planner import BATCH_API, FLEX, answer_batch_api, answer_flex, cheapest_plan
from aiforge.batch.prepare import Answered, PreparedBatch, checked_item_type, prepare
from aiforge.batch.results import BatchResult
from aiforge.batch.resume import KeptBatch, forget, interrupted, keep
from aiforge.core import otel
from aiforge.core.aio import run_sync
from aiforge.core.otel import telemetry_of

if TYPE_CHECKING:
    from aiforge.batch.owner import BatchOwner

__all__ = ["checked_item_type", "run_items", "run_items_sync"]


def run_items_sync(owner: BatchOwner, items: Sequence[str] | Any, options: BatchOptions) -> Any:
    """``run_items`` from sync code; Ctrl-C keeps the finished items and ends with one line (``BatchInterrupted``)."""
    stopped: list[KeptBatch] = []
    try:
        return run_sync(run_items(owner, items, options, stopped))
    except KeyboardInterrupt:
        if not stopped:
            raise
        raise interrupted(stopped[0]) from None


async def run_items(
    owner: BatchOwner, items: Sequence[str] | Any, options: BatchOptions, stopped: list[KeptBatch] | None = None
) -> BatchResult | BatchEstimate:
    """Run ``items``, a ``BatchResult`` in input order (a ``BatchEstimate`` with ``options.estimate``).

    ``stopped`` receives what an interrupt kept, for the caller's one-line message. With ``OTEL=True`` the run is
    one ``aiforge.batch`` span every row's spans nest under (``core.otel``; the worker tasks inherit it as the
    current span).
    """
    telemetry = None if options.estimate else telemetry_of(owner.settings, owner.provider_name, owner.provider)
    if telemetry is None:
        return await _run_items(owner, items, options, stopped)
    with otel.batch_scope(telemetry, model=owner.model, concurrency=options.concurrency) as span:
        result = await _run_items(owner, items, options, stopped)
        otel.end_batch(span, result)
    return result


async def _run_items(
    owner: BatchOwner, items: Sequence[str] | Any, options: BatchOptions, stopped: list[KeptBatch] | None
) -> BatchResult | BatchEstimate:
    cascade = options.cascade is not None and not options.estimate  # its estimate is the plans' cascade row
    if cascade:
        check_cascade_options(options)
    batch = prepare(owner, items, options, resume=not cascade)
    if options.estimate:
        return estimate_of_batch(batch)
    plan = cheapest_plan(batch) if options.plan == "cheapest" else None
    if batch.spec is not None:  # after every check above: a usage error comes alone, without this warning before it
        warn_if_embedded(owner.provider)
    batch.serve_finished_repeats()
    try:
        if cascade:
            answered = await answer_cascade(batch)
        elif plan == BATCH_API:
            answered = await answer_batch_api(batch)
        elif plan == FLEX:
            answered = await answer_flex(batch)
        else:
            answered = await answer_live(batch)
    except (asyncio.CancelledError, KeyboardInterrupt):
        if not cascade and plan != BATCH_API:  # rows answered live are kept for the same call again
            entry = keep(batch.identity.key, batch.done, len(batch.inputs))
            if stopped is not None:
                stopped.append(entry)
        raise
    forget(batch.identity.key)
    return assembled(batch, answered)


def assembled(batch: PreparedBatch, answered: Answered) -> BatchResult:
    """The ``BatchResult`` of ``batch`` once its strategy has answered: every row in input order."""
    done = batch.done
    if batch.options.calibrate and batch.scored is not None:
        done = calibrated(done, batch.scored)
    result = BatchResult(
        batch.item_type, inputs=batch.inputs, wall_time_s=answered.wall_time_s, index=batch.prompts.index,
        output=batch.spec, report=answered.report, plan=answered.plan, extra_saved=answered.saved,
    )
    for index in range(len(batch.inputs)):
        if index in batch.errors:
            result.fail(index, batch.errors[index])
        else:
            result.results.append(done[index])
            result.indices.append(index)
    return result
