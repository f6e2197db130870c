"""The ``internal_gateway`` provider: any OpenAI-compatible server (vLLM, Ollama, LiteLLM, a company proxy)."""

from __future__ import annotations

from typing import ClassVar

from aiforge.providers.openai_wire import ChatCompletionsProvider
from aiforge.providers.sdk import Endpoint


class GatewayProvider(ChatCompletionsProvider):
    """Chat Completions at ``GATEWAY_BASE_URL``; ``GATEWAY_API_KEY`` and ``GATEWAY_MODEL`` are optional."""

    name: ClassVar[str] = "internal_gateway"
    endpoint: ClassVar[Endpoint] = Endpoint(
        "internal_gateway",
        "GATEWAY_BASE_URL",
        "GATEWAY_API_KEY",
        "default",
        needs_key=False,
        model_setting="GATEWAY_MODEL",
    )
    # Gateways implement the long-standing parameter; not all know max_completion_tokens.
    max_tokens_field: ClassVar[str] = "max_tokens"
