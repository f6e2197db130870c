"""``FakeTime``: the clock the rate pacer's tests run it on (tests/providers/test_pacing.py, test_pacing_files.py)."""

from __future__ import annotations

from aiforge.providers import pacing


class FakeTime:
    """A clock that moves only when the pacer sleeps on it: the waits it records are the pace, on any machine."""

    def __init__(self) -> None:
        self.now = 100.0
        self.waits: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def pacer(self) -> pacing.Pacer:
        return pacing.Pacer(clock=lambda: self.now, sleep=self.sleep)

    async def send(self, pacer: pacing.Pacer, count: int, every: float) -> None:
        """``count`` unpaced requests, ``every`` seconds apart, each answered 200 at once without headers."""
        for _ in range(count):
            await pacer.acquire([], None)
            pacer.observe(200, {})
            self.now += every
