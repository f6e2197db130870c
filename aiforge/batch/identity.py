"""What a batch is: its fingerprint, its response cache, its price (what it already has is ``resume``'s).

Functions of the ``BatchOwner`` (the agent) and the batch's prompts, shared by ``run_batch`` and the Batch API
jobs (``batch_api``), so a job and a live batch of the same items agree on identity and checkpoint.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from aiforge.batch.estimate import ItemPricer, item_pricer
from aiforge.batch.output_labels import label_values
from aiforge.core.output import WRAPPER_KEY
from aiforge.core.pricing import lookup_price, price_of
from aiforge.core.tokens import estimate_tokens
from aiforge.core.types import ConfigError, Usage, UsageError

if TYPE_CHECKING:
    from aiforge.batch.owner import BatchOwner
    from aiforge.core.output import OutputSpec
    from aiforge.store import BatchFingerprint, ResponseCache


def batch_identity(
    owner: BatchOwner, inputs: list[str], spec: OutputSpec | None, *, scored: bool = False
) -> BatchFingerprint:
    """What identifies this batch: its prompts, and everything its replies depend on (never a key); ``scored``:
    its label rows are answered by scoring (``label_scoring``), not generated."""
    from aiforge.batch.request.cache import with_detail
    from aiforge.store import batch_fingerprint, fingerprint
    from aiforge.store.fingerprint import public_endpoint

    system_prompt, tools = owner.request_context.system_prompt, owner.request_context.tools
    settings = {
        "module": type(owner).__name__,
        "provider": owner.provider_name,
        "endpoint": public_endpoint(owner.provider.base_url),
        "model": owner.model,
        "temperature": owner.settings.TEMPERATURE,
        "max_tokens": owner.settings.MAX_TOKENS,
        "system_prompt": system_prompt,
        "tools": tools,
        "output": None if spec is None else spec.wire_schema,
        **({"answered_by": "score_labels"} if scored else {}),
    }
    settings = with_detail(settings, owner.settings.IMAGE_DETAIL, inputs)  # what its images are sent at
    return batch_fingerprint([fingerprint(text) for text in inputs], settings)


def open_cache(value: bool | str | os.PathLike[str] | None) -> ResponseCache | None:
    """The response cache a ``CACHE`` value names (True, a path, ``"memory"``), or None when it is off."""
    from aiforge.store import ResponseCache, Store

    store = Store.for_setting(value, kind="cache")
    return None if store is None else ResponseCache(store)


def pricer_of(owner: BatchOwner, spec: OutputSpec | None) -> ItemPricer:
    """What one item of this owner's batch is estimated to cost (budgets and ``estimate=True``)."""
    system_prompt, tools = owner.request_context.system_prompt, owner.request_context.tools
    max_tokens = owner.settings.MAX_TOKENS
    answer = label_answer_tokens(spec)
    return item_pricer(
        model=owner.model,
        system_prompt=system_prompt,
        extras=[*tools, *([] if spec is None else [spec.wire_schema])],
        max_tokens=max_tokens if answer is None else min(answer, max_tokens or answer),
        free=owner.provider.free,
        prices=owner.settings.PRICES,
        file_rules=owner.provider.file_rules,
        detail=owner.settings.IMAGE_DETAIL,
    )


def check_budget_enforceable(owner: BatchOwner, max_cost: float | None) -> None:
    """A ``ConfigError`` naming ``PRICES`` when ``max_cost`` is given for a model aiforge cannot price.

    Every call of such a model is recorded at $0.00 (``priced=False``), so no budget would ever stop it: the
    batch is refused before any request rather than run in full. A free provider (local, scripted) is priced
    at 0 and needs no price; the tier the agent asks for (``SERVICE_TIER``) must have a price too.
    """
    if max_cost is None or owner.provider.free:
        return
    provider = owner.provider
    tier = owner.settings.SERVICE_TIER if provider.service_tier_unsent is None else None
    if price_of(Usage(1, 1), owner.model, owner.settings.PRICES or None, tier)[1]:
        return
    model = owner.model
    at = f" at SERVICE_TIER={tier}" if tier is not None and lookup_price(model, owner.settings.PRICES) else ""
    raise ConfigError(
        f"max_cost=${max_cost:g} cannot be enforced: aiforge has no price for model {model!r}{at}, so its calls "
        f"would be recorded at $0.00 and none would ever stop; give it one with the PRICES setting, e.g. "
        f"PRICES={{{model!r}: {{'input': 1.0, 'output': 2.0}}}} (USD per 1M tokens; aiforge.yaml, AIFORGE_PRICES "
        "or the PRICES= keyword), or run without max_cost",
        setting="PRICES",
    )


def label_answer_tokens(spec: OutputSpec | None) -> int | None:
    """The tokens of the longest answer a label output (a Literal, Enum or bool: ``classify``, ``filter``) can give,
    as its JSON on the wire; None for any other output, whose replies are assumed ``MAX_TOKENS`` long."""
    try:
        values = label_values(spec)
    except UsageError:
        return None
    assert spec is not None
    wire = [label if spec.is_object else {WRAPPER_KEY: label} for label in values]
    return max(estimate_tokens(json.dumps(answer)) for answer in wire) + 1  # and the end of the reply
