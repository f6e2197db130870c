"""Model prices and the cost of a call: ``price_of(usage, model)``.

The table holds published list prices in USD per 1M tokens as of November 2025 (``PRICES_AS_OF``),
standard tier; OpenAI's flex and priority tiers (``FLEX_DISCOUNT``, ``PRIORITY_PRICES``) and the Batch
APIs' discount (``BATCH_DISCOUNT``) have tables of their own. Anthropic cache writes are the 5-minute ones
(1.25x input) and cache reads 0.1x input; Sonnet's long-context rate (prompts over 200K tokens) is
not modelled. OpenAI does not bill cache writes, so its ``cache_write`` equals ``input``.

A price that is wrong or missing is fixed without a release through the ``PRICES`` setting
(``aiforge.yaml``, ``AIFORGE_PRICES`` or ``PRICES=`` keyword): ``{model: {input, output,
cached_input?, cache_write?}}``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any, TypeVar

from aiforge.core.types import ConfigError, Usage

T = TypeVar("T")

PRICES_AS_OF = "2025-11"
"""The month the built-in table reflects."""

_PER_TOKEN = 1_000_000


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per 1M tokens for one model."""

    input: float
    output: float
    cached_input: float
    """Cache hits (OpenAI cached input, Anthropic cache reads)."""
    cache_write: float
    """Tokens written to the prompt cache (Anthropic); equal to ``input`` where writes are not billed."""

    def cost_of(self, usage: Usage) -> float:
        """USD for ``usage``; input tokens that are neither cache hits nor writes pay the input rate."""
        uncached = max(usage.input_tokens - usage.cached_input_tokens - usage.cache_write_tokens, 0)
        return (
            uncached * self.input
            + usage.cached_input_tokens * self.cached_input
            + usage.cache_write_tokens * self.cache_write
            + usage.output_tokens * self.output
        ) / _PER_TOKEN


def _openai(input: float, cached_input: float, output: float) -> ModelPrice:
    return ModelPrice(input=input, output=output, cached_input=cached_input, cache_write=input)


def _anthropic(input: float, cache_write: float, cached_input: float, output: float) -> ModelPrice:
    return ModelPrice(input=input, output=output, cached_input=cached_input, cache_write=cache_write)


# Columns follow each vendor's pricing page: OpenAI input / cached input / output,
# Anthropic input / 5m cache write / cache hit / output.
_BUILTIN: dict[str, ModelPrice] = {
    # OpenAI
    "gpt-5": _openai(1.25, 0.125, 10.00),
    "gpt-5-chat": _openai(1.25, 0.125, 10.00),
    "gpt-5-mini": _openai(0.25, 0.025, 2.00),
    "gpt-5-nano": _openai(0.05, 0.005, 0.40),
    "gpt-4.1": _openai(2.00, 0.50, 8.00),
    "gpt-4.1-mini": _openai(0.40, 0.10, 1.60),
    "gpt-4.1-nano": _openai(0.10, 0.025, 0.40),
    "gpt-4o": _openai(2.50, 1.25, 10.00),
    "gpt-4o-2024-05-13": _openai(5.00, 5.00, 15.00),  # first snapshot: older price, no caching
    "gpt-4o-mini": _openai(0.15, 0.075, 0.60),
    "o3": _openai(2.00, 0.50, 8.00),
    "o4-mini": _openai(1.10, 0.275, 4.40),
    "o3-mini": _openai(1.10, 0.55, 4.40),
    "o1": _openai(15.00, 7.50, 60.00),
    "o1-mini": _openai(1.10, 0.55, 4.40),
    # OpenAI embeddings: input only (an embedding has no output tokens, nor a cached rate)
    "text-embedding-3-small": _openai(0.02, 0.02, 0.0),
    "text-embedding-3-large": _openai(0.13, 0.13, 0.0),
    "text-embedding-ada-002": _openai(0.10, 0.10, 0.0),
    # Anthropic
    "claude-opus-4-5": _anthropic(5.00, 6.25, 0.50, 25.00),
    "claude-opus-4-1": _anthropic(15.00, 18.75, 1.50, 75.00),
    "claude-opus-4": _anthropic(15.00, 18.75, 1.50, 75.00),
    "claude-opus-4-0": _anthropic(15.00, 18.75, 1.50, 75.00),
    "claude-sonnet-4-5": _anthropic(3.00, 3.75, 0.30, 15.00),
    "claude-sonnet-4": _anthropic(3.00, 3.75, 0.30, 15.00),
    "claude-sonnet-4-0": _anthropic(3.00, 3.75, 0.30, 15.00),
    "claude-3-7-sonnet": _anthropic(3.00, 3.75, 0.30, 15.00),
    "claude-haiku-4-5": _anthropic(1.00, 1.25, 0.10, 5.00),
    "claude-3-5-haiku": _anthropic(0.80, 1.00, 0.08, 4.00),
    "claude-3-haiku": _anthropic(0.25, 0.30, 0.03, 1.25),
}

PRICE_TABLE: Mapping[str, ModelPrice] = MappingProxyType(_BUILTIN)
"""The built-in prices, read-only; extend or replace entries with the ``PRICES`` setting."""

# Service tiers (OpenAI's ``service_tier``): the response says which tier served the call, and that is priced.
_LIST_TIERS = frozenset({None, "default", "auto", "standard"})
"""Tiers billed at the list price: OpenAI's ``default`` (and ``auto`` before it resolves), Anthropic's ``standard``."""

# Flex processing bills "at Batch API rates" (developers.openai.com/api/docs/guides/flex-processing), half the
# list price; in beta for o3 and o4-mini (April 2025) and the GPT-5 models. A flex reply of another model is
# unpriced rather than guessed.
FLEX_DISCOUNT: Mapping[str, float] = MappingProxyType(
    {"o3": 0.5, "o4-mini": 0.5, "gpt-5": 0.5, "gpt-5-mini": 0.5, "gpt-5-nano": 0.5}
)
"""The share of the list price (``PRICES`` included) a flex-tier call bills, by model."""


def flex_discount(model: str) -> float | None:
    """The share of the list price ``model`` bills at the flex tier; None when it has no flex price."""
    return _resolve(model, FLEX_DISCOUNT)


# Priority processing, USD per 1M tokens (input / cached input / output) from openai.com/api-priority-processing
# (short-context rates). gpt-4o-2024-05-13 has no cached rate there: its cached input pays the input rate.
PRIORITY_PRICES: Mapping[str, ModelPrice] = MappingProxyType({
    "gpt-5": _openai(2.50, 0.25, 20.00),
    "gpt-5-mini": _openai(0.45, 0.045, 3.60),
    "gpt-4.1": _openai(3.50, 0.875, 14.00),
    "gpt-4.1-mini": _openai(0.70, 0.175, 2.80),
    "gpt-4.1-nano": _openai(0.20, 0.05, 0.80),
    "gpt-4o": _openai(4.25, 2.125, 17.00),
    "gpt-4o-2024-05-13": _openai(8.75, 8.75, 26.25),
    "gpt-4o-mini": _openai(0.25, 0.125, 1.00),
    "o3": _openai(3.50, 0.875, 14.00),
    "o4-mini": _openai(2.00, 0.50, 8.00),
})
"""What a priority-tier call bills, by model; a priority reply of a model missing here is unpriced."""

# A snapshot or alias of a base model: gpt-4o-2024-08-06, claude-3-5-haiku-20241022,
# claude-3-5-haiku-latest, claude-3-5-haiku@20241022 (Vertex). Requiring the whole remainder to be
# such a suffix is what keeps gpt-4o-mini-2024-07-18 from resolving to gpt-4o, or
# claude-opus-4-5 to claude-opus-4.
_SNAPSHOT_SUFFIX = re.compile(r"(?:-\d{4}-\d{2}-\d{2}|-\d{8}|@\d{8}|-latest)$")

_PRICE_KEYS = ("input", "output", "cached_input", "cache_write")
_FIX_HINT = "Fix PRICES in aiforge.yaml, the AIFORGE_PRICES environment variable or the PRICES= keyword."


def _resolve(model: str, table: Mapping[str, T]) -> T | None:
    name = model.strip().lower()
    # "openai/gpt-4o", "openrouter/anthropic/claude-sonnet-4-5": the last segment names the model.
    for candidate in dict.fromkeys((name, name.rsplit("/", 1)[-1])):
        price = table.get(candidate)
        if price is not None:
            return price
        base = _SNAPSHOT_SUFFIX.sub("", candidate)
        if base != candidate and (price := table.get(base)) is not None:
            return price
    return None


def resolve_model_entry(model: str, table: Mapping[str, T]) -> T | None:
    """``table``'s entry for ``model``, found as prices are: name, dated snapshot, ``-latest``, provider prefix."""
    return _resolve(model, table)


@lru_cache(maxsize=1024)
def _resolve_builtin(model: str) -> ModelPrice | None:
    return _resolve(model, _BUILTIN)


def _rate(model: str, entry: Mapping[str, Any], key: str) -> float:
    value = entry[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ConfigError(
            f"PRICES[{model!r}][{key!r}] must be a non-negative number of USD per 1M tokens, got {value!r}. {_FIX_HINT}"
        )
    return float(value)


def parse_price_overrides(overrides: Mapping[str, Any]) -> dict[str, ModelPrice]:
    """The ``PRICES`` setting as ``ModelPrice`` entries keyed by lower-case model name.

    ``input`` and ``output`` are required; a missing ``cached_input`` or ``cache_write`` is charged
    at the input rate, so an override never under-reports. Raises ``ConfigError`` naming the model
    and key for a missing, unknown or invalid key.
    """
    parsed: dict[str, ModelPrice] = {}
    for model, entry in overrides.items():
        if not isinstance(entry, Mapping):
            raise ConfigError(
                f"PRICES[{model!r}] must be a mapping like {{'input': 2.5, 'output': 10.0}} "
                f"(USD per 1M tokens), got {type(entry).__name__}. {_FIX_HINT}"
            )
        unknown = [key for key in entry if key not in _PRICE_KEYS]
        if unknown:
            raise ConfigError(
                f"PRICES[{model!r}] has unknown key {unknown[0]!r}; valid keys: {', '.join(_PRICE_KEYS)}. {_FIX_HINT}"
            )
        for key in ("input", "output"):
            if key not in entry:
                raise ConfigError(f"PRICES[{model!r}] is missing {key!r} (USD per 1M tokens). {_FIX_HINT}")
        input_rate = _rate(model, entry, "input")
        parsed[str(model).strip().lower()] = ModelPrice(
            input=input_rate,
            output=_rate(model, entry, "output"),
            cached_input=_rate(model, entry, "cached_input") if "cached_input" in entry else input_rate,
            cache_write=_rate(model, entry, "cache_write") if "cache_write" in entry else input_rate,
        )
    return parsed


def lookup_price(model: str, overrides: Mapping[str, Any] | None = None) -> ModelPrice | None:
    """The price of ``model``, or None when neither the table nor ``overrides`` knows it.

    Resolves exact names, dated snapshots and ``-latest`` aliases to their base entry, and
    provider-prefixed names such as ``openai/gpt-4o``. ``overrides`` is the ``PRICES`` setting;
    its entries extend or replace the built-in ones.
    """
    if not overrides:
        return _resolve_builtin(model)
    return _resolve(model, {**_BUILTIN, **parse_price_overrides(overrides)})


def price_of(
    usage: Usage, model: str, overrides: Mapping[str, Any] | None = None, service_tier: str | None = None
) -> tuple[float, bool]:
    """``(cost in USD, priced)`` of one call; ``(0.0, False)`` when the model has no price at ``service_tier``.

    ``service_tier`` is the tier the response reports it was served at (OpenAI's ``service_tier``); None,
    ``default``, ``auto`` and ``standard`` are the list price.
    """
    price = lookup_price(model, overrides)
    if price is None:
        return 0.0, False
    if service_tier in _LIST_TIERS:
        return price.cost_of(usage), True
    if service_tier == "flex":
        discount = flex_discount(model)
        return (0.0, False) if discount is None else (price.cost_of(usage) * discount, True)
    if service_tier == "priority":
        priority = _resolve(model, PRIORITY_PRICES)
        return (0.0, False) if priority is None else (priority.cost_of(usage), True)
    return 0.0, False  # a tier aiforge has no prices for ("scale"): unknown, not guessed


BATCH_DISCOUNT: Mapping[str, float] = MappingProxyType({"openai": 0.5, "anthropic": 0.5, "scripted": 0.5})
"""The share of the list price a provider's Batch API bills, by provider name.

OpenAI's Batch API and Anthropic's Message Batches bill every token, input and output, at 50 % of
the standard rate (their pricing pages); the scripted provider's in-process Batch API does the same,
so a billed stand-in (not ``free``) shows the saving offline. A provider missing here pays the list
price: ``internal_gateway``, because what a gateway charges is its own (fix it with ``PRICES``).
"""


def batch_price_of(
    usage: Usage, model: str, provider: str, overrides: Mapping[str, Any] | None = None
) -> tuple[float, bool]:
    """``(cost in USD, priced)`` of one request run through ``provider``'s Batch API."""
    cost, priced = price_of(usage, model, overrides)
    return cost * BATCH_DISCOUNT.get(provider, 1.0), priced
