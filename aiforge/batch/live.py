"""The live strategy: a prepared batch's leads asked now, one request a row (or ``pack=k`` rows a request).

The rows go through the one worker pool (``runner.BatchRun``): the response cache, ``concurrency``, the budget, a
checkpoint written as rows land, each lead's repeats served as it lands, and the progress bar. The flex plan is
this strategy at another service tier (``planner``), and a cascade's strong model answers its rows through it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiforge.batch.identity import pricer_of
from aiforge.batch.packing import Packer, pack_texts
from aiforge.batch.packing_report import PackingStats, packing_saving, warn_if_packing_failed
from aiforge.batch.prepare import Answered, PreparedBatch, prepare
from aiforge.batch.request.answer import request_item
from aiforge.batch.runner import BatchRun
from aiforge.core.progress import progress_bar, progress_enabled

if TYPE_CHECKING:
    from aiforge.batch.options import BatchOptions
    from aiforge.batch.owner import BatchOwner


async def answer_live(batch: PreparedBatch) -> Answered:
    """Ask ``batch``'s leads now; ``plan`` is ``packed``, ``deduped`` or ``as_is``."""
    owner, options, spec, inputs = batch.owner, batch.options, batch.spec, batch.inputs
    shown = progress_enabled(owner.settings.PROGRESS_BAR) and inputs
    # Kept and missing-value rows count from the first frame; items a budget skips never count (the bar then
    # ends short of its total, "stopped", as the batch did).
    progress = progress_bar(len(inputs), initial=len(batch.errors) + len(batch.done)) if shown else None
    packer = None
    if options.pack > 1:
        packer = Packer(
            owner, spec, batch.prompts.template, pack_texts(batch.prompts), inputs, batch.cache,
            PackingStats(options.pack), count_alone=pricer_of(owner, spec).input_tokens,
        )
    cache, items, labels = batch.cache, owner.request_context.items, batch.scored
    run = BatchRun(
        inputs,
        # An agent without tools: each row goes from the pool to the provider here, not back up through the agent.
        (lambda text: request_item(items, text, output=spec, cache=cache, labels=labels)) if items is not None
        else (lambda text: owner.arun_batch_item(text, output=spec, cache=cache)),
        batch.done,
        batch.errors,
        checkpoint=batch.checkpoint,
        to_payload=None if batch.checkpoint is None else batch.item_type.to_payload,
        max_cost=options.max_cost,
        pricer=None if options.max_cost is None else pricer_of(owner, spec),
        progress=progress,
        twins=batch.duplicates.twins,
        served_again=batch.served_again,
        pack=options.pack,
        run_pack=None if packer is None else packer.run,
    )
    try:
        wall_time_s = await run.run(options.concurrency)
    finally:
        if progress is not None:
            progress.close()
    if packer is None:
        return Answered("deduped" if batch.served_again is not None else "as_is", wall_time_s)
    warn_if_packing_failed(packer.stats)
    return Answered("packed", wall_time_s, packer.stats, packing_saving(packer.stats, pricer_of(owner, spec)))


async def answer_texts(
    owner: BatchOwner, texts: list[str], options: BatchOptions
) -> tuple[dict[int, Any], dict[int, BaseException]]:
    """``texts`` asked live by ``owner`` (a batch of their own, by position): the answers and the failures."""
    batch = prepare(owner, texts, options, resume=False)
    await answer_live(batch)
    return batch.done, batch.errors
