"""``CassetteProvider``: a provider behind a record/replay cassette (``REPLAY``, ``REPLAY_FILE``).

The cassette file, its matching and its errors are ``store.cassettes``; this is the provider boundary: the
wrapper sits above the SDK, so it never sees a key or a header, and streamed chunks are kept in order.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, ClassVar

from aiforge.core.aio import closing_iterator
from aiforge.core.types import CallParams, Completion, ConfigError, Message, ToolSpec
from aiforge.providers.base import Provider, StreamEvent
from aiforge.store.cassettes import Cassette, cassette_at, completion_of, request_of

if TYPE_CHECKING:
    from aiforge.providers import BuiltinProviderClass
    from aiforge.providers.batch_api import BatchLimits, ProviderBatchAPI


class CassetteProvider(Provider):
    """``inner`` behind a cassette; ``inner`` is None when it could not be made (no key): replay only."""

    supports_streaming: ClassVar[bool] = True  # a recorded turn replays its chunks, a live one streams through

    def __init__(self, inner: Provider | None, cassette: Cassette, mode: str, *, keyed: bool, name: str, model: str,
                 native_tools: bool, endpoint: str | None, like: Provider | BuiltinProviderClass | None = None) -> None:
        self.inner, self.cassette, self.mode = inner, cassette, mode
        self.keyed = keyed
        """A key is configured: ``"auto"`` then calls the provider (and records) rather than replaying."""
        self._registry_name = name
        self.default_model = model
        self.supports_native_tools = native_tools
        self.free = bool(inner and inner.free)
        if like is not None:  # the files its wire reads (the cassette records them as the provider sends them)
            self.reads_files, self.file_rules = like.reads_files, like.file_rules
        self.base_url = endpoint

    @property
    def registry_name(self) -> str:
        """The wrapped provider's name (or, replaying only, the one the settings name)."""
        return self._registry_name

    def batch_api(self, limits: BatchLimits | None = None) -> ProviderBatchAPI[Any]:
        """The wrapped provider's Batch API (jobs are not recorded); none when replaying only."""
        return super().batch_api(limits) if self.inner is None else self.inner.batch_api(limits)

    def __getattr__(self, name: str) -> Any:
        # Everything else (batch APIs, pacing) is the wrapped provider's.
        if name == "inner" or self.__dict__.get("inner") is None:
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _live(self) -> Provider:
        """The wrapped provider, for a call the cassette does not answer."""
        # _recorded answers every call, or raises the mismatch, when there is none (``_wrap`` makes none to record).
        assert self.inner is not None
        return self.inner

    def _recorded(self, request: dict[str, Any]) -> dict[str, Any] | None:
        if self.mode == "record" or (self.mode == "auto" and self.keyed and self.inner is not None):
            return None
        entry = self.cassette.find(request)
        if entry is None and (self.mode == "replay" or self.inner is None):
            raise self.cassette.mismatch(request)
        return entry

    def _request(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> dict[str, Any]:
        return request_of(self.registry_name, messages, tools, params)

    async def complete(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> Completion:
        request = self._request(messages, tools, params)
        entry = self._recorded(request)
        if entry is not None:
            return completion_of(entry["completion"])
        completion = await self._live().complete(messages, tools, params)
        self.cassette.append(request, None, completion, rewrite=self.mode == "record")
        return completion

    async def stream(
        self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams
    ) -> AsyncIterator[StreamEvent]:
        request = self._request(messages, tools, params)
        entry = self._recorded(request)
        if entry is not None:
            completion = completion_of(entry["completion"])
            recorded = entry["chunks"] if entry["chunks"] is not None else [completion.text]
            for chunk in filter(None, recorded):
                yield chunk
            yield completion
            return
        chunks: list[str] = []
        # Closed here, not by the garbage collector, when the consumer stops at the Completion.
        async with closing_iterator(self._live().stream(messages, tools, params)) as events:
            async for event in events:
                if isinstance(event, Completion):
                    self.cassette.append(request, chunks, event, rewrite=self.mode == "record")
                else:
                    chunks.append(event)
                yield event

    async def aclose(self) -> None:
        if self.inner is not None:
            await self.inner.aclose()

    def __repr__(self) -> str:
        return f"<CassetteProvider {self.mode} {self.cassette.path} of {self.inner!r}>"


def cassette_provider(provider: Any, overrides: dict[str, Any]) -> Any:
    """``provider`` behind the cassette the ``REPLAY`` settings name; ``provider`` itself when REPLAY is off.

    Settings are read here only when REPLAY may be set (a keyword, the environment or a config file), so an
    agent without it pays nothing.
    """
    from aiforge.core.config_file import config_path
    from aiforge.core.settings import check_overrides, load_settings

    overrides = check_overrides(overrides)
    if "REPLAY" not in overrides and "AIFORGE_REPLAY" not in os.environ and config_path() is None:
        return provider
    named = {"PROVIDER": provider} if isinstance(provider, str) else {}
    settings = load_settings(**named, **overrides)
    if settings.REPLAY is None:
        return provider
    if not settings.REPLAY_FILE:
        raise ConfigError(f"REPLAY={settings.REPLAY!r} needs REPLAY_FILE, the cassette (e.g. cassettes/01.jsonl).")
    return _wrap(provider, settings, cassette_at(settings.REPLAY_FILE))


def _wrap(provider: Any, settings: Any, cassette: Cassette) -> CassetteProvider:
    from aiforge.providers import builtin_class, create_provider, resolve_provider_name

    inner: Provider | None
    if isinstance(provider, Provider):
        inner, name = provider, provider.registry_name
    else:
        name = resolve_provider_name(settings)
        try:
            inner = create_provider(settings, name)
        except ConfigError:
            if settings.REPLAY == "record":
                raise
            inner = None  # no key: replay only
    if inner is not None:
        return CassetteProvider(
            inner, cassette, settings.REPLAY, keyed=bool(settings.secrets()), name=name, model=inner.default_model,
            native_tools=inner.supports_native_tools, endpoint=inner.base_url, like=inner,
        )
    cls = builtin_class(name)
    return CassetteProvider(
        None, cassette, settings.REPLAY, keyed=False, name=name, model=cls.configured_model(settings),
        native_tools=cls.supports_native_tools, endpoint=cls.configured_base_url(settings), like=cls,
    )
