"""Quality-tier model routing: ``select_model(provider, quality, settings)``.

Each provider with a table lists candidate models, each with the lowest tier it is good enough for.
A request for a tier gets the cheapest candidate at that tier or above, where cheap means the
blended price of 3 input tokens to 1 output token (``blended_price``), the usual shape of a chat
turn that resends its history. Prices come from ``aiforge.core.pricing`` with the ``PRICES``
overrides applied, so a price override can change the choice.

Choices behind the tables:

- OpenAI: only non-reasoning chat models are candidates. The reasoning families (gpt-5, o3, o4-mini)
  reject a ``TEMPERATURE`` other than 1 and bill hidden reasoning tokens as output, which a price
  blend cannot see; pin one with ``QUALITY_MODELS`` to use it. gpt-4o-mini sits in ``low``: it
  scores with gpt-4.1-nano, below gpt-4.1-mini.
- Anthropic: Sonnet 4.5 and the Opus models are ``high``; Haiku 4.5, which Anthropic places near
  Sonnet 4, is ``medium``; Claude 3.5 Haiku is ``low``.

With the built-in prices: openai high/medium/low -> gpt-4.1 / gpt-4.1-mini / gpt-4.1-nano;
anthropic -> claude-sonnet-4-5 / claude-haiku-4-5 / claude-3-5-haiku.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from aiforge.core.pricing import ModelPrice, lookup_price
from aiforge.core.types import ConfigError, UsageError

if TYPE_CHECKING:
    from aiforge.core.settings import AIForgeSettings

QUALITY_TIERS = ("high", "medium", "low")
"""Valid ``quality`` values, best first."""

_RANK = {"low": 0, "medium": 1, "high": 2}

ROUTER_TABLE: Mapping[str, tuple[tuple[str, str], ...]] = MappingProxyType(
    {
        "openai": (
            ("gpt-4.1", "high"),
            ("gpt-4o", "high"),
            ("gpt-4.1-mini", "medium"),
            ("gpt-4.1-nano", "low"),
            ("gpt-4o-mini", "low"),
        ),
        "anthropic": (
            ("claude-sonnet-4-5", "high"),
            ("claude-opus-4-5", "high"),
            ("claude-opus-4-1", "high"),
            ("claude-haiku-4-5", "medium"),
            ("claude-3-5-haiku", "low"),
        ),
    }
)
"""provider -> ``(model, tier)`` candidates; on equal price the earlier one wins."""

_INPUT_SHARE = 0.75


def blended_price(price: ModelPrice) -> float:
    """USD per 1M tokens of a 3:1 input:output mix, the router's measure of cheap."""
    return _INPUT_SHARE * price.input + (1 - _INPUT_SHARE) * price.output


def _tier(quality: str) -> str:
    tier = quality.strip().lower() if isinstance(quality, str) else quality
    if tier not in _RANK:
        raise UsageError(f"invalid quality {quality!r}; valid tiers: {', '.join(QUALITY_TIERS)}")
    return tier


def _pinned(provider: str, tier: str, settings: AIForgeSettings) -> str | None:
    pins = settings.QUALITY_MODELS.get(provider) or {}
    for key in pins:
        if key not in _RANK:
            raise ConfigError(
                f"QUALITY_MODELS[{provider!r}] has unknown tier {key!r}; valid tiers: "
                f"{', '.join(QUALITY_TIERS)}. Fix QUALITY_MODELS in aiforge.yaml, the "
                "AIFORGE_QUALITY_MODELS environment variable or the QUALITY_MODELS= keyword."
            )
    return pins.get(tier) or None


def select_model(provider: str, quality: str | None, settings: AIForgeSettings) -> str | None:
    """The model to call for ``provider`` at ``quality``, or None to use the provider's default.

    ``settings.MODEL`` always wins. Otherwise, with ``MODEL_ROUTER_ENABLED`` and a tier
    (``quality``, else ``DEFAULT_QUALITY``): the ``QUALITY_MODELS[provider][tier]`` pin if set,
    else the cheapest candidate of that tier or better. ``provider`` is a resolved name, not
    ``auto``; providers without a table (local, scripted, gateway, custom) get None unless pinned.
    Raises ``ValueError`` for a tier other than high, medium or low.
    """
    tier = _tier(quality) if quality is not None else None
    if settings.MODEL:
        if quality is not None:
            _ignored_once(quality, provider, f"MODEL={settings.MODEL!r} is set, and an explicit model wins")
        return settings.MODEL
    if not settings.MODEL_ROUTER_ENABLED:
        if quality is not None:
            _ignored_once(quality, provider, "MODEL_ROUTER_ENABLED is False")
        return None
    tier = tier or (_tier(settings.DEFAULT_QUALITY) if settings.DEFAULT_QUALITY else None)
    if tier is None:
        return None
    pinned = _pinned(provider, tier, settings)
    if pinned:
        return pinned
    best: tuple[float, str] | None = None
    for model, model_tier in ROUTER_TABLE.get(provider, ()):
        if _RANK[model_tier] < _RANK[tier]:
            continue
        price = lookup_price(model, settings.PRICES)
        if price is None:
            continue
        cost = blended_price(price)
        if best is None or cost < best[0]:
            best = (cost, model)
    if best is None and quality is not None:
        _ignored_once(
            quality, provider, f"provider {provider!r} has no quality tiers (pin a model with QUALITY_MODELS)"
        )
    return best[1] if best else None


_ignored: set[tuple[str, str, str]] = set()


def _ignored_once(quality: str, provider: str, reason: str) -> None:
    """Warn that ``quality=`` changed nothing, once per reason and provider in a process."""
    key = (quality, provider, reason)
    if key not in _ignored:
        _ignored.add(key)
        warnings.warn(f"quality={quality!r} is ignored: {reason}.", UserWarning, stacklevel=4)
