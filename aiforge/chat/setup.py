"""``AgentSetup``: an agent's settings, provider, model and cost tracker, from its constructor's arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiforge.batch.request.call import AgentRuntime
from aiforge.chat.tool_runner import Toolset
from aiforge.core.costs import CostTracker
from aiforge.core.otel import telemetry_of
from aiforge.core.settings import AIForgeSettings, load_settings
from aiforge.core.types import CallParams, ConfigError, UsageError
from aiforge.providers.base import warn_of_unsent_settings
from aiforge.providers.prompted import PromptedTools

if TYPE_CHECKING:
    from aiforge.providers.base import Provider

QUALITIES = ("high", "medium", "low")


@dataclass(frozen=True)
class AgentSetup:
    """What ``quality=``, ``provider=``, ``cache=`` and the settings overrides resolve to."""

    settings: AIForgeSettings
    quality: str | None
    provider: Provider
    provider_name: str
    model: str

    @classmethod
    def of(cls, *, quality: str | None, provider: Any, cache: Any, overrides: dict[str, Any]) -> AgentSetup:
        """Load the settings (``overrides`` win), check them, and make or take the provider."""
        from aiforge.core.router import select_model
        from aiforge.providers import create_provider, resolve_provider_name
        from aiforge.providers.base import Provider
        from aiforge.providers.embedding_choice import check_embedding_settings

        if provider is not None and not isinstance(provider, str | Provider):
            raise UsageError(f"provider must be a provider name or a Provider instance, got {type(provider).__name__}")
        if isinstance(provider, str):
            overrides["PROVIDER"] = provider
        if cache is not None:
            overrides["CACHE"] = cache
        settings = load_settings(**overrides)
        if settings.PRICES:
            from aiforge.core.pricing import parse_price_overrides

            parse_price_overrides(settings.PRICES)  # a malformed entry fails here, not mid-conversation
        if quality is not None and quality not in QUALITIES:
            raise UsageError(f"quality must be 'high', 'medium' or 'low', got {quality!r}")
        chosen = quality or settings.DEFAULT_QUALITY
        if isinstance(provider, Provider):
            name = provider.registry_name
        else:
            name = resolve_provider_name(settings)
            provider = create_provider(settings, name)
        check_embedding_settings(settings, name)  # a wrong EMBEDDING_PROVIDER fails here, before any request
        model = select_model(name, chosen, settings) or provider.default_model
        return cls(settings=settings, quality=chosen, provider=provider, provider_name=name, model=model)

    def native_tools(self, asked: bool | None) -> bool:
        """Whether tools go through the provider's own tool calling (``native_tools=``; None: when it has it)."""
        if asked and not self.provider.supports_native_tools:
            raise ConfigError(
                f"native_tools=True but provider {self.provider_name!r} has no native tool calling; "
                "leave native_tools=None to use the prompted-JSON protocol"
            )
        return self.provider.supports_native_tools if asked is None else bool(asked)

    def runtime(self, toolset: Toolset, native_tools: bool, cost_tracker: CostTracker) -> AgentRuntime:
        """The agent's turn runtime: the provider as the graph sees it, the call parameters, tools and costs."""
        settings, provider = self.settings, self.provider
        warn_of_unsent_settings(provider, settings)
        # A provider with its own default (the embedded model's measured one) picks it; a TEMPERATURE the user set wins.
        unset = provider.default_temperature is not None and "TEMPERATURE" not in settings.model_fields_set
        return AgentRuntime(
            # The graph sees native tool calls only: the prompted-JSON protocol is a provider wrapper.
            provider=provider if native_tools else PromptedTools(provider),
            provider_name=self.provider_name,
            free=provider.free,
            params=CallParams(
                model=self.model,
                temperature=None if unset else settings.TEMPERATURE,
                max_tokens=settings.MAX_TOKENS,
                service_tier=settings.SERVICE_TIER,
                prompt_cache=settings.PROMPT_CACHE == "auto",
            ),
            toolset=toolset,
            cost_tracker=cost_tracker,
            price_overrides=settings.PRICES or None,
            telemetry=telemetry_of(settings, self.provider_name, provider),
        )
