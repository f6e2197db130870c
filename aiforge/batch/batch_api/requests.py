"""A module's batch items as provider requests, and provider outcomes as its results.

Each item is one model call as a fresh conversation would make it (the agent's system prompt, the
item as the user message, the agent's model and generation settings, ``output=``), so a Batch API
job sends the JSON a live ``run_batch`` would. Tools cannot run inside a Batch API job: an agent with
tools is refused before anything is sent.
"""

from __future__ import annotations

import dataclasses
import secrets
import time
from typing import TYPE_CHECKING, Any

from aiforge.core.costs import CostRecord
from aiforge.core.errors import OutputRefusedError
from aiforge.core.output import OutputSpec
from aiforge.core.pricing import price_of
from aiforge.core.tokens import TOKEN_LIMIT_FINISH_REASONS
from aiforge.core.types import CallParams, Completion, Message, UsageError
from aiforge.providers.batch_api import BatchRequest

if TYPE_CHECKING:
    from aiforge.batch.owner import BatchOwner

CUSTOM_ID_PREFIX = "item-"
"""A request's ``custom_id`` is this and the item's position, so results find their row after a restart."""


def custom_id(index: int) -> str:
    return f"{CUSTOM_ID_PREFIX}{index}"


def index_of(custom_id: str) -> int | None:
    """The item position a ``custom_id`` names, or None for a request aiforge did not make."""
    number = custom_id.removeprefix(CUSTOM_ID_PREFIX)
    return int(number) if custom_id.startswith(CUSTOM_ID_PREFIX) and number.isdigit() else None


def call_params(module: BatchOwner, spec: OutputSpec | None) -> CallParams:
    """The parameters of one item's call: the agent's own (as its live turns use them), with ``output``.

    No ``SERVICE_TIER``: a Batch API job runs at the batch tier, priced at its Batch API's ``discount``.
    """
    return dataclasses.replace(module.request_context.params, output=spec, service_tier=None)


def batch_requests(module: BatchOwner, texts: dict[int, str], params: CallParams) -> list[BatchRequest]:
    """One request per item to send, keyed by position; ``UsageError`` for an agent with tools."""
    system_prompt, tools = module.request_context.system_prompt, module.request_context.tools
    if tools:
        raise UsageError(
            f"submit_batch sends one model call per item and cannot run {type(module).__name__}'s tools "
            f"({len(tools)}); use run_batch for an agent with tools."
        )
    head: list[Message] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return [
        BatchRequest(custom_id(index), [*head, {"role": "user", "content": text}], params)
        for index, text in texts.items()
    ]


def to_result(module: BatchOwner, completion: Completion, spec: OutputSpec | None, discount: float) -> Any:
    """The module's result for one answered request, at the Batch API's price (``discount`` of the list price).

    A refusal is an ``OutputRefusedError`` and a reply that does not validate as ``output=`` an
    ``OutputValidationError``: a Batch API job cannot ask again with feedback, ``run_batch`` can.
    """
    if completion.refusal is not None:
        raise OutputRefusedError(completion.refusal)
    model = completion.model or module.model
    cost, priced = price_of(completion.usage, model, module.settings.PRICES)
    cost *= discount
    if module.provider.free:
        cost, priced = 0.0, True
    usage, conversation_id, trace_id = completion.usage, secrets.token_hex(8), secrets.token_hex(8)
    # The owner's result type, as a checkpoint would restore it: its output validated from the reply's text.
    result = module.result_type().from_payload({
        "message": completion.text, "conversation_id": conversation_id, "cost": cost,
        "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
        "cached_tokens": usage.cached_input_tokens, "model": model,
        "trace_id": trace_id, "provider": module.provider_name, "priced": priced,
        "truncated": completion.finish_reason in TOKEN_LIMIT_FINISH_REASONS,
    }, spec)
    module.cost_tracker.extend([CostRecord(
        timestamp=time.time(), provider=module.provider_name, model=model, input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens, cached_input_tokens=usage.cached_input_tokens,
        cache_write_tokens=usage.cache_write_tokens, cost=cost, priced=priced, kind="batch_api",
        trace_id=trace_id, conversation_id=conversation_id,
    )])
    return result
