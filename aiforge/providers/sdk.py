"""What every SDK-backed provider shares: endpoints as data, one client per loop, the attempt loop
and the partial text of a broken stream (errors are mapped by ``sdk_errors``).

A vendor module subclasses ``SDKProvider`` and keeps only its wire translation (requests out,
responses and stream events in) and how to read its SDK's exceptions. Nothing here imports an SDK.
"""

from __future__ import annotations

import hashlib
from abc import abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NoReturn, Protocol, TypeVar

from aiforge.core.file_rules import marker_tokens
from aiforge.core.retry import RetryPolicy, call_with_retries, iterate_with_retries
from aiforge.core.settings import where_to_set
from aiforge.core.types import CallParams, Completion, ConfigError, Message, ProviderError, ToolSpec
from aiforge.providers.base import Provider, StreamEvent
from aiforge.providers.pacing import pacer_for
from aiforge.providers.sdk_clients import C, ClientPerLoop
from aiforge.providers.sdk_errors import HTTPFailure, SDKErrors, leaks_secret, map_sdk_error, redactable

if TYPE_CHECKING:
    from aiforge.core.settings import AIForgeSettings

INCOMPLETE_STREAM = "the stream ended before the reply was complete (no finish reason): the server or a proxy cut it"
"""The ``ProviderError`` of a stream that ended without saying why; its ``partial_text`` is what had arrived."""

PLACEHOLDER_KEY = "not-needed"
"""Sent when an endpoint's key is optional and unset: SDKs insist on a key, vLLM and Ollama ignore it."""


# ---------------------------------------------------------------------------
# Endpoints and clients
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a provider connects, as the names of the settings that say so."""

    provider: str
    """The provider's registry name, for error messages."""
    url_setting: str
    key_setting: str
    """Also the setting a 401 tells the user to fix."""
    default_model: str
    default_url: str | None = None
    """None: the user must set ``url_setting``."""
    needs_key: bool = True
    """False: ``PLACEHOLDER_KEY`` is sent when ``key_setting`` is unset."""
    model_setting: str | None = None
    """A setting that overrides ``default_model``."""

    def base_url(self, settings: AIForgeSettings) -> str:
        url = getattr(settings, self.url_setting) or self.default_url
        if not url:
            raise ConfigError(
                f"the {self.provider} provider needs the gateway's URL (e.g. http://localhost:8000/v1): set "
                f"{where_to_set(self.url_setting)}."
            )
        return url

    def api_key(self, settings: AIForgeSettings) -> str:
        key = settings.secret(self.key_setting)
        if key:
            return key
        if not self.needs_key:
            return PLACEHOLDER_KEY
        raise ConfigError(f"the {self.provider} provider needs an API key: set {where_to_set(self.key_setting)}.")

    def model(self, settings: AIForgeSettings) -> str:
        return (getattr(settings, self.model_setting) if self.model_setting else None) or self.default_model

    def connection_key(self, settings: AIForgeSettings) -> tuple[Any, ...]:
        """What makes two providers of this endpoint different, with the key as a digest."""
        return (
            self.base_url(settings),
            key_fingerprint(settings.secret(self.key_setting)),
            self.model(settings),
            settings.TIMEOUT,
            settings.MAX_RETRIES,
            settings.RETRY_MAX_WAIT,
            settings.RPM,
            settings.TPM,
        )


def key_fingerprint(key: str | None) -> str:
    """A stable digest of a key, so a registry key tells keys apart without holding one."""
    return hashlib.sha256(key.encode()).hexdigest()[:16] if key else ""


# ---------------------------------------------------------------------------
# The provider
# ---------------------------------------------------------------------------


class StreamState(Protocol):
    """Accumulates one vendor's stream events into text deltas and a final ``Completion``."""

    @property
    def text(self) -> str: ...

    def feed(self, event: Any) -> str: ...

    def completion(self) -> Completion: ...


class SDKProvider(Provider, Generic[C]):
    """A provider over a vendor SDK: attempts with retries, streams with partial text, mapped errors.

    Subclasses set ``endpoint`` and implement the wire hooks below; every SDK exception reaches
    the caller as an ``aiforge.core.types`` error that never contains a key.
    """

    supports_native_tools = True
    supports_streaming: ClassVar[bool] = True
    endpoint: ClassVar[Endpoint]
    base_url: str

    def __init__(self, settings: AIForgeSettings) -> None:
        self.base_url = self.endpoint.base_url(settings)
        self._api_key = self.endpoint.api_key(settings)
        self.default_model = self.endpoint.model(settings)
        self.timeout = settings.TIMEOUT
        self.retry_policy = RetryPolicy.from_settings(settings)
        self._secrets = redactable(self._api_key, *settings.secrets())
        self._clients: ClientPerLoop[C] = ClientPerLoop(self._new_paced_client)
        self._pacer = pacer_for(self.name, self.base_url, key_fingerprint(self._api_key))
        self._pacer.configure(settings.RPM, settings.TPM)

    @classmethod
    def connection_key(cls, settings: Any) -> tuple[Any, ...]:
        return cls.endpoint.connection_key(settings)

    @classmethod
    def configured_model(cls, settings: Any) -> str:
        return cls.endpoint.model(settings)

    @classmethod
    def configured_base_url(cls, settings: Any) -> str | None:
        return cls.endpoint.base_url(settings)

    def client(self) -> C:
        """The SDK client of the running event loop (one per loop, reused)."""
        return self._clients.get()

    async def aclose(self) -> None:
        await self._clients.aclose()

    def _new_paced_client(self) -> C:
        """A new client whose every HTTP answer (429s and stream openings too) reaches the pacer.

        An httpx response hook sees the status and headers before the SDK reads the body, on the
        plain path as cheaply as a few header lookups; ``with_raw_response`` would wrap each call.
        """
        client = self._new_client()
        hooks = getattr(getattr(client, "_client", None), "event_hooks", None)
        if hooks is not None:
            pacer = self._pacer

            async def observe(response: Any) -> None:
                pacer.observe(response.status_code, response.headers)

            hooks["response"].append(observe)
        return client

    # --- what a vendor module implements ------------------------------------------------------

    @abstractmethod
    def _new_client(self) -> C:
        """A new SDK client for the running loop, with ``max_retries=0`` (retries are the policy's)."""

    @abstractmethod
    def _sdk_errors(self) -> SDKErrors:
        """The SDK's exception classes by meaning."""

    @abstractmethod
    def _http_failure(self, exc: Any) -> HTTPFailure:
        """Status, message, body, headers and request id of an SDK exception of class ``http``."""

    @abstractmethod
    def _request(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> dict[str, Any]:
        """The request in wire shape."""

    def _stream_request(
        self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams
    ) -> dict[str, Any]:
        return {**self._request(messages, tools, params), "stream": True}

    @abstractmethod
    async def _call(self, request: dict[str, Any], params: CallParams) -> Completion:
        """One non-streaming attempt (``params``: what ``request`` was built from)."""

    @abstractmethod
    async def _open_stream(self, request: dict[str, Any]) -> Any:
        """The SDK's stream for ``request``: async-iterable events and an async ``close()``."""

    @abstractmethod
    def _stream_state(self, params: CallParams) -> StreamState:
        """A fresh accumulator for the events of one stream of a request built from ``params``."""

    # --- the shared skeleton ------------------------------------------------------------------

    async def complete(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> Completion:
        request = self._request(messages, tools, params)
        caught = self._sdk_errors().caught

        pacer = self._pacer

        async def attempt() -> Completion:
            reserved = await pacer.acquire(messages, params.max_tokens, self._marker_tokens(params.model))
            try:
                completion = await self._call(request, params)
            except caught as exc:
                self._fail(exc)
            pacer.settle(reserved, completion.usage.input_tokens + completion.usage.output_tokens)
            return completion

        return await call_with_retries(attempt, policy=self.retry_policy)

    async def stream(
        self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams
    ) -> AsyncGenerator[StreamEvent, None]:
        request = self._stream_request(messages, tools, params)
        events = iterate_with_retries(lambda: self._stream_once(messages, request, params), policy=self.retry_policy)
        async with aclosing(events):  # a consumer that stops early must still release the connection
            async for event in events:
                yield event

    async def _stream_once(
        self, messages: list[Message], request: dict[str, Any], params: CallParams
    ) -> AsyncIterator[StreamEvent]:
        caught = self._sdk_errors().caught
        reserved = await self._pacer.acquire(messages, params.max_tokens, self._marker_tokens(params.model))
        try:
            stream = await self._open_stream(request)
        except caught as exc:
            self._fail(exc)
        state = self._stream_state(params)
        try:
            async for event in stream:
                delta = state.feed(event)
                if delta:
                    yield delta
        except caught as exc:
            self._fail(exc, partial_text=state.text)
        finally:
            await stream.close()
        completion = state.completion()
        if completion.finish_reason is None:
            # A broken upstream (a proxy, a crashed worker) can end a stream cleanly but early: OpenAI's
            # [DONE] or the end of the body before any finish_reason, Anthropic's without message_delta.
            # What arrived is not the reply, and must not become one (history, cache).
            raise ProviderError(INCOMPLETE_STREAM, provider=self.name, partial_text=state.text)
        self._pacer.settle(reserved, completion.usage.input_tokens + completion.usage.output_tokens)
        yield completion

    def _marker_tokens(self, model: str) -> Callable[[str], int] | None:
        """A file marker's tokens by this provider's rules on ``model``, for the pacer; None: it sends no files."""
        rules, detail = self.file_rules, getattr(self, "image_detail", "auto")
        if rules is None:
            return None
        return lambda digest: marker_tokens(digest, rules, model, detail)

    def _fail(self, exc: BaseException, partial_text: str = "") -> NoReturn:
        error = map_sdk_error(
            exc,
            self._sdk_errors(),
            self._http_failure,
            provider=self.name,
            secrets=self._secrets,
            key_setting=self.endpoint.key_setting,
        )
        error.partial_text = partial_text
        # A chained SDK exception would print its own text, key included, in the traceback.
        raise error from (None if leaks_secret(exc, self._secrets) else exc)


T = TypeVar("T")


async def sdk_call(provider: SDKProvider[Any], call: Callable[[Any], Awaitable[T]]) -> T:
    """``call(client)`` with the provider's retry policy, its SDK errors mapped as for a live call (Batch APIs)."""
    caught = provider._sdk_errors().caught

    async def attempt() -> T:
        try:
            return await call(provider.client())
        except caught as exc:
            provider._fail(exc)

    return await call_with_retries(attempt, policy=provider.retry_policy)
