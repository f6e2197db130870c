"""The one retry policy every provider uses: which errors to retry, how long to wait, when to give up.

Pure decisions plus ``asyncio.sleep``; no SDK, no network. Providers give their SDK clients
``max_retries=0`` and wrap each attempt with ``call_with_retries`` (or ``iterate_with_retries``
for streams), so retries never multiply. An attempt raises errors already mapped to
``aiforge.core.types``; the policy reads ``status_code``, ``retry_after`` and the error class.

A ``Retry-After`` hint is honoured exactly when it is at most ``RETRY_MAX_WAIT``; a longer hint
fails at once with ``RateLimitError``, because blocking a notebook cell for minutes is worse
than telling the user when to come back. Each retry is an event on the model call's span (``core.otel``).
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from aiforge.core.otel import note_retry
from aiforge.core.types import (
    APIConnectionError,
    APITimeoutError,
    ContextWindowExceededError,
    ProviderError,
    RateLimitError,
)
from aiforge.core.waits import retried

T = TypeVar("T")

INITIAL_BACKOFF = 0.5
"""Seconds: the upper bound of the first jittered wait."""
MAX_BACKOFF = 8.0
"""Seconds: the jittered wait never exceeds this, however many retries."""
RETRYABLE_STATUS = frozenset({408, 409, 429})
"""Besides every 5xx: request timeout, conflict (lock contention), rate limit."""

Sleep = Callable[[float], Awaitable[None]]


def parse_retry_after(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``Retry-After``; None if absent.

    ``Retry-After`` may be seconds (fractions accepted) or an HTTP-date; a date in the past
    means "now" (0). Unparseable or negative values are ignored.
    """
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000
        except ValueError:
            value = -1.0
        if 0 <= value < float("inf"):
            return value
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        try:
            date = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if date.tzinfo is None:  # HTTP-dates are GMT by definition
            return None
        current = time.time() if now is None else now
        return max(0.0, date.timestamp() - current)
    return seconds if 0 <= seconds < float("inf") else None


def is_retryable(error: BaseException) -> bool:
    """True for timeouts, connection errors, 408, 409, 429 and 5xx; False for everything else."""
    if isinstance(error, APITimeoutError | APIConnectionError | RateLimitError):
        return True
    if isinstance(error, ContextWindowExceededError):  # whatever its status: the same request is as long again
        return False
    if isinstance(error, ProviderError) and error.status_code is not None:
        return error.status_code in RETRYABLE_STATUS or 500 <= error.status_code <= 599
    return False


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many times to retry and how long to wait; build it with ``from_settings``."""

    max_retries: int = 2
    """Retries after the first attempt (``MAX_RETRIES``)."""
    max_wait: float = 30.0
    """Longest ``Retry-After`` honoured (``RETRY_MAX_WAIT``); a longer hint fails at once."""
    initial_backoff: float = INITIAL_BACKOFF
    max_backoff: float = MAX_BACKOFF

    @classmethod
    def from_settings(cls, settings: Any) -> RetryPolicy:
        """The policy of an ``AIForgeSettings`` (``MAX_RETRIES``, ``RETRY_MAX_WAIT``)."""
        return cls(max_retries=settings.MAX_RETRIES, max_wait=settings.RETRY_MAX_WAIT)

    @property
    def max_attempts(self) -> int:
        return self.max_retries + 1

    def backoff(self, retries_done: int, *, rng: Callable[[], float] = random.random) -> float:
        """A full-jitter wait before retry number ``retries_done + 1``: uniform in [0, cap].

        The cap doubles from ``initial_backoff`` up to ``max_backoff``. Full jitter spreads
        the retries of many concurrent batch calls instead of sending them in waves.
        """
        cap = min(self.max_backoff, self.initial_backoff * 2.0 ** min(retries_done, 32))
        return cap * rng()

    def delay_before_retry(
        self, error: BaseException, retries_done: int, *, rng: Callable[[], float] = random.random
    ) -> float | None:
        """Seconds to wait before retrying after ``error``, or None when it must propagate.

        Raises ``RateLimitError`` at once when the server asks for a wait longer than ``max_wait``.
        """
        if not is_retryable(error) or retries_done >= self.max_retries:
            return None
        hint: float | None = getattr(error, "retry_after", None)
        if hint is None:
            return self.backoff(retries_done, rng=rng)
        if hint > self.max_wait:
            raise _too_long(error, hint, self.max_wait) from error
        return hint


def _too_long(error: BaseException, hint: float, max_wait: float) -> RateLimitError:
    base = error.message if isinstance(error, ProviderError) else str(error)
    message = (
        f"{base} (the server asked to wait {hint:g}s, more than RETRY_MAX_WAIT={max_wait:g}s; "
        "retry later, or raise RETRY_MAX_WAIT via AIFORGE_RETRY_MAX_WAIT or aiforge.yaml to wait instead)"
    )
    if not isinstance(error, ProviderError):
        return RateLimitError(message, retry_after=hint)
    return RateLimitError(
        message,
        retry_after=hint,
        provider=error.provider,
        status_code=error.status_code,
        request_id=error.request_id,
        body=error.body,
        partial_text=error.partial_text,
    )


def _record_retry(error: ProviderError, delay: float, retries_done: int) -> None:
    """Note a retry after ``delay`` seconds in the turn's trace (``core.waits``) and on the model call's span."""
    retried(retries_done + 1, error, delay)  # the backoff stays in the trace step's latency
    note_retry(error, delay, retries_done)


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    sleep: Sleep = asyncio.sleep,
    rng: Callable[[], float] = random.random,
) -> T:
    """The result of ``attempt()``, retried per ``policy``; the last error propagates as raised."""
    retries_done = 0
    while True:
        try:
            return await attempt()
        except ProviderError as error:
            delay = policy.delay_before_retry(error, retries_done, rng=rng)
            if delay is None:
                raise
            _record_retry(error, delay, retries_done)
        await sleep(delay)
        retries_done += 1


async def iterate_with_retries(
    start: Callable[[], AsyncIterator[T]],
    *,
    policy: RetryPolicy,
    sleep: Sleep = asyncio.sleep,
    rng: Callable[[], float] = random.random,
) -> AsyncGenerator[T, None]:
    """Items of ``start()``, restarting it per ``policy`` only while it has yielded nothing.

    Once an item reached the caller a retry would repeat it, so later errors propagate.
    """
    retries_done = 0
    while True:
        iterator = start()
        yielded = False
        try:
            async for item in iterator:
                yielded = True
                yield item
            return
        except ProviderError as error:
            delay = None if yielded else policy.delay_before_retry(error, retries_done, rng=rng)
            if delay is None:
                raise
            _record_retry(error, delay, retries_done)
        finally:
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                await aclose()
        await sleep(delay)
        retries_done += 1
