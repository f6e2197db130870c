"""Pacing requests under a server's rate limits, so a batch converges on the limit instead of on 429s.

One ``Pacer`` per (provider, base URL, key fingerprint) in the process: every agent and batch on
the same endpoint and key shares it, whichever event loop or thread it runs on (the state sits
behind a ``threading.Lock`` held for a few arithmetic steps; waiting is ``asyncio.sleep`` on the
caller's own loop, so no asyncio object crosses loops).

Each limit is a token bucket with reservations (GCRA): a request takes its cost at once and sleeps
until the balance it left would have been refilled, so concurrent tasks queue in arrival order
without polling. A bucket holds ``BURST`` x one window's worth (the server's bucket starts full), requests at
most ``BURST_SECONDS``' worth (a server may smooth its limit over the window: 600 a minute as 10 a second), and
refills at ``SAFETY`` x the limit, which leaves room for requests bunched by jitter.

What sets the pace, most specific first:
- ``RPM`` / ``TPM`` settings: a ceiling (agents sharing a pacer keep the lowest).
- The server's headers on every answer (OpenAI ``x-ratelimit-limit/remaining-requests|tokens``,
  Anthropic ``anthropic-ratelimit-requests|tokens-limit/remaining``): the limit caps the ceiling,
  the remaining count caps the bucket's balance.
- A 429: everyone pauses for its ``Retry-After`` (or the reset header) and the rate drops to
  ``BACKOFF`` x; each success then raises it by ``RECOVERY`` x up to the ceiling. With no ceiling
  at all, the rate starts from what was sent so far, and pacing stops after a window with no 429
  and no limit header (the limit has lifted).

TPM counts a request's estimate (``core.tokens.request_tokens``: prompt characters / 4 plus ``max_tokens``, or
``DEFAULT_OUTPUT_TOKENS`` when unset), and corrects the balance with the usage the answer reports. A file marker
counts as its file by the provider's rules (``core.file_rules.marker_tokens``, once per file) on the SDK providers
that send files (``file_rules``: OpenAI, the gateway, Anthropic, local servers with ``FILE_INPUT='native'``).
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any

from aiforge.core.retry import parse_retry_after
from aiforge.core.tokens import request_tokens
from aiforge.core.waits import waited

WINDOW = 60.0
"""Seconds in the limits' "minute"; tests shrink it (with the fake server's window) to run fast."""
SAFETY = 0.95
"""The share of a known limit actually used: requests leaving together may arrive closer together."""
BURST = 0.9
"""The share of a window's limit that may go at once: the rest absorbs arrivals bunched by jitter."""
BURST_SECONDS = 1.0
"""No more requests at once than this many seconds' worth at the pace: a server that smooths its limit (600 a
minute as 10 a second, with a burst of 10) refuses the rest of a burst of a window's worth, however much of the
window is left. Tokens are not capped so: one request's estimate may well be more than a second's worth."""
BACKOFF = 0.8
RECOVERY = 1.05

_OPENAI = "x-ratelimit-{field}-{kind}"  # field: limit/remaining/reset, kind: requests/tokens
_ANTHROPIC = "anthropic-ratelimit-{kind}-{field}"
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


class _Bucket:
    """One limit: units per window, a balance and its refill rate (None: not paced)."""

    __slots__ = ("configured", "learned", "rate", "level", "stamp", "answered", "burst_seconds")

    def __init__(self, burst_seconds: float | None = None) -> None:
        self.burst_seconds = burst_seconds
        """The most seconds' worth at the pace that may go at once (``BURST_SECONDS``); None: a window's."""
        self.configured: float | None = None
        self.learned: float | None = None
        self.rate: float | None = None  # units per second
        self.level = 0.0
        self.stamp = 0.0
        self.answered = False
        """An answer has come back: the refill runs from then on (see ``_refill``)."""

    @property
    def ceiling(self) -> float | None:
        limits = [x for x in (self.configured, self.learned) if x is not None]
        return min(limits) if limits else None

    def top_rate(self) -> float | None:
        ceiling = self.ceiling
        return None if ceiling is None else ceiling * SAFETY / WINDOW

    def _refill(self, now: float) -> None:
        # No refill before the first answer: a cold client's first requests reach the server late (a
        # new connection, the SDK's first call: 150 ms measured), and the burst sent meanwhile on a
        # refilled balance arrived bunched with them, past the server's bucket (429s).
        if self.rate is not None and self.answered:
            self.level = min(self.capacity(), self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def capacity(self) -> float:
        """What may go at once: ``BURST`` x a window's limit, and at most ``burst_seconds``' worth at the pace."""
        assert self.rate is not None
        window = (self.ceiling or self.rate * WINDOW) * BURST
        return window if self.burst_seconds is None else min(window, max(1.0, self.rate * self.burst_seconds))

    def take(self, cost: float, now: float) -> float:
        """Reserve ``cost``; the seconds to wait before using it."""
        if self.rate is None:
            return 0.0
        self._refill(now)
        self.level -= cost
        return -self.level / self.rate if self.level < 0 else 0.0

    def settle(self, difference: float, now: float) -> None:
        self._refill(now)
        self.level += difference

    def limit_changed(self, now: float) -> None:
        """Start pacing at the ceiling (a full bucket: a burst of its capacity), or lower a rate above it."""
        top = self.top_rate()
        if top is None:
            return
        if self.rate is None:
            self.rate, self.stamp = top, now
            self.level = self.capacity()
        elif self.rate > top:
            self._refill(now)
            self.rate = top

    def observe(self, limit: float | None, remaining: float | None, now: float, in_flight: int = 0) -> None:
        if limit is not None and limit != self.learned:
            self.learned = limit
            starting = self.rate is None
            self.limit_changed(now)
            if starting and self.rate is not None:
                # Pacing starts from this answer's headers: the requests sent unpaced before it and still
                # unanswered are not in the server's count yet (ten 429s in one burst without this).
                self.level -= in_flight
        if remaining is not None and self.rate is not None:
            self._refill(now)
            self.level = min(self.level, remaining)

    def back_off(self, sent_rate: float, now: float) -> None:
        self._refill(now)
        self.rate = max((self.rate if self.rate is not None else sent_rate) * BACKOFF, 1.0 / WINDOW)
        self.level = min(self.level, 0.0)

    def recover(self, now: float) -> None:
        if self.rate is None:
            return
        top = self.top_rate()
        if top is None or self.rate < top:
            self._refill(now)
            self.rate = self.rate * RECOVERY if top is None else min(top, self.rate * RECOVERY)


class Pacer:
    """Requests and tokens per window for one endpoint and key (see the module docstring)."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
    ) -> None:
        # Both injectable so a test drives the pace on a fake clock: what it checks then holds on a busy machine.
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self.requests = _Bucket(BURST_SECONDS)
        self.tokens = _Bucket()
        self.active = False
        """False until a limit is known: ``acquire`` is then a no-op (the plain path's cost)."""
        self._paused_until = 0.0
        self._last_signal = 0.0  # the last 429 or limit header
        self._sent = 0
        self._answers = 0  # answers observed; ``_sent - _answers`` requests are in flight
        self._first_sent: float | None = None

    def configure(self, rpm: int | None, tpm: int | None) -> None:
        """Add an agent's ``RPM`` / ``TPM``; the lowest setting of the agents sharing this pacer wins."""
        with self._lock:
            now = self._clock()
            for bucket, value in ((self.requests, rpm), (self.tokens, tpm)):
                if value is not None and (bucket.configured is None or value < bucket.configured):
                    bucket.configured = float(value)
                    bucket.limit_changed(now)
            self._update_active()

    async def acquire(
        self, messages: list[Any], max_tokens: int | None, files: Callable[[str], int] | None = None
    ) -> float:
        """Wait for a request's turn; the tokens it reserved, for ``settle`` (``files``: a marker's tokens)."""
        if not self.active:
            if self._first_sent is None:
                self._first_sent = self._clock()
            self._sent += 1
            return 0.0
        estimate = request_tokens(messages, max_tokens, files) if self.tokens.rate is not None else 0.0
        with self._lock:
            now = self._clock()
            self._sent += 1
            wait = max(self._paused_until - now, self.requests.take(1.0, now), self.tokens.take(estimate, now))
        if wait > 0:
            waited(wait, "pacer")  # the turn's queue_ms, not its latency
            await self._sleep(wait)
        return estimate

    def settle(self, reserved: float, used: int) -> None:
        """Correct the token balance with what the answer really used."""
        if reserved and self.tokens.rate is not None:
            with self._lock:
                self.tokens.settle(reserved - used, self._clock())

    def observe(self, status: int, headers: Mapping[str, str]) -> None:
        """Adapt to one answer's status and rate-limit headers."""
        # One pass picks the rate-limit headers out: eight ``headers.get`` on an httpx ``Headers``
        # would each scan every header (45 us per answer, against 5 us).
        found = {name.lower(): value for name, value in headers.items() if "ratelimit" in name.lower()}
        limits = {kind: _read(found, kind) for kind in ("requests", "tokens")}
        signalled = any(value is not None for pair in limits.values() for value in pair)
        self._answers += 1
        if not signalled and status != 429 and not self.active:
            return
        with self._lock:
            now = self._clock()
            for bucket in (self.requests, self.tokens):
                if not bucket.answered:
                    bucket.answered, bucket.stamp = True, now
            self.requests.observe(*limits["requests"], now, in_flight=max(self._sent - self._answers, 0))
            self.tokens.observe(*limits["tokens"], now)
            if status == 429:
                self._last_signal = now
                # 429s answering requests sent before the pause they caused say nothing new: one burst
                # backs off once (eight 429s compounding 0.8x each took a headers-only batch to 1.26x).
                if now >= self._paused_until:
                    self.requests.back_off(self._sent_rate(now), now)
                wait = parse_retry_after(headers) or _reset(headers) or WINDOW / 60
                self._paused_until = max(self._paused_until, now + wait)
            elif status < 400:
                if signalled:
                    self._last_signal = now
                elif now - self._last_signal > WINDOW:
                    self._lift()
                self.requests.recover(now)
                self.tokens.recover(now)
            self._update_active()

    def _sent_rate(self, now: float) -> float:
        elapsed = max(now - (self._first_sent if self._first_sent is not None else now), 1.0)
        return self._sent / elapsed

    def _lift(self) -> None:
        """The server stopped stating limits and no 429 came for a window: pace by the settings only."""
        for bucket in (self.requests, self.tokens):
            bucket.learned = None
            if bucket.configured is None:
                bucket.rate = None

    def _update_active(self) -> None:
        self.active = self.requests.rate is not None or self.tokens.rate is not None


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _read(headers: Mapping[str, str], kind: str) -> tuple[float | None, float | None]:
    """(limit, remaining) for ``kind`` from OpenAI's or Anthropic's headers."""
    for pattern in (_OPENAI, _ANTHROPIC):
        limit = _number(headers.get(pattern.format(field="limit", kind=kind)))
        remaining = _number(headers.get(pattern.format(field="remaining", kind=kind)))
        if limit is not None or remaining is not None:
            return limit, remaining
    return None, None


def _reset(headers: Mapping[str, str]) -> float | None:
    """Seconds until the request limit resets: OpenAI's duration ("6m0s", "20ms") or Anthropic's RFC 3339 time."""
    raw = headers.get("x-ratelimit-reset-requests")
    if raw:
        parts = _DURATION.findall(raw)
        return sum(float(n) * _UNIT[unit] for n, unit in parts) if parts else None
    raw = headers.get("anthropic-ratelimit-requests-reset")
    if raw:
        try:
            return max(0.0, datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp() - time.time())
        except ValueError:
            return None
    return None


_pacers: dict[tuple[str, str, str], Pacer] = {}
_pacers_lock = threading.Lock()


def pacer_for(provider: str, base_url: str, key_fingerprint: str) -> Pacer:
    """The process's pacer for an endpoint and key (identified by the key's digest, never the key)."""
    key = (provider, base_url, key_fingerprint)
    with _pacers_lock:
        pacer = _pacers.get(key)
        if pacer is None:
            pacer = _pacers[key] = Pacer()
        return pacer
