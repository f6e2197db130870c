"""A plain function as a provider: ``fn(messages, **params) -> str``, sync or async.

Functions have no native tool calling: an agent wraps this provider in
``providers.prompted.PromptedTools`` (the prompted-JSON protocol), so it only ever sends it
plain role/content messages; ``ChatAgent`` wraps it also without tools, and a structured answer
(``params.output``) is asked for by the wrapper's instructions, so the function needs no part in it.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any, ClassVar

from aiforge.core.types import CallParams, Completion, Message, ProviderError, ToolSpec
from aiforge.providers.base import Provider, StructuredOutputMode


class FunctionProvider(Provider):
    """Calls ``fn(messages, model=..., temperature=..., max_tokens=...)`` and wraps its text."""

    supports_native_tools = False
    supports_streaming: ClassVar[bool] = False
    structured_output: ClassVar[StructuredOutputMode] = "prompted"

    def __init__(self, fn: Callable[..., Any], *, name: str = "function") -> None:
        self.fn = fn
        self.provider_name = name
        self.default_model = name
        self._is_async = inspect.iscoroutinefunction(fn)

    @property
    def registry_name(self) -> str:
        """The name the function was registered under."""
        return self.provider_name

    async def complete(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> Completion:
        plain = [{"role": m["role"], "content": m["content"]} for m in messages]
        kwargs = {"model": params.model, "temperature": params.temperature, "max_tokens": params.max_tokens}
        try:
            if self._is_async:
                text = await self.fn(plain, **kwargs)
            else:
                # A user function may block on I/O: keep the event loop free.
                text = await asyncio.to_thread(self.fn, plain, **kwargs)
        except Exception as exc:  # noqa: BLE001 - any failure of user code is a provider error
            raise ProviderError(
                f"custom provider {self.provider_name!r} raised {type(exc).__name__}: {exc}",
                provider=self.provider_name,
            ) from exc
        if not isinstance(text, str):
            raise ProviderError(
                f"custom provider {self.provider_name!r} must return str, got {type(text).__name__}",
                provider=self.provider_name,
            )
        return Completion(text=text, model=params.model or self.default_model, finish_reason="stop")

    def __repr__(self) -> str:
        return f"<FunctionProvider {self.provider_name!r} fn={getattr(self.fn, '__qualname__', self.fn)!r}>"
