"""``run_batch(plan="cheapest", deadline=...)``: the cheapest way to run a batch that meets its deadline, and the
strategies it adds to the live one (``live``): flex and the Batch API.

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
from typing import TYPE_CHECKING

from aiforge.batch.batch_api.job import BatchJob
from aiforge.batch.dedup import Duplicates, find_duplicates
from aiforge.batch.live import answer_live
from aiforge.batch.plan_table import estimate_of_batch
from aiforge.batch.plans import FLEX_SLOWDOWN, Plan, deadline_seconds, duration_text
from aiforge.batch.prepare import Answered
from aiforge.batch.savings import Savings
from aiforge.core.errors import ItemNotRunError
from aiforge.core.pricing import flex_discount
from aiforge.core.tier_override import service_tier_for_batch
from aiforge.core.types import UsageError

if TYPE_CHECKING:
    from aiforge.batch.estimate import BatchEstimate
    from aiforge.batch.options import BatchOptions
    from aiforge.batch.prepare import PreparedBatch

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


def cheapest_plan(batch: PreparedBatch) -> str:
    """The plan ``plan="cheapest"`` runs ``batch`` by: a Batch API job its checkpoint already holds (paid for: attach
    to it), else ``choose``'s."""
    scored = batch.scored is not None
    # A scored batch never runs as a job (nor was one): its checkpoint is of scored rows, not a job's.
    recorded = not scored and not batch.options.restart and batch.checkpoint is not None and batch.checkpoint.job()
    return BATCH_API if recorded else choose(estimate_of_batch(batch), batch.options, scored=scored).name


async def answer_flex(batch: PreparedBatch) -> Answered:
    """The live strategy with every call at the flex tier; its saving against the list price."""
    owner = batch.owner
    before = len(owner.cost_tracker.records)
    with service_tier_for_batch(FLEX):
        live = await answer_live(batch)
    paid = sum(r.cost for r in owner.cost_tracker.records[before:] if r.service_tier == FLEX)
    return Answered(FLEX, live.wall_time_s, live.report, live.saved + _saving(FLEX, paid, flex_discount(owner.model)))


async def answer_batch_api(batch: PreparedBatch) -> Answered:
    """The rows through a Batch API job: with ``dedup``, each distinct prompt once, its repeats served from it.

    The job asks every row with a value (a checkpoint's finished rows too: it is one job, as its estimate says)."""
    every = Duplicates() if batch.served_again is None else find_duplicates(batch.inputs, {}, batch.errors)
    lead_of = {twin: lead for lead, twins in every.twins.items() for twin in twins}
    only = {i for i in range(len(batch.inputs)) if i not in batch.errors and i not in lead_of}
    job = await BatchJob.asubmit_prompts(
        batch.owner, batch.prompts, batch.spec, checkpoint=batch.options.checkpoint, store=batch.checkpoint, only=only
    )
    ran = await job.await_results(first_poll=FIRST_POLL_S)
    answered = dict(zip(ran.indices, ran.results, strict=True))
    failures = {failure.position: failure.error for failure in ran.failed}
    for index in range(len(batch.inputs)):
        lead = lead_of.get(index, index)
        if index in batch.errors:  # a missing value: never sent
            continue
        if index in answered:
            batch.done[index] = answered[index]
        elif lead != index and lead in answered:  # a repeat: its lead's answer, cost 0 (``cached``)
            assert batch.served_again is not None
            batch.done[index] = batch.served_again(answered[lead])
            if batch.checkpoint is not None:  # the job recorded the repeats as not run: they are answered
                batch.checkpoint.record(index, payload=batch.done[index].to_payload())
        else:
            batch.done.pop(index, None)
            batch.errors[index] = failures.get(lead, failures.get(index, ItemNotRunError("not run")))
    paid: float = sum(row.cost for row in answered.values() if not getattr(row, "cached", False))
    return Answered(BATCH_API, ran.wall_time_s, saved=_saving(BATCH_API, paid, job.api.discount))


def _saving(source: str, paid: float, share: float | None) -> Savings:
    """What ``paid`` at ``share`` of the list price saved against the list price."""
    if paid > 0 and share is not None and share < 1:
        return Savings.of(source, dollars=paid / share - paid)
    return Savings()
