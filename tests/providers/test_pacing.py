"""Pacing under rate limits, through the real SDKs against a fake server enforcing RPM/TPM per key.

The limits' "minute" is shrunk to ``WINDOW`` seconds on both sides (``pacing.WINDOW`` and the
server's ``rate_window``), so a batch of 10 x N items runs in seconds through the same code path.
On the wire, only what holds on a busy machine is asserted (counts, what the pacer learned, lower bounds
on time); the pace itself is checked on a fake clock that moves only when the pacer sleeps (``FakeTime``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from aiforge import ChatAgent
from aiforge.providers import pacing
from fakellm import LLMServer, Reply
from tests.providers.conftest import ANTHROPIC, OPENAI, SECRET, WireProtocol
from tests.support.fake_time import FakeTime

WINDOW = 0.5
N = 20  # requests per window
MAX_429_SHARE = 0.02


@pytest.fixture(autouse=True)
def short_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pacing, "WINDOW", WINDOW)


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer(rate_window=WINDOW, record=True) as srv:
        # A port an earlier test's server had keeps that test's pacer in the process: start from none.
        for key in [k for k in pacing._pacers if _netloc(k[1]) == _netloc(srv.base_url)]:
            del pacing._pacers[key]
        yield srv


def _netloc(url: str) -> str:
    return urlsplit(url).netloc


def agent(protocol: WireProtocol, srv: LLMServer, key: str = SECRET, **settings: Any) -> ChatAgent:
    return ChatAgent(
        PROVIDER=protocol.name,
        MODEL=protocol.model,
        **{protocol.key_setting: key, protocol.url_setting: protocol.base_url(srv)},
        **settings,
    )


def items(count: int) -> list[str]:
    return [f"item {i}" for i in range(count)]


def pacer_of(srv: LLMServer) -> pacing.Pacer:
    """The process's one pacer for the fake server (each test starts its own, with a single key)."""
    (pacer,) = [p for k, p in pacing._pacers.items() if _netloc(k[1]) == _netloc(srv.base_url)]
    return pacer


@pytest.mark.parametrize("protocol", [OPENAI, ANTHROPIC], ids=lambda p: p.name)
@pytest.mark.slow
def test_a_batch_of_ten_windows_stays_under_the_rpm_limit(server: LLMServer, protocol: WireProtocol) -> None:
    server.rpm = N
    result = agent(protocol, server, RPM=N).run_batch(items(10 * N), concurrency=20, max_batch=1000)

    assert not result.failed
    assert len(result.results) == 10 * N
    assert server.rate_limited <= MAX_429_SHARE * server.request_count
    assert server.request_count == 10 * N + server.rate_limited
    # The first window's worth goes at once (the server's bucket starts full), the rest at the limit's pace.
    assert result.wall_time_s >= 0.8 * 9 * WINDOW


@pytest.mark.slow
def test_tpm_paces_by_estimated_tokens_corrected_by_usage(server: LLMServer) -> None:
    # ~100 prompt tokens + 50 max_tokens per request; distinct, or run_batch would ask one prompt once.
    prompts = [f"{i:03d}" + "x" * 397 for i in range(100)]
    server.tpm = 20 * 160
    result = agent(OPENAI, server, TPM=20 * 160, MAX_TOKENS=50).run_batch(prompts, concurrency=20, max_batch=1000)

    assert not result.failed
    assert server.rate_limited <= MAX_429_SHARE * server.request_count
    assert result.wall_time_s >= 0.8 * 4 * WINDOW


@pytest.mark.parametrize("protocol", [OPENAI, ANTHROPIC], ids=lambda p: p.name)
@pytest.mark.slow
def test_headers_alone_pace_a_batch_without_settings(server: LLMServer, protocol: WireProtocol) -> None:
    server.rpm = N
    result = agent(protocol, server).run_batch(items(5 * N), concurrency=N, max_batch=1000)

    assert not result.failed
    assert server.rate_limited <= MAX_429_SHARE * server.request_count


@pytest.mark.parametrize("protocol", [OPENAI, ANTHROPIC], ids=lambda p: p.name)
def test_a_remaining_count_of_zero_reaches_the_pacer(server: LLMServer, protocol: WireProtocol) -> None:
    limit = 10
    if protocol is OPENAI:
        headers = {"x-ratelimit-limit-requests": str(limit), "x-ratelimit-remaining-requests": "0"}
    else:
        headers = {"anthropic-ratelimit-requests-limit": str(limit), "anthropic-ratelimit-requests-remaining": "0"}
    server.default = lambda req: Reply(text="ok", headers=headers)  # no enforcement: only the headers speak
    bot = agent(protocol, server)
    bot.run_batch(items(1), concurrency=1, max_batch=1000)

    pacer = pacer_of(server)
    # That the next request then waits for its share is the FakeTime test below: the level refills in wall time
    # (WINDOW / limit a request), so reading it here raced a loaded machine.
    assert pacer.active and pacer.requests.learned == limit
    assert not bot.run_batch(items(6), concurrency=6, max_batch=1000).failed
    assert server.request_count == 7


async def test_a_remaining_count_of_zero_spaces_the_next_requests() -> None:
    limit = 10  # per window: one request every WINDOW / 10 / SAFETY seconds
    fake = FakeTime()
    pacer = fake.pacer()
    await pacer.acquire([], None)
    pacer.observe(200, {"x-ratelimit-limit-requests": str(limit), "x-ratelimit-remaining-requests": "0"})
    for _ in range(6):
        await pacer.acquire([], None)

    assert fake.waits == pytest.approx([WINDOW / limit / pacing.SAFETY] * 6)


@pytest.mark.slow
def test_a_429_pauses_and_the_pace_recovers_after_the_limit_lifts(server: LLMServer) -> None:
    server.rpm = N
    bot = agent(OPENAI, server)
    bot.run_batch(items(3 * N), concurrency=10, max_batch=1000)
    paced = server.request_count
    assert pacer_of(server).requests.learned == N

    server.rpm = None  # the limit lifts: no more 429s, no more limit headers
    result = bot.run_batch(items(10 * N), concurrency=10, max_batch=1000)

    assert not result.failed
    assert server.request_count == paced + 10 * N
    # A window without a 429 or a limit header passed (10 x N items take longer at the old pace): pacing stopped.
    assert not pacer_of(server).active and pacer_of(server).requests.learned is None


async def test_a_window_without_a_429_or_a_limit_header_stops_the_pacing() -> None:
    fake = FakeTime()
    pacer = fake.pacer()
    await fake.send(pacer, 40, every=0.025)
    pacer.observe(429, {"retry-after-ms": "100"})
    assert pacer.active

    await fake.send(pacer, 5, every=0.0)  # answers without headers: the pace recovers, still paced
    assert pacer.active
    fake.now += WINDOW
    await fake.send(pacer, 1, every=0.0)

    assert not pacer.active
    waits = len(fake.waits)
    await fake.send(pacer, 20, every=0.0)
    assert len(fake.waits) == waits  # unpaced again: nobody waits


def test_a_429_without_any_headers_starts_pacing_and_every_item_is_answered(server: LLMServer) -> None:
    server.rpm = N
    server.rate_headers = False  # only the 429s (with Retry-After) tell the client
    result = agent(OPENAI, server, MAX_RETRIES=5).run_batch(items(4 * N), concurrency=10, max_batch=1000)

    assert not result.failed
    assert server.request_count == 4 * N + server.rate_limited  # each 429 retried once more, nothing else
    if server.rate_limited:  # a machine slow enough to stay under the limit unpaced meets no 429
        # The 429 reached the pacer, which paused for its Retry-After (the pace after it is what the FakeTime
        # tests below check). Not `requests.rate is not None` at the end: a window without a 429 lifts the
        # pacing again, and on a busy machine the batch's last window is often such a window.
        assert pacer_of(server)._paused_until > 0


async def test_a_429_without_any_headers_pauses_for_its_retry_after_then_paces_below_what_was_sent() -> None:
    fake = FakeTime()
    pacer = fake.pacer()
    await fake.send(pacer, 60, every=0.02)  # 60 requests in 1.2 s: 50 per second, unpaced
    assert fake.waits == [] and not pacer.active
    sent_rate = 60 / 1.2

    pacer.observe(429, {"retry-after-ms": "300"})
    await pacer.acquire([], None)
    assert fake.waits == [pytest.approx(0.3)]  # everyone pauses for the Retry-After

    for _ in range(30):
        await pacer.acquire([], None)
    # What built up during the pause goes first, then one request per 1 / (0.8 x the rate that met the 429).
    assert fake.waits[-10:] == pytest.approx([1 / (pacing.BACKOFF * sent_rate)] * 10)


async def test_the_429s_answering_one_burst_lower_the_pace_once() -> None:
    fake = FakeTime()
    pacer = fake.pacer()
    for _ in range(10):  # ten requests in flight together
        await pacer.acquire([], None)
    fake.now += 1.0
    for _ in range(10):
        pacer.observe(429, {"retry-after-ms": "100"})

    assert pacer.requests.rate == pytest.approx(pacing.BACKOFF * 10 / 1.0)  # not 0.8 ** 10


def _run_together(*bots: ChatAgent, count: int) -> tuple[float, list[Any]]:
    results: list[Any] = [None] * len(bots)

    def run(i: int) -> None:
        results[i] = bots[i].run_batch(items(count), concurrency=10, max_batch=1000)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(bots))]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started, results


@pytest.mark.slow
def test_agents_on_one_endpoint_and_key_share_a_limiter_and_other_keys_do_not(server: LLMServer) -> None:
    server.rpm = N
    same = agent(OPENAI, server, RPM=N), agent(OPENAI, server, RPM=N, TEMPERATURE=0.0)
    shared_time, results = _run_together(*same, count=3 * N)  # each agent runs on its own thread's loop

    assert all(not r.failed for r in results)
    assert server.rate_limited <= MAX_429_SHARE * server.request_count
    # One pacer for the endpoint and key, whichever agent and thread asked (counted, not timed).
    assert len([k for k in pacing._pacers if k[1] == server.openai_base_url]) == 1

    server.reset()
    other = agent(OPENAI, server, key="sk-other-key", RPM=N), agent(OPENAI, server, key="sk-third-key", RPM=N)
    separate_time, results = _run_together(*other, count=3 * N)

    assert all(not r.failed for r in results)
    assert server.rate_limited <= MAX_429_SHARE * server.request_count
    assert len([k for k in pacing._pacers if k[1] == server.openai_base_url]) == 3  # one per key


async def test_the_balance_refills_only_from_the_first_answer() -> None:
    """A cold client's first requests reach the server late; what they spent must not refill before then."""
    now = [100.0]
    pacer = pacing.Pacer(clock=lambda: now[0])
    pacer.configure(rpm=N, tpm=None)  # a burst of 0.9 x 20 = 18, then 0.95 x 20 per window
    burst = int(N * pacing.BURST)
    for _ in range(burst):
        await pacer.acquire([], None)
    now[0] += WINDOW  # no answer yet: nothing came back
    assert pacer.requests.take(1.0, now[0]) > 0  # the 19th still waits

    pacer.observe(200, {})  # the first answer
    now[0] += WINDOW
    assert pacer.requests.take(1.0, now[0]) == 0  # a window after it, the balance has refilled


SERVER_RPM = 600
"""The server of the burst tests: 600 a minute with a burst of 10 (a limit smoothed to 10 a second)."""
SERVER_BURST = 10


@pytest.fixture
def smoothed_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    """A server allowing 600 requests a minute but only 10 at once, on a real minute (the burst is in seconds)."""
    monkeypatch.setattr(pacing, "WINDOW", 60.0)
    with LLMServer(rpm=SERVER_RPM, burst=SERVER_BURST, rate_window=60.0, record=False) as srv:
        for key in [k for k in pacing._pacers if _netloc(k[1]) == _netloc(srv.base_url)]:
            del pacing._pacers[key]
        yield srv


@pytest.mark.slow
def test_rpm_set_to_the_limit_of_a_server_with_a_small_burst_meets_at_most_2_percent_429s(
    smoothed_server: LLMServer,
) -> None:
    result = agent(OPENAI, smoothed_server, RPM=SERVER_RPM).run_batch(items(150), concurrency=20, max_batch=150)

    assert not result.failed and len(result.results) == 150
    assert smoothed_server.request_count == 150 + smoothed_server.rate_limited
    # Before: the first 20 went at once (a window's worth was allowed) and half of them met a 429.
    assert smoothed_server.rate_limited <= MAX_429_SHARE * smoothed_server.request_count


@pytest.mark.slow
def test_a_limit_learned_from_headers_on_a_server_with_a_small_burst_meets_at_most_5_percent_429s(
    smoothed_server: LLMServer,
) -> None:
    # Unpaced until the first answer states the limit: 10 of the first 20 meet a 429 whatever the client does,
    # so the share is counted over a batch long enough for it to be under 5 % (10 of 310).
    result = agent(OPENAI, smoothed_server).run_batch(items(300), concurrency=20, max_batch=300)

    assert not result.failed and len(result.results) == 300
    assert smoothed_server.rate_limited <= 0.05 * smoothed_server.request_count


async def test_a_known_limit_sends_no_more_than_a_seconds_worth_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pacing, "WINDOW", 60.0)
    fake = FakeTime()
    pacer = fake.pacer()
    pacer.configure(rpm=600, tpm=None)  # paced at 0.95 x 10 a second: 9.5 a second's worth
    for _ in range(20):
        await pacer.acquire([], None)

    # BURST_SECONDS (1) x 9.5: 9 at once, then one every 1 / 9.5 s; not the 20 a window's burst (540) let go.
    assert len(fake.waits) == 20 - 9


async def test_a_limit_learned_with_requests_in_flight_starts_a_seconds_worth_behind_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pacing, "WINDOW", 60.0)
    fake = FakeTime()
    pacer = fake.pacer()
    for _ in range(20):  # unpaced: no limit known yet
        await pacer.acquire([], None)
    # The first answer states the limit; its remaining count was read before the 19 others in flight arrived.
    pacer.observe(200, {"x-ratelimit-limit-requests": "600", "x-ratelimit-remaining-requests": "9"})
    await pacer.acquire([], None)

    rate = 600 * pacing.SAFETY / 60.0
    # The balance starts at a second's worth (9.5) less the 19 in flight, not at the remaining count (9): before
    # the 429s of the others came back, nine more would have gone at once.
    assert fake.waits == [pytest.approx((19 + 1 - rate * 1.0) / rate)]
