"""The OpenAI Chat Completions wire format, shared by the ``openai`` and ``internal_gateway`` providers.

Neutral messages and tools go out as Chat Completions JSON; responses and stream chunks come back
as ``Completion``; SDK exceptions become ``aiforge.core.types`` errors in ``map_openai_error``.
``openai`` is imported on first use, so the helpers here that other providers reuse
(``ClientPerLoop``, ``redact``) cost nothing when OpenAI is never called.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import aclosing, suppress
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NoReturn, Protocol, TypeVar

from aiforge.core.retry import RetryPolicy, call_with_retries, iterate_with_retries, parse_retry_after
from aiforge.core.types import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    CallParams,
    Completion,
    Message,
    NotFoundError,
    PermissionDeniedError,
    ProviderError,
    RateLimitError,
    ToolSpec,
    Usage,
    new_tool_call,
)
from aiforge.providers.base import Provider, StreamEvent

if TYPE_CHECKING:
    import openai

    from aiforge.core.settings import AIForgeSettings


class _SDKClient(Protocol):
    async def close(self) -> None: ...


C = TypeVar("C", bound=_SDKClient)

# ---------------------------------------------------------------------------
# Shared provider plumbing
# ---------------------------------------------------------------------------


class ClientPerLoop(Generic[C]):
    """One SDK client per running event loop, created on first use and reused for every call.

    An SDK client owns a connection pool bound to the loop that opened it: sharing it across
    loops (two ``asyncio.run`` calls, a Jupyter kernel loop and aiforge's background loop)
    fails with "Event loop is closed" or hangs. Clients of closed loops are dropped.
    """

    def __init__(self, factory: Callable[[], C]) -> None:
        self._factory = factory
        self._clients: dict[asyncio.AbstractEventLoop, C] = {}
        self._lock = threading.Lock()  # loops may live on different threads

    def get(self) -> C:
        """The client of the running loop."""
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._clients.get(loop)
            if client is None:
                self._drop_closed_loops()
                client = self._clients[loop] = self._factory()
            return client

    async def aclose(self) -> None:
        """Close the running loop's client; the next ``get`` makes a new one."""
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._clients.pop(loop, None)
            self._drop_closed_loops()
        if client is not None:
            await client.close()

    def _drop_closed_loops(self) -> None:
        for loop in [loop for loop in self._clients if loop.is_closed()]:
            del self._clients[loop]


REDACTED = "[REDACTED]"


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of a configured key replaced by ``[REDACTED]``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return text


def redact_body(body: Any, secrets: Iterable[str]) -> Any:
    """A copy of a decoded JSON error body with keys redacted from every string."""
    secrets = tuple(secrets)
    if isinstance(body, str):
        return redact(body, secrets)
    if isinstance(body, dict):
        return {k: redact_body(v, secrets) for k, v in body.items()}
    if isinstance(body, list):
        return [redact_body(v, secrets) for v in body]
    return body


def leaks_secret(exc: BaseException, secrets: Iterable[str]) -> bool:
    """True when the SDK exception's text or body contains a key (then it must not be chained)."""
    text = f"{exc} {getattr(exc, 'body', '')!r}"
    return any(secret and secret in text for secret in secrets)


def request_url(exc: BaseException) -> str:
    """The URL of the request an SDK or httpx2 exception is about ("" when it has none)."""
    try:
        return str(exc.request.url)  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):  # httpx2 raises RuntimeError when no request was attached
        return ""


def key_fingerprint(key: str | None) -> str:
    """A stable digest of a key, so a registry key tells keys apart without holding one."""
    return hashlib.sha256(key.encode()).hexdigest()[:16] if key else ""


def redactable(*keys: str | None) -> tuple[str, ...]:
    """The keys worth redacting: short placeholders would mangle ordinary words."""
    return tuple(k for k in keys if k and len(k) >= 8)


# ---------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------


def to_openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Neutral messages as Chat Completions ``messages``."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        if role == "tool":
            out.append({"role": "tool", "tool_call_id": message.get("tool_call_id", ""), "content": message["content"]})
            continue
        item: dict[str, Any] = {"role": role, "content": message["content"]}
        if role == "user" and message.get("name"):
            item["name"] = message["name"]
        calls = message.get("tool_calls") or []
        if role == "assistant" and calls:
            item["content"] = message["content"] or None  # the API's own shape for "calls only"
            item["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
                }
                for call in calls
            ]
        out.append(item)
    return out


def to_openai_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """ToolSpecs as Chat Completions ``tools``."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool["name"],
                "description": tool.get("description", ""),
                "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
            },
        }
        for tool in tools
    ]


# ---------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------


# Responses are read as decoded JSON, not as the SDK's models: building those costs 0.15 ms a
# response and about as much per stream chunk, and aiforge reads only a few fields.


def usage_from_openai(usage: Mapping[str, Any] | None) -> Usage:
    """``Usage`` from a Chat Completions ``usage`` object (``prompt_tokens`` already includes cached)."""
    if not usage:
        return Usage()
    details = usage.get("prompt_tokens_details") or {}
    return Usage(
        input_tokens=usage.get("prompt_tokens") or 0,
        output_tokens=usage.get("completion_tokens") or 0,
        cached_input_tokens=details.get("cached_tokens") or 0,
    )


def completion_from_openai(response: Mapping[str, Any]) -> Completion:
    """A non-streaming Chat Completions response (its JSON) as a ``Completion``."""
    completion = Completion(model=response.get("model") or "", usage=usage_from_openai(response.get("usage")))
    choices = response.get("choices")
    if not choices:
        return completion
    choice = choices[0]
    message = choice.get("message") or {}
    # A refusal arrives instead of content; dropping it would look like an empty answer.
    completion.text = message.get("content") or message.get("refusal") or ""
    completion.finish_reason = choice.get("finish_reason")
    for call in message.get("tool_calls") or []:
        function = call.get("function")
        if function is not None:
            tool_call = new_tool_call(function.get("name"), function.get("arguments"), call.get("id"))
            completion.tool_calls.append(tool_call)
    return completion


class _PartialCall:
    __slots__ = ("id", "name", "arguments")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name = ""
        self.arguments: list[str] = []


class OpenAIStreamState:
    """Accumulates a Chat Completions stream: text deltas, tool-call fragments, usage.

    Fragments of parallel tool calls are keyed by their ``index`` and may interleave.
    """

    def __init__(self) -> None:
        self.text_parts: list[str] = []
        self.calls: dict[Any, _PartialCall] = {}
        self.usage: Usage | None = None
        self.model = ""
        self.finish_reason: str | None = None

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    def feed(self, chunk: Mapping[str, Any]) -> str:
        """Take one chunk (its JSON); return its text delta ("" when it has none)."""
        self.model = self.model or chunk.get("model") or ""
        if chunk.get("usage") is not None:
            self.usage = usage_from_openai(chunk["usage"])
        delta_text = ""
        for choice in (chunk.get("choices") or ())[:1]:
            delta = choice.get("delta") or {}
            delta_text = delta.get("content") or delta.get("refusal") or ""
            if delta_text:
                self.text_parts.append(delta_text)
            for fragment in delta.get("tool_calls") or []:
                self._feed_call(fragment)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return delta_text

    def _feed_call(self, fragment: Mapping[str, Any]) -> None:
        key = fragment.get("index")
        if key is None:  # non-conforming gateways: an id starts a call, later fragments continue it
            key = f"#{len(self.calls)}" if fragment.get("id") or not self.calls else next(reversed(self.calls))
        call = self.calls.setdefault(key, _PartialCall())
        if fragment.get("id"):
            call.id = fragment["id"]
        function = fragment.get("function")
        if function is not None:
            if function.get("name"):
                call.name = function["name"]
            if function.get("arguments"):
                call.arguments.append(function["arguments"])

    def completion(self) -> Completion:
        """The final ``Completion`` of everything fed so far."""
        return Completion(
            text=self.text,
            tool_calls=[new_tool_call(c.name, "".join(c.arguments), c.id) for c in self.calls.values()],
            usage=self.usage or Usage(),
            model=self.model,
            finish_reason=self.finish_reason,
        )


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------

TIMEOUT_MESSAGE = "the request timed out; raise TIMEOUT (env AIFORGE_TIMEOUT or aiforge.yaml) if answers are long"


def map_openai_error(
    exc: BaseException, provider_name: str, *, secrets: Iterable[str] = (), key_setting: str | None = None
) -> ProviderError:
    """The aiforge error for an ``openai`` SDK exception; never contains a key from ``secrets``.

    ``key_setting`` names the setting to fix in the message of a 401.
    """
    import openai

    secrets = tuple(secrets)
    common: dict[str, Any] = {"provider": provider_name}
    if isinstance(exc, openai.APITimeoutError):
        return APITimeoutError(TIMEOUT_MESSAGE, **common)
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        detail = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
        return APIConnectionError(redact(f"connection to {request_url(exc)} failed{detail}", secrets), **common)
    if not isinstance(exc, openai.APIError):
        return ProviderError(redact(str(exc) or type(exc).__name__, secrets), **common)

    body = redact_body(exc.body, secrets)
    server_message = body.get("message") if isinstance(body, dict) else None
    message = redact(server_message if isinstance(server_message, str) and server_message else exc.message, secrets)
    status: int | None = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    request_id = response.headers.get("x-request-id") if response is not None else None
    common.update(status_code=status, request_id=request_id, body=body)
    if status == 429:
        retry_after = parse_retry_after(response.headers) if response is not None else None
        return RateLimitError(message, retry_after=retry_after, **common)
    if status == 401:
        hint = f"; check {key_setting} (environment or aiforge.yaml)" if key_setting else ""
        return AuthenticationError(message + hint, **common)
    error_class = {
        403: PermissionDeniedError,
        404: NotFoundError,
        400: BadRequestError,
        422: BadRequestError,
    }.get(status or 0, ProviderError)
    return error_class(message, **common)


# ---------------------------------------------------------------------------
# The provider
# ---------------------------------------------------------------------------


class OpenAICompatibleProvider(Provider):
    """A provider speaking Chat Completions through ``openai.AsyncOpenAI``.

    Subclasses say where to connect (``_base_url_of``, ``_api_key_of``, ``_default_model_of``).
    """

    supports_native_tools: ClassVar[bool] = True
    supports_streaming: ClassVar[bool] = True
    #: The setting a 401 tells the user to fix.
    key_setting: ClassVar[str | None] = None
    #: OpenAI's reasoning models reject ``max_tokens``; many gateways only know it.
    max_tokens_field: ClassVar[str] = "max_completion_tokens"

    def __init__(self, settings: AIForgeSettings) -> None:
        self.base_url = self._base_url_of(settings)
        self._api_key = self._api_key_of(settings)
        self.default_model = self._default_model_of(settings)
        self.timeout = settings.TIMEOUT
        self.retry_policy = RetryPolicy.from_settings(settings)
        self._secrets = redactable(self._api_key, *settings.secrets())
        self._clients: ClientPerLoop[openai.AsyncOpenAI] = ClientPerLoop(self._new_client)

    @classmethod
    def _base_url_of(cls, settings: AIForgeSettings) -> str:
        raise NotImplementedError

    @classmethod
    def _api_key_of(cls, settings: AIForgeSettings) -> str:
        raise NotImplementedError

    @classmethod
    def _default_model_of(cls, settings: AIForgeSettings) -> str:
        return cls.default_model

    def _new_client(self) -> openai.AsyncOpenAI:
        import openai

        return openai.AsyncOpenAI(api_key=self._api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout)

    def fixed_temperature(self, model: str) -> bool:
        """True for models that reject any temperature but the default (only OpenAI's reasoning models)."""
        return False

    def client(self) -> openai.AsyncOpenAI:
        """The SDK client of the running event loop (one per loop, reused)."""
        return self._clients.get()

    async def aclose(self) -> None:
        await self._clients.aclose()

    def _request(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": params.model or self.default_model,
            "messages": to_openai_messages(messages),
        }
        if tools:
            request["tools"] = to_openai_tools(tools)
        if params.temperature is not None and not self.fixed_temperature(request["model"]):
            request["temperature"] = params.temperature
        if params.max_tokens is not None:
            request[self.max_tokens_field] = params.max_tokens
        return request

    async def _post(self, request: dict[str, Any]) -> Any:
        """The decoded JSON answer to ``request``, or for a stream an ``AsyncStream`` of decoded chunks.

        The request is already in wire shape, so it is posted as is: ``chat.completions.create``
        would walk it against the SDK's TypedDicts first (``async_maybe_transform``, an identity
        on what aiforge sends), which costs 0.4 ms with 2 messages and over 3 ms with 22.
        Auth headers, timeout, SSE framing and errors are the client's, exactly as ``create`` uses them.
        """
        from openai import AsyncStream

        return await self.client().post(
            "/chat/completions",
            body=request,
            cast_to=object,  # the decoded JSON, read as is (see "Responses" above)
            options={"security": {"bearer_auth": True}},  # what ``create`` sends: the key as a bearer token
            stream=bool(request.get("stream")),
            stream_cls=AsyncStream[object],
        )

    def _json_object(self, body: Any) -> Mapping[str, Any]:
        """A response body as a JSON object; the SDK hands over the text of one not labelled as JSON."""
        if isinstance(body, str):
            with suppress(ValueError):
                body = json.loads(body)
        if not isinstance(body, Mapping):
            text = redact(str(body)[:200], self._secrets)
            raise ProviderError(f"the server's answer is not a Chat Completions object: {text!r}", provider=self.name)
        return body

    def _fail(self, exc: BaseException, partial_text: str = "") -> NoReturn:
        error = map_openai_error(exc, self.name, secrets=self._secrets, key_setting=self.key_setting)
        error.partial_text = partial_text
        # A chained SDK exception would print its own text, key included, in the traceback.
        raise error from (None if leaks_secret(exc, self._secrets) else exc)

    async def complete(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> Completion:
        import openai

        request = self._request(messages, tools, params)

        async def attempt() -> Completion:
            try:
                response = await self._post(request)
            except openai.OpenAIError as exc:
                self._fail(exc)
            return completion_from_openai(self._json_object(response))

        return await call_with_retries(attempt, policy=self.retry_policy)

    async def stream(
        self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams
    ) -> AsyncIterator[StreamEvent]:
        request = self._request(messages, tools, params)
        request.update(stream=True, stream_options={"include_usage": True})
        events = iterate_with_retries(lambda: self._stream_once(request), policy=self.retry_policy)
        async with aclosing(events):  # a consumer that stops early must still release the connection
            async for event in events:
                yield event

    async def _stream_once(self, request: dict[str, Any]) -> AsyncIterator[StreamEvent]:
        import openai

        try:
            stream = await self._post(request)
        except openai.OpenAIError as exc:
            self._fail(exc)
        state = OpenAIStreamState()
        try:
            async for chunk in stream:
                delta = state.feed(self._json_object(chunk))
                if delta:
                    yield delta
        except openai.OpenAIError as exc:
            self._fail(exc, partial_text=state.text)
        finally:
            await stream.close()
        yield state.completion()
