"""A service tier asked for by one batch only (``run_batch(plan="cheapest")`` choosing flex), not by the agent.

A context variable, set around the batch's run: the batch's tasks (created inside it) inherit it, every other
call of the same agent (before, after, or concurrently in another task) keeps the agent's ``SERVICE_TIER``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from aiforge.core.types import CallParams

_tier: ContextVar[str | None] = ContextVar("aiforge_batch_service_tier", default=None)


@contextmanager
def service_tier_for_batch(tier: str) -> Iterator[None]:
    """Calls made inside the block (and tasks it starts) ask for ``tier`` whatever their agent's ``SERVICE_TIER``."""
    token = _tier.set(tier)
    try:
        yield
    finally:
        _tier.reset(token)


def with_batch_tier(params: CallParams) -> CallParams:
    """``params`` with the tier of the batch this call belongs to, if one was set (``service_tier_for_batch``)."""
    tier = _tier.get()
    return params if tier is None or tier == params.service_tier else dataclasses.replace(params, service_tier=tier)
