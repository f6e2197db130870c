"""The provider protocol: the one small surface every LLM backend implements."""

from __future__ import annotations

import threading
import warnings
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, ClassVar

from aiforge.core.types import CallParams, Completion, Message, ProviderError, ToolSpec

if TYPE_CHECKING:
    from aiforge.providers.batch_api import BatchLimits, ProviderBatchAPI

StreamEvent = str | Completion
"""What ``Provider.stream`` yields: text deltas, then exactly one final ``Completion``."""


class Provider(ABC):
    """An LLM backend.

    Implement ``complete``; override ``stream`` when the backend streams. Messages and tool
    calls come and go in aiforge's neutral types; the provider translates its wire format.
    Retries, timeouts and error mapping happen inside the provider, so callers only ever see
    ``aiforge.core.types`` errors.
    """

    name: ClassVar[str] = "custom"
    supports_native_tools: ClassVar[bool] = False
    supports_streaming: ClassVar[bool] = False
    #: Cost of this provider's calls is always zero (local models, fakes).
    free: ClassVar[bool] = False
    #: Why this backend is sent no sampling temperature; None when it is sent ``TEMPERATURE``.
    temperature_unsent: ClassVar[str | None] = None
    default_model: str = "default"

    @classmethod
    def connection_key(cls, settings: Any) -> tuple[Any, ...]:
        """Settings that make two instances of this provider different (see ``create_provider``)."""
        return ()

    @abstractmethod
    async def complete(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> Completion:
        """Run one model call and return its complete result."""

    async def stream(
        self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams
    ) -> AsyncIterator[StreamEvent]:
        """Yield text deltas as they arrive, then the final ``Completion``.

        The default runs ``complete`` and yields its text as one chunk.
        """
        completion = await self.complete(messages, tools, params)
        if completion.text:
            yield completion.text
        yield completion

    def batch_api(self, limits: BatchLimits | None = None) -> ProviderBatchAPI[Any]:
        """This provider's Batch API (``agent.submit_batch``); ``limits`` replaces its own (to test splitting).

        Raises ``ProviderError`` naming the providers that have one; a vendor with a Batch API overrides this.
        """
        name = getattr(self, "provider_name", None) or self.name
        raise ProviderError(
            f"the {name} provider has no Batch API; submit_batch works with openai, internal_gateway (a gateway "
            f"serving /v1/files and /v1/batches), anthropic and scripted. Use run_batch for {name}.",
            provider=name,
        )

    async def aclose(self) -> None:  # noqa: B027 - optional hook, most providers hold nothing
        """Release network clients; the provider may be used again afterwards."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r} model={self.default_model!r}>"


_warned_unsent: set[str] = set()
_warned_lock = threading.Lock()


def warn_if_temperature_unsent(provider: Provider, settings: Any) -> None:
    """Warn once per process and provider when the user set ``TEMPERATURE`` and ``provider`` never sends it."""
    reason = provider.temperature_unsent
    if reason is None or "TEMPERATURE" not in settings.model_fields_set:
        return
    with _warned_lock:
        if provider.name in _warned_unsent:
            return
        _warned_unsent.add(provider.name)
    from aiforge.core.costs import _caller_stacklevel

    warnings.warn(
        f"TEMPERATURE={settings.TEMPERATURE} is not sent to the {provider.name} provider: {reason}.",
        UserWarning,
        stacklevel=_caller_stacklevel(),
    )
