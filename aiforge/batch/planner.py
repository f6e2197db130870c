"""``run_batch(plan="cheapest", deadline=...)``: the cheapest way to run a batch that meets its deadline, then run it.

The candidates are the batch as its options say (deduped by default; as is with ``dedup=False``; packed with
``pack=k``), the same at OpenAI's flex tier, and the provider's Batch API; their prices and times are the
estimate's (``plan_table``, ``plans``). A plan meets the deadline when its expected time does (the Batch API's
is its 24-hour window); the cheapest of those runs (the faster on a tie), and none meeting it is a ``UsageError``
before any request, naming the plan that comes closest.

- flex: the batch's calls ask for ``service_tier="flex"`` (``core.tier_override``): the agent is unchanged;
- Batch API: ``BatchJob`` submits the rows (each distinct prompt once with ``dedup``, its repeats served from
  it; with ``checkpoint=``, the job id is kept there at once, and the same call after a kernel restart attaches
  to that job instead of paying again, whatever the deadline), waits with its progress bar, and its results are
  the ``BatchResult``.

``result.plan`` names what ran; flex's and the Batch API's saving against the same requests at the list price is
``Savings.of("flex" | "batch_api", dollars=...)`` in ``result.extra_saved``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiforge.batch.batch_api.job import BatchJob
from aiforge.batch.estimate import BatchEstimate
from aiforge.batch.identity import batch_identity, open_checkpoint
from aiforge.batch.label_scoring import scored_labels
from aiforge.batch.plans import FLEX_SLOWDOWN, Plan, deadline_seconds, duration_text
from aiforge.batch.results import BatchResult
from aiforge.batch.savings import Savings
from aiforge.core.errors import ItemNotRunError
from aiforge.core.pricing import BATCH_DISCOUNT, flex_discount
from aiforge.core.templates import batch_prompts
from aiforge.core.tier_override import service_tier_for_batch
from aiforge.core.types import UsageError

if TYPE_CHECKING:
    from aiforge.batch.options import BatchOptions
    from aiforge.batch.owner import BatchOwner

    RunItems = Callable[[BatchOwner, Any, BatchOptions], Awaitable[BatchResult | BatchEstimate]]

FLEX = "flex"
"""``Savings`` source: calls billed at the flex tier instead of the list price."""
BATCH_API = "batch_api"
"""``Savings`` source: rows answered by the Batch API instead of live calls at the list price."""
FIRST_POLL_S = 0.5
"""A planned Batch API job's first status pause; it doubles at each poll up to ``DEFAULT_POLL_INTERVAL``."""


def candidates(estimate: BatchEstimate, options: BatchOptions, *, scored: bool = False) -> list[Plan]:
    """The plans ``plan="cheapest"`` chooses among: the batch as its options say, at flex, and the Batch API.

    ``scored``: the rows are answered by scoring labels, live and at the list tier (or ``calibrate=True`` needs
    them all scored): the batch as it is, only."""
    by_name = {plan.name: plan for plan in estimate.plans}
    sync = by_name["packed" if options.pack > 1 else "deduped" if options.dedup else "as_is"]
    chosen = [sync]
    if scored or options.calibrate:
        return chosen
    flex = by_name["flex"]
    share = flex_discount(estimate.model)
    if flex.available and share is not None:
        dollars = None if sync.dollars is None else sync.dollars * share
        seconds = None if sync.seconds is None else sync.seconds * FLEX_SLOWDOWN
        chosen.append(dataclasses.replace(sync, name="flex", dollars=dollars, seconds=seconds, note=flex.note))
    batch_api = by_name["batch_api"]
    # A job sends each row alone, once, at no budget: packing and max_cost need live calls.
    if batch_api.available and options.pack == 1 and options.max_cost is None:
        chosen.append(batch_api)
    return chosen


def choose(estimate: BatchEstimate, options: BatchOptions, *, scored: bool = False) -> Plan:
    """The cheapest candidate that meets ``options.deadline`` (the faster on a tie); ``UsageError`` when none does."""
    deadline = deadline_seconds(options.deadline)
    plans = candidates(estimate, options, scored=scored)
    meeting = [p for p in plans if deadline is None or (p.seconds or 0.0) <= deadline]
    if not meeting:
        closest = min(plans, key=lambda p: p.seconds or 0.0)
        raise UsageError(
            f"no plan meets deadline={options.deadline!r} ({duration_text(deadline or 0.0)}): the closest is "
            f"{closest.label}, expected to take {closest.time_text()} (a rough model: aiforge.batch.plans). Pass a "
            "later deadline, more concurrency, or plan='as_is' to run anyway."
        )
    return min(meeting, key=lambda p: (math.inf if p.dollars is None else p.dollars, p.seconds or 0.0))


async def run_cheapest(owner: BatchOwner, items: Any, options: BatchOptions, run_items: RunItems) -> BatchResult:
    """Run ``items`` by the plan ``choose`` picks (see the module docstring); ``result.plan`` names it."""
    if options.cascade is not None:
        raise UsageError(
            "plan='cheapest' chooses how one model's requests are sent and does not combine with cascade=; "
            "use plan='as_is' (the default) with a cascade"
        )
    live = dataclasses.replace(options, plan="as_is", deadline=None)
    estimate = await run_items(owner, items, dataclasses.replace(live, estimate=True))
    assert isinstance(estimate, BatchEstimate)
    # A job this batch already has (an earlier call, before a kernel restart) is paid for: attach to it.
    scored = scored_labels(owner.provider, owner.settings, options.output, tools=bool(owner._request_context()[1]))
    # A scored batch never runs as a job (nor was one): its checkpoint is of scored rows, not a job's.
    recorded = scored is None and not options.restart and _job_recorded(owner, items, options)
    plan = Plan(BATCH_API) if recorded else choose(estimate, options, scored=scored is not None)
    if plan.name == BATCH_API:
        result = await _run_batch_api(owner, items, options)
        paid: float = sum(row.cost for row in result.results if not getattr(row, "cached", False))
        share = BATCH_DISCOUNT.get(owner.provider_name, 1.0)
    elif plan.name == FLEX:
        before = len(owner.cost_tracker.records)
        with service_tier_for_batch(FLEX):
            ran = await run_items(owner, items, live)
        assert isinstance(ran, BatchResult)
        result = ran
        paid = sum(r.cost for r in owner.cost_tracker.records[before:] if r.service_tier == FLEX)
        share = flex_discount(owner.model) or 1.0
    else:
        ran = await run_items(owner, items, live)
        assert isinstance(ran, BatchResult)
        ran.plan = plan.name
        return ran
    result.plan = plan.name
    if paid > 0 and share < 1:
        result.extra_saved += Savings.of(plan.name, dollars=paid / share - paid)
    return result


def _job_recorded(owner: BatchOwner, items: Any, options: BatchOptions) -> bool:
    """Whether ``options.checkpoint`` holds a Batch API job of this very batch (``submit_batch(checkpoint=)``)."""
    if options.checkpoint is None:
        return False
    texts = batch_prompts(items, options.prompt).texts
    checkpoint = open_checkpoint(options.checkpoint, batch_identity(owner, texts, options.output), False)
    return checkpoint is not None and checkpoint.job() is not None


async def _run_batch_api(owner: BatchOwner, items: Any, options: BatchOptions) -> BatchResult:
    """The rows through a Batch API job: with ``dedup``, each distinct prompt once, its repeats served from it."""
    prompts = batch_prompts(items, options.prompt)
    item_type = owner.result_type()
    served_again: Callable[[Any], Any] | None = getattr(item_type, "served_again", None) if options.dedup else None
    lead_of: dict[int, int] = {}
    first: dict[str, int] = {}
    for index, text in enumerate(prompts.texts):
        if index not in prompts.missing:
            lead_of[index] = index if served_again is None else first.setdefault(text, index)
    job = await BatchJob.asubmit(
        owner, items, output=options.output, prompt=options.prompt, checkpoint=options.checkpoint,
        only=set(lead_of.values()),
    )
    ran = await job.await_results(first_poll=FIRST_POLL_S)
    if served_again is None:
        return ran
    answered = dict(zip(ran.indices, ran.results, strict=True))
    errors = {failure.position: failure.error for failure in ran.failed}
    result = BatchResult(item_type, inputs=ran.inputs, wall_time_s=ran.wall_time_s, index=ran.index, output=ran.output)
    twins: dict[int, Any] = {}
    for index in range(len(ran.inputs)):
        lead = lead_of.get(index, index)
        if index in answered:
            result.results.append(answered[index])
            result.indices.append(index)
        elif lead != index and lead in answered:  # a repeat: its lead's answer, cost 0 (``cached``)
            twins[index] = served_again(answered[lead])
            result.results.append(twins[index])
            result.indices.append(index)
        else:
            result.fail(index, errors.get(lead, errors.get(index, ItemNotRunError("not run"))))
    checkpoint = None
    if options.checkpoint is not None and twins:  # the job recorded the repeats as not run: they are answered
        checkpoint = open_checkpoint(options.checkpoint, batch_identity(owner, ran.inputs, options.output), False)
    for index, twin in twins.items():
        if checkpoint is not None:
            checkpoint.record(index, payload=twin.to_payload())
    return result
