"""The ``internal_gateway`` provider: any OpenAI-compatible server (vLLM, Ollama, LiteLLM, a company proxy)."""

from __future__ import annotations

from typing import Any, ClassVar

from aiforge.core.settings import AIForgeSettings
from aiforge.core.types import ConfigError
from aiforge.providers.openai_wire import OpenAICompatibleProvider, key_fingerprint

#: Sent when GATEWAY_API_KEY is unset: the SDK insists on a key, vLLM and Ollama ignore it.
PLACEHOLDER_KEY = "not-needed"


class GatewayProvider(OpenAICompatibleProvider):
    """Chat Completions at ``GATEWAY_BASE_URL``; ``GATEWAY_API_KEY`` and ``GATEWAY_MODEL`` are optional."""

    name: ClassVar[str] = "internal_gateway"
    key_setting: ClassVar[str | None] = "GATEWAY_API_KEY"
    # Gateways implement the long-standing parameter; not all know max_completion_tokens.
    max_tokens_field: ClassVar[str] = "max_tokens"
    default_model: str = "default"

    @classmethod
    def connection_key(cls, settings: Any) -> tuple[Any, ...]:
        return (
            cls._base_url_of(settings),
            key_fingerprint(settings.secret("GATEWAY_API_KEY")),
            settings.GATEWAY_MODEL,
            settings.TIMEOUT,
            settings.MAX_RETRIES,
            settings.RETRY_MAX_WAIT,
        )

    @classmethod
    def _base_url_of(cls, settings: AIForgeSettings) -> str:
        if not settings.GATEWAY_BASE_URL:
            raise ConfigError(
                "the internal_gateway provider needs the gateway's URL: set AIFORGE_GATEWAY_BASE_URL "
                "in the environment or GATEWAY_BASE_URL in aiforge.yaml (e.g. http://localhost:8000/v1)."
            )
        return settings.GATEWAY_BASE_URL

    @classmethod
    def _api_key_of(cls, settings: AIForgeSettings) -> str:
        return settings.secret("GATEWAY_API_KEY") or PLACEHOLDER_KEY

    @classmethod
    def _default_model_of(cls, settings: AIForgeSettings) -> str:
        return settings.GATEWAY_MODEL or cls.default_model
