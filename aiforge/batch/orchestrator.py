"""``run_items``: many items through one ``BatchOwner`` (the agent), driven by a frozen ``BatchOptions``.

Items may be a list, a pandas Series or DataFrame, with a row template (``core.templates.batch_prompts``); a
row with a missing value fails without a call. Rows with the same prompt are asked once (``dedup``). A batch
can use the response cache, resume from a checkpoint or an interrupted run, stop at a budget, or only be
estimated (every plan compared: ``plan_table``), or run by the cheapest plan meeting a deadline (``planner``);
``runner`` holds the rules. Its ``BatchResult.saved`` says what that spared (``savings``).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from aiforge.batch.cascade import run_cascade
from aiforge.batch.dedup import Duplicates, find_duplicates
from aiforge.batch.embedded import warn_if_embedded
from aiforge.batch.estimate import BatchEstimate, estimate_of
from aiforge.batch.identity import (
    batch_identity,
    check_budget_enforceable,
    finished_items,
    open_cache,
    open_checkpoint,
    pricer_of,
)
from aiforge.batch.label_calibration import calibrated
from aiforge.batch.label_scoring import check_calibration, scored_labels, unpacked_if_scored
from aiforge.batch.options import BatchOptions
from aiforge.batch.packing import Packer, check_packable, pack_texts, packing_saving, warn_if_packing_failed
from aiforge.batch.plan_table import plans_of
from aiforge.batch.planner import run_cheapest
from aiforge.batch.results import BatchItem, BatchResult, PackingStats
from aiforge.batch.runner import BatchRun, KeptBatch, forget, interrupted, keep
from aiforge.core import otel
from aiforge.core.aio import run_sync
from aiforge.core.errors import MissingValueError
from aiforge.core.otel import telemetry_of
from aiforge.core.progress import progress_bar, progress_enabled
from aiforge.core.templates import batch_prompts
from aiforge.core.types import UsageError

if TYPE_CHECKING:
    from aiforge.batch.owner import BatchOwner


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

    ``stopped`` receives what an interrupt kept, for the caller's one-line message. With ``options.cascade``
    the rows are shared between two models (``cascade``). With ``OTEL=True`` the run is one ``aiforge.batch`` span
    every row's spans nest under (``core.otel``; the worker tasks inherit it as the current span).
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
    item_type = checked_item_type(owner)
    if not options.estimate:
        check_budget_enforceable(owner, options.max_cost)  # before any request: no price, no budget
    if options.plan == "cheapest" and not options.estimate:
        return await run_cheapest(owner, items, options, run_items)
    if options.cascade is not None and not options.estimate:  # its estimate is the plans' cascade row
        return await run_cascade(owner, items, options, run_items)
    spec = options.output
    prompts = batch_prompts(items, options.prompt)
    check_packable(owner, options.pack)
    inputs = prompts.texts
    if len(inputs) > options.max_batch:
        raise UsageError(
            f"run_batch got {len(inputs)} items but max_batch={options.max_batch}; "
            f"pass max_batch={len(inputs)} to process them all, or split the list"
        )
    cache = owner.response_cache if options.cache is None else open_cache(options.cache)
    # Decided once here too: LABELS_BY=scoring that cannot score is a UsageError before any call.
    scored = scored_labels(owner.provider, owner.settings, spec, tools=bool(owner._request_context()[1]))
    check_calibration(options, scored)
    options = unpacked_if_scored(options, scored, owner.settings.LABELS_BY)
    batch = batch_identity(owner, inputs, spec, scored=scored is not None)
    checkpoint = open_checkpoint(options.checkpoint, batch, options.restart)
    done = finished_items(batch, checkpoint, item_type, spec, restart=options.restart)
    errors: dict[int, BaseException] = {i: MissingValueError(why) for i, why in prompts.missing.items()}
    served_again: Callable[[Any], Any] | None = getattr(item_type, "served_again", None) if options.dedup else None
    duplicates = Duplicates() if served_again is None else find_duplicates(inputs, done, errors)
    if options.estimate:
        pricer = pricer_of(owner, spec)
        estimate = estimate_of(pricer, inputs, done, errors, dedup=served_again is not None)
        return dataclasses.replace(estimate, plans=plans_of(owner, prompts, options, pricer, done, errors))
    if spec is not None:  # after every check above: a usage error comes alone, without this warning before it
        warn_if_embedded(owner.provider)
    if served_again is not None:
        done.update({index: served_again(done[twin]) for index, twin in duplicates.answered.items()})
    shown = progress_enabled(owner.settings.PROGRESS_BAR) and inputs
    # Kept and missing-value rows count from the first frame; items a budget skips never count (the bar then
    # ends short of its total, "stopped", as the batch did).
    progress = progress_bar(len(inputs), initial=len(errors) + len(done)) if shown else None
    packer = None
    if options.pack > 1:
        packer = Packer(
            owner, spec, prompts.template, pack_texts(prompts), inputs, cache, PackingStats(options.pack),
            count_alone=pricer_of(owner, spec).input_tokens,
        )
    run = BatchRun(
        inputs,
        lambda text: owner._arun_batch_item(text, output=spec, cache=cache),
        done,
        errors,
        checkpoint=checkpoint,
        to_payload=None if checkpoint is None else item_type.to_payload,
        max_cost=options.max_cost,
        pricer=None if options.max_cost is None else pricer_of(owner, spec),
        progress=progress,
        twins=duplicates.twins,
        served_again=served_again,
        pack=options.pack,
        run_pack=None if packer is None else packer.run,
    )
    try:
        wall_time_s = await run.run(options.concurrency)
    except (asyncio.CancelledError, KeyboardInterrupt):
        entry = keep(batch.key, done, len(inputs))
        if stopped is not None:
            stopped.append(entry)
        raise
    finally:
        if progress is not None:
            progress.close()
    forget(batch.key)
    if options.calibrate and scored is not None:
        done = calibrated(done, scored)
    result = BatchResult(
        item_type, inputs=inputs, wall_time_s=wall_time_s, index=prompts.index, output=spec,
        packing=None if packer is None else packer.stats,
        plan="packed" if packer is not None else "deduped" if served_again is not None else "as_is",
    )
    if packer is not None:
        warn_if_packing_failed(packer.stats)
        result.extra_saved += packing_saving(packer.stats, pricer_of(owner, spec))
    for index in range(len(inputs)):
        if index in errors:
            result.fail(index, errors[index])
        else:
            result.results.append(done[index])
            result.indices.append(index)
    return result


def checked_item_type(owner: BatchOwner) -> type[BatchItem]:
    """``owner.result_type()``, checked to lay out a batch row (``to_row``, ``failed_row``)."""
    result = owner.result_type()
    if not (isinstance(result, type) and hasattr(result, "to_row") and hasattr(result, "failed_row")):
        raise TypeError(
            f"{type(owner).__name__}.result_type() must return a type with to_row() and failed_row() "
            f"(see aiforge.batch.results.BatchItem), not {result!r}"
        )
    return result
