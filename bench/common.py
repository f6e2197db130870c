"""What every benchmark group shares: the fake server process, interleaved timing, statistics, rows."""

from __future__ import annotations

import gc
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable

# The same conversation for every contender.
SYSTEM = "You are a helpful assistant."
PROMPT = "What is the capital of France?"
OPENAI_MODEL = "gpt-4o-mini"
ANTHROPIC_MODEL = "claude-3-5-haiku-latest"
API_KEY = "sk-bench"
WEATHER_ARGS = '{"city": "Paris"}'
WEATHER_ANSWER = "It is sunny and 21 C in Paris."


TOOL_RUNS = [0]
"""How many times ``get_weather`` ran: a tool turn that skipped the tool fails its check."""


def get_weather(city: str) -> str:
    """Current weather for a city."""
    TOOL_RUNS[0] += 1
    return f"Sunny, 21 C in {city}."


# ---------------------------------------------------------------------------
# The fake server, one process per setting
# ---------------------------------------------------------------------------


class ServerProcess:
    """``bench.fake_server`` in a child process, so the client measured never shares its GIL."""

    def __init__(
        self,
        *,
        latency: float = 0.0,
        chunk_delay: float = 0.0,
        chunk_size: int = 4,
        reply: str | None = None,
        tool_args: str = WEATHER_ARGS,
    ) -> None:
        self.argv = [
            PYTHON,
            "-m",
            "bench.fake_server",
            "--latency",
            str(latency),
            "--chunk-delay",
            str(chunk_delay),
            "--chunk-size",
            str(chunk_size),
            "--tool-args",
            tool_args,
        ]
        if reply is not None:
            self.argv += ["--reply", reply]
        self.process: subprocess.Popen[str] | None = None
        self.base_url = ""

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.base_url

    def __enter__(self) -> ServerProcess:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        self.process = subprocess.Popen(self.argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line.startswith("READY "):
            self.__exit__()
            raise RuntimeError(f"fake server did not start ({' '.join(self.argv)}): {line!r}")
        self.base_url = line.split(" ", 1)[1]
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


# ---------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Stat:
    """Median and interquartile range of some samples."""

    median: float
    p25: float
    p75: float
    n: int

    @classmethod
    def of(cls, samples: Sequence[float]) -> Stat:
        values = sorted(samples)
        if not values:
            return cls(float("nan"), float("nan"), float("nan"), 0)
        if len(values) == 1:
            return cls(values[0], values[0], values[0], 1)
        q = statistics.quantiles(values, n=4, method="inclusive")
        return cls(statistics.median(values), q[0], q[2], len(values))

    def fmt(self, unit: str = "ms", scale: float = 1e3, digits: int = 2) -> str:
        """``1.23 ms [1.10–1.40]``: median and interquartile range."""
        m, lo, hi = (v * scale for v in (self.median, self.p25, self.p75))
        return f"{m:.{digits}f} {unit} [{lo:.{digits}f}–{hi:.{digits}f}]".replace(" []", "")


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


# ---------------------------------------------------------------------------
# Interleaved timing
# ---------------------------------------------------------------------------


@dataclass
class Contender:
    """One way of doing the same work: ``call`` is timed, ``before`` (if any) runs untimed first."""

    name: str
    call: Callable[[], Any]
    before: Callable[[], Any] | None = None
    check: Callable[[Any], bool] | None = None
    """Validates one result (run once, after warm-up): a contender that does the wrong work is an error."""
    metrics: Callable[[Any], dict[str, float]] | None = None
    """Extra per-call measurements taken from the result (e.g. time to first chunk), kept as ``"name:metric"``."""


@dataclass
class Timings:
    """Per contender, one value per round: the median time of one call within that round's block.

    ``"name"`` is wall time; ``"name:cpu"`` is this process's CPU time (all threads) for the same
    calls, which the load of other processes on the machine disturbs much less.
    """

    rounds: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def stat(self, name: str) -> Stat:
        return Stat.of(self.rounds.get(name, []))

    def diff(self, name: str, base: str) -> Stat:
        """``name`` minus ``base``, paired round by round (same minute, same machine load)."""
        a, b = self.rounds.get(name, []), self.rounds.get(base, [])
        return Stat.of([x - y for x, y in zip(a, b, strict=False)])

    def ok(self, *names: str) -> bool:
        return all(n in self.rounds and n.split(":")[0] not in self.errors for n in names)


def interleave(contenders: Sequence[Contender], *, rounds: int, calls: int, warmup: int = 3) -> Timings:
    """Time every contender in blocks of ``calls`` calls, alternating contenders every block.

    Each round runs one block per contender, in an order rotated every round, so slow
    drift of a noisy machine lands on every contender alike. A contender that raises is
    dropped and its error reported.
    """
    out = Timings()
    live = []
    for c in contenders:
        try:
            result = None
            for _ in range(warmup):
                if c.before:
                    c.before()
                result = c.call()
            if c.check is not None and not c.check(result):
                raise AssertionError(f"unexpected result: {result!r}"[:300])
            out.rounds[c.name] = []
            live.append(c)
        except Exception as exc:  # noqa: BLE001 - report the contender as broken, keep the others
            out.errors[c.name] = f"{type(exc).__name__}: {exc}"[:300]
    for r in range(rounds):
        order = live[r % len(live) :] + live[: r % len(live)] if live else []
        for c in order:
            if c.name in out.errors:
                continue
            samples: dict[str, list[float]] = {c.name: []}
            gc.collect()
            try:
                for _ in range(calls):
                    if c.before:
                        c.before()
                    c0, t0 = time.process_time(), time.perf_counter()
                    result = c.call()
                    samples[c.name].append(time.perf_counter() - t0)
                    samples.setdefault(f"{c.name}:cpu", []).append(time.process_time() - c0)
                    for metric, value in (c.metrics(result) if c.metrics else {}).items():
                        samples.setdefault(f"{c.name}:{metric}", []).append(value)
            except Exception as exc:  # noqa: BLE001
                out.errors[c.name] = f"{type(exc).__name__}: {exc}"[:300]
                continue
            for key, values in samples.items():
                out.rounds.setdefault(key, []).append(median(values))
    return out


# ---------------------------------------------------------------------------
# Result rows
# ---------------------------------------------------------------------------


@dataclass
class Row:
    """One line of the results table."""

    group: str
    benchmark: str
    aiforge: str
    peer: str = ""
    ratio: float | None = None
    target: str = ""
    passed: bool | None = None  # None: informational, no target
    note: str = ""

    @property
    def verdict(self) -> str:
        if self.passed is None:
            return "info"
        return "PASS" if self.passed else "FAIL"


def run_measures(group: str, measures: Sequence[Callable[[bool], list[Row]]], quick: bool) -> list[Row]:
    """Every measure's rows in order; a measure that raises gives one failed row saying why instead.

    >>> run_measures("semantic", [agg_rows, join_rows], quick=True)  # bench/semantic.py's measures
    """
    rows: list[Row] = []
    for measure in measures:
        try:
            rows += measure(quick)
        except Exception as exc:  # noqa: BLE001 - one broken measure must not hide the others' numbers
            rows.append(Row(group, measure.__name__, f"error: {type(exc).__name__}: {exc}"[:300], passed=False))
    return rows


def failing(exc: BaseException) -> Callable[[], Any]:
    """A contender standing in for one that could not be built: it raises the build error."""
    message = f"{type(exc).__name__}: {exc}"

    def call() -> Any:
        raise RuntimeError(message)

    return call


def first_error(t: Timings, *names: str) -> str:
    contenders = [n.split(":")[0] for n in names]
    return next((t.errors[n] for n in contenders if n in t.errors), "not measured")


def overhead_row(
    t: Timings, group: str, label: str, *, base: str, peer: str, target: float, strict: bool = False
) -> Row:
    """aiforge's overhead over ``base`` against ``peer``'s, as a ratio that must stay under ``target``."""
    op = "<" if strict else "<="
    target_text = f"{op} {target:.2f}x"
    if not t.ok("aiforge", peer, base):
        return Row(group, label, f"error: {first_error(t, 'aiforge', peer, base)}", target=target_text, passed=False)
    ours, theirs = t.diff("aiforge", base), t.diff(peer, base)
    ratio = ours.median / theirs.median if theirs.median > 0 else float("inf")
    passed = ratio < target if strict else ratio <= target
    cpu_ours, cpu_theirs = t.diff("aiforge:cpu", f"{base}:cpu"), t.diff(f"{peer}:cpu", f"{base}:cpu")
    note = f"same comparison in CPU time of this process: aiforge {cpu_ours.fmt()}, {peer} {cpu_theirs.fmt()}" + (
        f" = {cpu_ours.median / cpu_theirs.median:.2f}x" if cpu_theirs.median > 0 else ""
    )
    return Row(group, label, ours.fmt(), f"{peer}: {theirs.fmt()}", ratio, target_text, passed, note)


def info_row(t: Timings, group: str, label: str, name: str, base: str | None = None, peer: str = "") -> Row:
    """An informational row: ``name``'s time per call, or its overhead over ``base``."""
    names = (name, base) if base else (name,)
    if not t.ok(*names):
        return Row(group, label, f"error: {first_error(t, *names)}")
    stat = t.diff(name, base) if base else t.stat(name)
    return Row(group, label, stat.fmt(), peer)


def stat_text(t: Timings, name: str) -> str:
    return t.stat(name).fmt() if t.ok(name) else "n/a"


def error_rows(t: Timings, group: str) -> list[Row]:
    """One row per helper contender that broke (aiforge's own errors already fail a target row)."""
    return [Row(group, f"{name} could not run", f"error: {e}") for name, e in t.errors.items() if name != "aiforge"]
