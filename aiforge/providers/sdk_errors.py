"""SDK exceptions as ``aiforge.core.types`` errors: one status table, and no key in any of them.

A vendor says which of its SDK's exception classes mean what (``SDKErrors``) and reads status,
message, body, headers and request id out of an HTTP error (``HTTPFailure``); everything else is here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from aiforge.core.logs import redact
from aiforge.core.retry import parse_retry_after
from aiforge.core.settings import where_to_set
from aiforge.core.types import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ContextWindowExceededError,
    NotFoundError,
    PermissionDeniedError,
    ProviderError,
    RateLimitError,
)

TIMEOUT_MESSAGE = "the request timed out; raise TIMEOUT (env AIFORGE_TIMEOUT or aiforge.yaml) if answers are long"


def redactable(*keys: str | None) -> tuple[str, ...]:
    """The keys worth redacting: short placeholders would mangle ordinary words."""
    return tuple(k for k in keys if k and len(k) >= 8)


def redact_body(body: Any, secrets: Iterable[str]) -> Any:
    """A copy of a decoded JSON error body with keys redacted from every string."""
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
    """The URL of the request an SDK or transport exception is about ("" when it has none)."""
    try:
        request = getattr(exc, "request", None)  # openai/anthropic APIError, httpx.RequestError
        return "" if request is None else str(request.url)
    except (AttributeError, RuntimeError):  # httpx2 raises RuntimeError when no request was attached
        return ""


_STATUS_ERRORS: dict[int, type[ProviderError]] = {
    400: BadRequestError,
    403: PermissionDeniedError,
    404: NotFoundError,
    422: BadRequestError,
}


# How servers word a request longer than their context, and where they put the numbers (window, prompt tokens).
_CONTEXT_TYPES = frozenset({"exceed_context_size_error"})
"""Error ``type``s of a context-length refusal: llama.cpp's server."""
_CONTEXT_CODES = frozenset({"context_length_exceeded"})
"""Error ``code``s of one: OpenAI's (Chat Completions and Responses), and the gateways that copy it."""
_CONTEXT_MESSAGES = (
    # llama.cpp: "request (7101 tokens) exceeds the available context size (1024 tokens), try increasing it"
    re.compile(r"request \((?P<tokens>\d+) tokens\) exceeds the available context size \((?P<window>\d+) tokens\)"),
    # Anthropic: "prompt is too long: 210000 tokens > 200000 maximum"
    re.compile(r"prompt is too long: (?P<tokens>\d+) tokens > (?P<window>\d+) maximum"),
    # OpenAI, vLLM: "This model's maximum context length is 128000 tokens. However, your messages resulted in
    # 130000 tokens" (vLLM: "However, you requested 5000 tokens")
    re.compile(
        r"maximum context length is (?P<window>\d+) tokens(?:.*?(?:resulted in|requested) (?P<tokens>\d+) tokens)?",
        re.S,
    ),
)


def _error_fields(body: Any) -> list[Mapping[str, Any]]:
    """The error object(s) of a decoded body: the body itself and an ``error`` inside it (Anthropic nests it)."""
    if not isinstance(body, Mapping):
        return []
    inner = body.get("error")
    return [body, *([inner] if isinstance(inner, Mapping) else [])]


def context_refusal(message: str, body: Any) -> tuple[int | None, int | None] | None:
    """``(context window, prompt tokens)`` when an error answer refuses a request as longer than the server's context
    (each None when the server did not say); None when the error is about something else."""
    fields = _error_fields(body)
    window = next((f.get("n_ctx") for f in fields if isinstance(f.get("n_ctx"), int)), None)  # llama.cpp says it
    tokens = next((f.get("n_prompt_tokens") for f in fields if isinstance(f.get("n_prompt_tokens"), int)), None)
    texts = [message, *(str(f.get("message")) for f in fields if f.get("message"))]
    matched = False
    for pattern in _CONTEXT_MESSAGES:
        for text in texts:
            if (found := pattern.search(text)) is not None:
                matched = True
                window = window if window is not None else int(found["window"])
                if tokens is None and found["tokens"] is not None:
                    tokens = int(found["tokens"])
    typed = any(f.get("type") in _CONTEXT_TYPES or f.get("code") in _CONTEXT_CODES for f in fields)
    return (window, tokens) if matched or typed else None


def context_advice(window: int | None) -> str:
    """What to do about a context-length refusal: a request must fit the server's context; ``agg``'s fit
    ``CONTEXT_WINDOW``, which is set to the server's number."""
    if window is None:
        return (
            "the request is longer than the server's context: shorten it (less history or text); agg packs its "
            "requests under CONTEXT_WINDOW: set it to the server's context size or lower"
        )
    return (
        f"the server's context holds {window} tokens and the request is longer: shorten it (less history or text); "
        f"agg packs its requests under CONTEXT_WINDOW: set CONTEXT_WINDOW={window} (or lower)"
    )


def error_for_status(
    status: int | None,
    message: str,
    *,
    provider: str,
    request_id: str | None = None,
    body: Any = None,
    headers: Mapping[str, str] | None = None,
    key_setting: str | None = None,
) -> ProviderError:
    """The aiforge error for an HTTP error answer; a 401 names ``key_setting``, a 429 reads Retry-After, a request
    longer than the server's context is a ``ContextWindowExceededError`` naming ``CONTEXT_WINDOW``."""
    common: dict[str, Any] = {"provider": provider, "status_code": status, "request_id": request_id, "body": body}
    if status == 429:
        return RateLimitError(message, retry_after=parse_retry_after(headers), **common)
    if status == 401:
        hint = f"; check {where_to_set(key_setting)}" if key_setting else ""
        return AuthenticationError(message + hint, **common)
    refusal = context_refusal(message, body)
    if refusal is not None:
        window, tokens = refusal
        return ContextWindowExceededError(
            f"{message}; {context_advice(window)}", context_window=window, prompt_tokens=tokens, **common
        )
    return _STATUS_ERRORS.get(status or 0, ProviderError)(message, **common)


class SDKErrors(NamedTuple):
    """The exception classes of one SDK, by what they mean."""

    base: type[BaseException]
    """The SDK's root exception."""
    timeout: tuple[type[BaseException], ...]
    connection: tuple[type[BaseException], ...]
    http: type[BaseException]
    """Exceptions that carry a server answer (read by ``SDKProvider._http_failure``)."""
    unwrapped: tuple[type[BaseException], ...] = ()
    """Transport errors the SDK lets through unwrapped (mid-stream); caught like its own."""

    @property
    def caught(self) -> tuple[type[BaseException], ...]:
        return (self.base, *self.unwrapped)


class HTTPFailure(NamedTuple):
    """What a vendor reads out of an SDK exception that carries a server answer."""

    status: int | None
    message: str
    body: Any = None
    headers: Mapping[str, str] | None = None
    request_id: str | None = None


def map_sdk_error(
    exc: BaseException,
    errors: SDKErrors,
    http_failure: Callable[[Any], HTTPFailure],
    *,
    provider: str,
    secrets: Iterable[str],
    key_setting: str | None,
) -> ProviderError:
    """The aiforge error for an SDK (or unwrapped transport) exception; never contains a key from ``secrets``."""
    secrets = tuple(secrets)
    if isinstance(exc, errors.timeout):
        return APITimeoutError(TIMEOUT_MESSAGE, provider=provider)
    if isinstance(exc, errors.connection):
        cause = exc.__cause__ if isinstance(exc, errors.base) else exc  # an unwrapped error is its own cause
        detail = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
        return APIConnectionError(
            redact(f"connection to {request_url(exc)} failed{detail}", secrets), provider=provider
        )
    if not isinstance(exc, errors.http):
        return ProviderError(redact(str(exc) or type(exc).__name__, secrets), provider=provider)
    failure = http_failure(exc)
    return error_for_status(
        failure.status,
        redact(failure.message, secrets),
        provider=provider,
        request_id=failure.request_id,
        body=redact_body(failure.body, secrets),
        headers=failure.headers,
        key_setting=key_setting,
    )
