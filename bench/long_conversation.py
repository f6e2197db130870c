"""Long conversation: time per turn at turn 10, 100 and 1000 (buffer memory, memory_k=20).

With a bounded buffer the context sent stays the same size, so a turn must cost the same at
turn 1000 as at turn 10. Measuring turn 10 at the start of a run and turn 1000 a minute later
would compare two different machine loads, so three conversations are advanced (untimed) to
just before turn 10, 100 and 1000, and then their turns are timed alternately, one turn each
in turn, beside a raw SDK call: every window is measured in the same seconds. A fresh
young conversation is started for every repeat; the older two just go on (turn 1000 is
turns 991..1010 over the whole run, turn 100 turns 91..110).
"""

from __future__ import annotations

import time
from typing import Any

from bench import peers
from bench.common import Row, ServerProcess, Stat, median

GROUP = "long conversation"
TURNS = (10, 100, 1000)
LIMIT = 1.2


class Conversation:
    """One ChatAgent conversation, numbered by turn."""

    def __init__(self, base_url: str) -> None:
        self.agent = peers.aiforge_agent(base_url, memory="buffer", memory_k=20)
        self.turns = 0

    def turn(self) -> float:
        """Run the next turn; its wall time."""
        self.turns += 1
        message = f"Turn {self.turns}: tell me more."
        t0 = time.perf_counter()
        reply = self.agent.chat(message).message
        elapsed = time.perf_counter() - t0
        if reply != f"echo: {message}":
            raise AssertionError(f"turn {self.turns}: unexpected reply {reply!r}")
        return elapsed

    def advance_to(self, turns: int) -> None:
        while self.turns < turns:
            self.turn()


def measure(base_url: str, repeats: int, per_repeat: int) -> tuple[dict[Any, list[list[float]]], int]:
    """Per window (and ``"raw"``), one list of turn times per repeat; and the history size at the end."""
    raw = peers.raw_openai_turn(base_url)
    span = repeats * per_repeat
    old = {k: Conversation(base_url) for k in TURNS[1:]}
    for k, conversation in old.items():
        conversation.advance_to(k - span // 2)
    samples: dict[Any, list[list[float]]] = {k: [] for k in (*TURNS, "raw")}
    for _ in range(repeats):
        young = Conversation(base_url)
        young.advance_to(TURNS[0] - per_repeat // 2)
        conversations = {TURNS[0]: young, **old}
        block: dict[Any, list[float]] = {k: [] for k in samples}
        for _ in range(per_repeat):
            for k, conversation in conversations.items():
                block[k].append(conversation.turn())
            t0 = time.perf_counter()
            raw()
            block["raw"].append(time.perf_counter() - t0)
        for k, times in block.items():
            samples[k].append(times)
    return samples, len(old[TURNS[-1]].agent.history)


def run(quick: bool) -> list[Row]:
    repeats, per_repeat = (2, 4) if quick else (5, 4)
    target = f"<= {LIMIT:.2f}x"
    label = "turn 1000 vs turn 10 (memory=buffer, k=20)"
    with ServerProcess() as server:
        try:
            samples, history = measure(server.openai_base_url, repeats, per_repeat)
        except Exception as exc:  # noqa: BLE001 - report, do not hide, a broken aiforge
            return [Row(GROUP, label, f"error: {type(exc).__name__}: {exc}"[:300], target=target, passed=False)]
    per_repeat_median = {k: [median(times) for times in blocks] for k, blocks in samples.items()}
    ratios = Stat.of([a / b for a, b in zip(per_repeat_median[1000], per_repeat_median[10], strict=True)])
    note = (
        f"{repeats} repeats x {per_repeat} interleaved turns per window; the turn-1000 conversation kept "
        f"{history} messages of history; turn 100 vs turn 10: "
        f"{median([a / b for a, b in zip(per_repeat_median[100], per_repeat_median[10], strict=True)]):.2f}x"
    )
    raw = Stat.of(per_repeat_median["raw"])
    rows = [
        Row(
            GROUP,
            label,
            f"{ratios.median:.2f}x [{ratios.p25:.2f}–{ratios.p75:.2f}]",
            "",
            ratios.median,
            target,
            ratios.median <= LIMIT,
            note,
        )
    ]
    for k in TURNS:
        rows.append(
            Row(GROUP, f"time per turn at turn {k}", Stat.of(per_repeat_median[k]).fmt(), f"raw SDK: {raw.fmt()}")
        )
    return rows
