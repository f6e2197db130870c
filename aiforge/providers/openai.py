"""The ``openai`` provider: OpenAI's Chat Completions API (or anything at ``OPENAI_BASE_URL``)."""

from __future__ import annotations

from typing import Any, ClassVar

from aiforge.core.settings import AIForgeSettings
from aiforge.core.types import ConfigError
from aiforge.providers.openai_wire import OpenAICompatibleProvider, key_fingerprint

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Reasoning models answer 400 to any temperature but the default, so none is sent to them.
_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")


class OpenAIProvider(OpenAICompatibleProvider):
    """OpenAI through ``openai.AsyncOpenAI``; needs ``OPENAI_API_KEY``."""

    name: ClassVar[str] = "openai"
    key_setting: ClassVar[str | None] = "OPENAI_API_KEY"
    default_model: str = "gpt-4o-mini"

    def fixed_temperature(self, model: str) -> bool:
        name = model.rsplit("/", 1)[-1].lower()
        return name.startswith(_REASONING_PREFIXES) and not name.startswith("gpt-5-chat")

    @classmethod
    def connection_key(cls, settings: Any) -> tuple[Any, ...]:
        return (
            cls._base_url_of(settings),
            key_fingerprint(settings.secret("OPENAI_API_KEY")),
            settings.TIMEOUT,
            settings.MAX_RETRIES,
            settings.RETRY_MAX_WAIT,
        )

    @classmethod
    def _base_url_of(cls, settings: AIForgeSettings) -> str:
        return settings.OPENAI_BASE_URL or DEFAULT_BASE_URL

    @classmethod
    def _api_key_of(cls, settings: AIForgeSettings) -> str:
        key = settings.secret("OPENAI_API_KEY")
        if not key:
            raise ConfigError(
                "the openai provider needs an API key: set OPENAI_API_KEY (or AIFORGE_OPENAI_API_KEY) "
                "in the environment, or OPENAI_API_KEY in aiforge.yaml."
            )
        return key
