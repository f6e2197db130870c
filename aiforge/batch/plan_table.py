"""``estimate_of_batch``: a prepared batch's ``BatchEstimate`` with every plan it could run as (``plans``), each counted
and priced before any request.

Counting and prices are the estimate's (``estimate``): the same input counter and assumed reply length. What each
plan sends:

- ``as_is``: one request per row with a value, every row (``dedup=False``), finished rows excluded;
- ``deduped``: one request per distinct prompt (the default);
- ``flex``: deduped at OpenAI's flex tier, ``FLEX_DISCOUNT`` of the price (providers that send ``SERVICE_TIER``,
  models with a flex price);
- ``batch_api``: the rows ``plan="cheapest"`` would submit to the provider's Batch API at its discount: each
  distinct prompt once (every row with ``dedup=False``); a job re-sends rows a checkpoint has (it is one job);
- ``packed``: the distinct prompts k per request, each request counted in ``packed_prompt``'s real layout with
  the packed output schema; k is ``pack=`` or ``SUGGESTED_PACK``;
- ``cascade`` (with ``cascade=``): the cheap model scores every row, the strong model answers the calibration
  sample at least and every row at most: a range, since the share it answers is known only after calibrating.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from aiforge.batch.cascade.scoring import SCORING_OUTPUT_TOKENS, first_pass_pricer
from aiforge.batch.dedup import Duplicates, find_duplicates
from aiforge.batch.estimate import BatchEstimate, ItemPricer, estimate_of, item_pricer
from aiforge.batch.identity import pricer_of
from aiforge.batch.packing import pack_texts, packed_prompt, packed_spec, row_ids
from aiforge.batch.plans import BATCH_API_WINDOW_S, FLEX_SLOWDOWN, Plan, live_seconds, marked_cheapest
from aiforge.core.file_inputs import paths_text
from aiforge.core.pricing import flex_discount
from aiforge.core.types import ProviderError, Usage

if TYPE_CHECKING:
    from aiforge.batch.options import BatchOptions
    from aiforge.batch.owner import BatchOwner
    from aiforge.batch.prepare import PreparedBatch
    from aiforge.core.templates import BatchPrompts

SUGGESTED_PACK = 6
"""The pack size the ``packed`` plan shows when ``pack=`` was not given."""
PACKED_ROW_OUTPUT_TOKENS = 8
"""Output tokens a packed answer adds per row beyond the row's own answer (``{"id": "r3", "answer": ...}``)."""


def estimate_of_batch(batch: PreparedBatch) -> BatchEstimate:
    """What ``batch`` would cost run as its options say, and every plan it could run as."""
    pricer = pricer_of(batch.owner, batch.spec)
    texts = batch.inputs
    estimate = estimate_of(pricer, [texts[i] for i in batch.leads], items=len(texts), finished=len(batch.done))
    return dataclasses.replace(estimate, plans=plans_of(batch, pricer), files=files_text(batch))


def files_text(batch: PreparedBatch) -> str:
    """The path each file column takes, and whose rules count it (``core.file_inputs.paths_text``)."""
    paths = batch.prompts.file_paths
    if not paths:
        return ""
    rules = getattr(batch.owner.provider, "file_rules", None)
    native = any("native" in kinds.values() for kinds in paths.values())
    counted = f" (counted by {rules}'s rules)" if native and rules else ""
    return paths_text(paths) + counted


def plans_of(batch: PreparedBatch, pricer: ItemPricer) -> tuple[Plan, ...]:
    """Every plan of this batch (``plan_table``'s docstring says what each sends); the cheapest marked."""
    owner, prompts, options, texts = batch.owner, batch.prompts, batch.options, batch.inputs
    rows = [i for i in range(len(texts)) if i not in batch.errors]
    todo = [i for i in rows if i not in batch.done]
    leads = _leads(find_duplicates(texts, batch.done, batch.errors), todo)
    as_is = _live("as_is", [texts[i] for i in todo], pricer, options, "one request per row")
    repeats = f"rows repeating another's prompt served from it: {len(todo) - len(leads)}"
    deduped = _live("deduped", [texts[i] for i in leads], pricer, options, repeats)
    sent = [texts[i] for i in (_leads(find_duplicates(texts, {}, batch.errors), rows) if options.dedup else rows)]
    plans = [as_is, deduped, _flex(owner, deduped), _batch_api(owner, sent, pricer, options.dedup)]
    plans.append(_packed(owner, prompts, options, leads, pricer))
    if options.cascade is not None:
        plans.append(_cascade(owner, prompts, options, rows, pricer))
    return marked_cheapest(plans)


def _leads(duplicates: Duplicates, rows: list[int]) -> list[int]:
    """``rows`` but the repeats (``dedup``): one row per distinct prompt not answered yet."""
    repeats = {i for twins in duplicates.twins.values() for i in twins} | duplicates.answered.keys()
    return [i for i in rows if i not in repeats]


def _cost(pricer: ItemPricer, input_tokens: int, output_tokens: int) -> float | None:
    if pricer.free:
        return 0.0
    return None if pricer.price is None else pricer.price.cost_of(Usage(input_tokens, output_tokens))


def _live(name: str, texts: list[str], pricer: ItemPricer, options: BatchOptions, note: str) -> Plan:
    input_tokens = sum(pricer.input_tokens(text) for text in texts)
    output_tokens = len(texts) * pricer.output_tokens
    return Plan(
        name, len(texts), input_tokens, output_tokens, _cost(pricer, input_tokens, output_tokens),
        seconds=live_seconds(len(texts), options.concurrency, pricer.model), note=note,
    )


def _flex(owner: BatchOwner, deduped: Plan) -> Plan:
    if owner.provider.service_tier_unsent is not None:
        return Plan("flex", available=False, note=f"n/a: {owner.provider_name} sends no service tier")
    share = flex_discount(owner.model)
    if share is None:
        return Plan("flex", available=False, note=f"n/a: OpenAI has no flex tier for {owner.model}")
    dollars = None if deduped.dollars is None else deduped.dollars * share
    seconds = None if deduped.seconds is None else deduped.seconds * FLEX_SLOWDOWN
    return Plan(
        "flex", deduped.requests, deduped.input_tokens, deduped.output_tokens, dollars, seconds=seconds,
        note=f"deduped at SERVICE_TIER=flex: {share:.0%} of the price, slower, may be refused (429) when busy",
    )


def _batch_api(owner: BatchOwner, texts: list[str], pricer: ItemPricer, dedup: bool) -> Plan:
    try:
        share = owner.provider.batch_api().discount  # builds the client side only: no request
    except ProviderError:
        return Plan("batch_api", available=False, note=f"n/a: the {owner.provider_name} provider has no Batch API")
    if owner.request_context.tools:
        return Plan("batch_api", available=False, note="n/a: a Batch API job cannot run the agent's tools")
    input_tokens = sum(pricer.input_tokens(text) for text in texts)
    output_tokens = len(texts) * pricer.output_tokens
    cost = _cost(pricer, input_tokens, output_tokens)
    return Plan(
        "batch_api", len(texts), input_tokens, output_tokens, None if cost is None else cost * share,
        seconds=BATCH_API_WINDOW_S,
        note=f"{'deduped' if dedup else 'every row'}, {share:.0%} of the price, answered within 24 h",
    )


def _packed(
    owner: BatchOwner, prompts: BatchPrompts, options: BatchOptions, leads: list[int], pricer: ItemPricer
) -> Plan:
    system_prompt, tools = owner.request_context.system_prompt, owner.request_context.tools
    if tools:
        return Plan("packed", available=False, note="n/a: rows cannot be packed with tools")
    k = options.pack if options.pack > 1 else SUGGESTED_PACK
    packed = item_pricer(
        model=owner.model, system_prompt=system_prompt, extras=[packed_spec(options.output, k).wire_schema],
        max_tokens=owner.settings.MAX_TOKENS, free=owner.provider.free, prices=owner.settings.PRICES,
        file_rules=pricer.file_rules, detail=pricer.detail,
    )
    own = pack_texts(prompts)
    input_tokens = 0
    for start in range(0, len(leads), k):
        group = leads[start:start + k]
        rows = list(zip(row_ids(len(group)), (own[i] for i in group), strict=True))
        input_tokens += packed.input_tokens(packed_prompt(prompts.template, rows))
    output_tokens = len(leads) * (pricer.output_tokens + PACKED_ROW_OUTPUT_TOKENS)
    requests = math.ceil(len(leads) / k)
    given = "pack=" if options.pack > 1 else "suggested pack="
    return Plan(
        "packed", requests, input_tokens, output_tokens, _cost(pricer, input_tokens, output_tokens),
        seconds=live_seconds(requests, options.concurrency, owner.model),
        note=f"deduped, {given}{k} rows per request (a row answered wrongly is asked again alone)",
    )


def _cascade(
    owner: BatchOwner, prompts: BatchPrompts, options: BatchOptions, rows: list[int], pricer: ItemPricer
) -> Plan:
    cascade = options.cascade
    assert cascade is not None
    texts = [prompts.texts[i] for i in rows]
    if cascade.then is not None:
        pricer = pricer_of(cascade.then, options.output)
    strong_in = sum(pricer.input_tokens(text) for text in texts)
    strong_out = len(texts) * pricer.output_tokens
    strong_all = _cost(pricer, strong_in, strong_out)
    sample = min(cascade.sample, len(texts)) if cascade.truth is None else 0
    share = sample / len(texts) if texts else 0.0
    cheap_pricer = first_pass_pricer(cascade.first, owner if cascade.then is None else cascade.then)
    cheap_in = sum(cheap_pricer.input_tokens(text) for text in texts)
    cheap = _cost(cheap_pricer, cheap_in, len(texts) * SCORING_OUTPUT_TOKENS)
    low = None if cheap is None or strong_all is None else cheap + strong_all * share
    high = None if cheap is None or strong_all is None else cheap + strong_all
    return Plan(
        "cascade", len(texts) + sample, strong_in, strong_out, low, dollars_high=high,
        seconds=live_seconds(2 * len(texts), options.concurrency, owner.model),
        note=(
            f"cheap model scores every row; the strong model answers the {sample}-row sample at least, every row at "
            "most (its share is known only after calibrating); tokens: strong model, all rows"
        ),
    )
