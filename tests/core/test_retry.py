"""The retry policy's pure decisions: what is retried, how long to wait, when to give up."""

from __future__ import annotations

import email.utils
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aiforge.core.retry import (
    INITIAL_BACKOFF,
    MAX_BACKOFF,
    RetryPolicy,
    call_with_retries,
    is_retryable,
    iterate_with_retries,
    parse_retry_after,
)
from aiforge.core.settings import load_settings
from aiforge.core.types import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    ProviderError,
    RateLimitError,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


class FakeSleep:
    """Records the waits instead of sleeping."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def status_error(status: int) -> ProviderError:
    return ProviderError(f"HTTP {status}", provider="test", status_code=status)


# --- which errors -----------------------------------------------------------------------------


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529])
def test_transient_statuses_are_retryable(status: int) -> None:
    assert is_retryable(status_error(status))


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_client_error_statuses_are_not_retryable(status: int) -> None:
    assert not is_retryable(status_error(status))


def test_timeouts_and_connection_errors_are_retryable() -> None:
    assert is_retryable(APITimeoutError("slow"))
    assert is_retryable(APIConnectionError("refused"))


def test_errors_without_status_or_outside_aiforge_are_not_retryable() -> None:
    assert not is_retryable(ProviderError("mid-stream error event"))
    assert not is_retryable(ValueError("a bug"))


# --- how long ---------------------------------------------------------------------------------


def test_backoff_is_full_jitter_under_a_doubling_cap() -> None:
    policy = RetryPolicy()
    for retries_done in range(12):
        cap = min(MAX_BACKOFF, INITIAL_BACKOFF * 2**retries_done)
        assert policy.backoff(retries_done, rng=lambda: 0.0) == 0.0
        assert policy.backoff(retries_done, rng=lambda: 1.0) == cap
        assert 0.0 <= policy.backoff(retries_done) <= cap


def test_backoff_never_exceeds_max_backoff() -> None:
    assert RetryPolicy().backoff(1000, rng=lambda: 1.0) == MAX_BACKOFF


def test_retry_after_within_max_wait_is_honoured_exactly() -> None:
    policy = RetryPolicy(max_wait=5)
    error = RateLimitError("slow down", retry_after=5.0, status_code=429)
    assert policy.delay_before_retry(error, 0, rng=lambda: 0.0) == 5.0


def test_retry_after_above_max_wait_raises_rate_limit_error_at_once() -> None:
    policy = RetryPolicy(max_wait=5)
    error = RateLimitError("slow down", retry_after=60.0, provider="openai", status_code=429, request_id="req_1")
    with pytest.raises(RateLimitError) as info:
        policy.delay_before_retry(error, 0)
    raised = info.value
    assert raised.retry_after == 60.0
    assert (raised.provider, raised.status_code, raised.request_id) == ("openai", 429, "req_1")
    assert "RETRY_MAX_WAIT" in raised.message


def test_no_retry_once_retries_are_used_up() -> None:
    policy = RetryPolicy(max_retries=2)
    assert policy.delay_before_retry(status_error(500), 1) is not None
    assert policy.delay_before_retry(status_error(500), 2) is None


def test_policy_from_settings_reads_max_retries_and_retry_max_wait() -> None:
    policy = RetryPolicy.from_settings(load_settings(MAX_RETRIES=5, RETRY_MAX_WAIT=12))
    assert (policy.max_retries, policy.max_wait, policy.max_attempts) == (5, 12, 6)


# --- Retry-After parsing ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "2"}, 2.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"Retry-After-Ms": "150"}, 0.15),
        ({"retry-after-ms": "150", "retry-after": "9"}, 0.15),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-3"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str] | None, expected: float | None) -> None:
    assert parse_retry_after(headers) == expected


def test_parse_retry_after_http_date() -> None:
    now = 1_800_000_000.0
    header = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"Retry-After": header}, now=now) == 30.0


def test_parse_retry_after_http_date_in_the_past_means_now() -> None:
    now = 1_800_000_000.0
    header = email.utils.formatdate(now - 30, usegmt=True)
    assert parse_retry_after({"Retry-After": header}, now=now) == 0.0


# --- the loop ---------------------------------------------------------------------------------


async def test_permanent_failure_is_attempted_max_retries_plus_one_times() -> None:
    calls, sleep = [], FakeSleep()

    async def attempt() -> str:
        calls.append(1)
        raise status_error(503)

    with pytest.raises(ProviderError):
        await call_with_retries(attempt, policy=RetryPolicy(max_retries=3), sleep=sleep)
    assert len(calls) == 4
    assert len(sleep.waits) == 3


async def test_non_retryable_error_is_raised_after_one_attempt() -> None:
    calls, sleep = [], FakeSleep()

    async def attempt() -> str:
        calls.append(1)
        raise AuthenticationError("bad key", status_code=401)

    with pytest.raises(AuthenticationError):
        await call_with_retries(attempt, policy=RetryPolicy(), sleep=sleep)
    assert len(calls) == 1 and sleep.waits == []


async def test_success_after_rate_limits_waits_exactly_the_hints() -> None:
    outcomes: list[Exception | str] = [
        RateLimitError("a", retry_after=0.2, status_code=429),
        RateLimitError("b", retry_after=1.5, status_code=429),
        "done",
    ]
    sleep = FakeSleep()

    async def attempt() -> str:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    assert await call_with_retries(attempt, policy=RetryPolicy(), sleep=sleep) == "done"
    assert sleep.waits == [0.2, 1.5]


async def test_errors_outside_aiforge_propagate_without_retry() -> None:
    calls = []

    async def attempt() -> str:
        calls.append(1)
        raise KeyError("bug")

    with pytest.raises(KeyError):
        await call_with_retries(attempt, policy=RetryPolicy(), sleep=FakeSleep())
    assert len(calls) == 1


async def test_stream_is_restarted_while_it_has_yielded_nothing() -> None:
    starts = []

    async def start() -> AsyncIterator[str]:
        starts.append(1)
        if len(starts) == 1:
            raise status_error(500)
        yield "a"
        yield "b"

    items = [item async for item in iterate_with_retries(start, policy=RetryPolicy(), sleep=FakeSleep())]
    assert items == ["a", "b"] and len(starts) == 2


async def test_stream_is_not_restarted_after_it_yielded() -> None:
    starts, sleep = [], FakeSleep()

    async def start() -> AsyncIterator[str]:
        starts.append(1)
        yield "a"
        raise status_error(500)

    received = []
    with pytest.raises(ProviderError):
        async for item in iterate_with_retries(start, policy=RetryPolicy(), sleep=sleep):
            received.append(item)
    assert received == ["a"] and len(starts) == 1 and sleep.waits == []


def test_importing_the_retry_module_loads_no_sdk() -> None:
    code = "import sys, aiforge.core.retry; print(sorted({'openai', 'anthropic', 'httpx2'} & set(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    assert result.stdout.strip() == "[]"
