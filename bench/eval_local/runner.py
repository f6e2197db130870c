"""Runs the labelled set under a configuration of the embedded model and scores the replies."""

from __future__ import annotations

import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from bench.common import Row
from bench.eval_local.items import ITEMS, LONG_CHARS, Item

GROUP = "embedded model eval"
_SENTENCE = re.compile(r"[^.!?\n]*[.!?\n]+|[^.!?\n]+$")


def max_sentence_repeats(text: str) -> int:
    """How often the most repeated sentence of four words or more occurs in ``text``."""
    keys = [" ".join(s.lower().split()).rstrip(".!?") for s in _SENTENCE.findall(text)]
    counts = Counter(k for k in keys if len(k.split()) >= 4)
    return max(counts.values(), default=0)


@dataclass
class Scores:
    right: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))
    loops: int = 0
    truncated: int = 0
    worst_repeats: int = 0
    tool_called: list[tuple[bool, bool]] = field(default_factory=list)  # (needed, called)
    seconds: float = 0.0
    items: int = 0

    def accuracy(self, category: str | None = None) -> float:
        marks = self.right[category] if category else [m for ms in self.right.values() for m in ms]
        return sum(marks) / len(marks) if marks else 0.0

    def tool_precision(self) -> float:
        called = [needed for needed, was in self.tool_called if was]
        return sum(called) / len(called) if called else 0.0

    def tool_recall(self) -> float:
        needed = [was for need, was in self.tool_called if need]
        return sum(needed) / len(needed) if needed else 0.0


CONFIGS = ("old", "new; every tool offered", "new")
"""Old defaults; the new sampling and loop guard with every tool offered; and with the tool gate too."""


def agents(config: str) -> tuple[Any, Any]:
    """A plain agent and one with the built-in tools, under ``config`` (one of ``CONFIGS``)."""
    from aiforge import ChatAgent
    from aiforge.core.settings import load_settings
    from aiforge.providers.local import LocalProvider
    from aiforge.providers.local.defaults import OLD_TEMPERATURE
    from aiforge.tools import builtin_tools

    provider = LocalProvider(load_settings(PROVIDER="local"))
    if config == "old":
        provider.sampling, provider.loop_guard, provider.tool_gate = {}, False, False
        overrides = {"TEMPERATURE": OLD_TEMPERATURE}
    else:
        provider.tool_gate = config == "new"
        overrides = {}
    # Two tool rounds: the old defaults otherwise spend up to 74 s an item calling tools again and again.
    make = lambda **kw: ChatAgent(provider=provider, memory="none", max_tool_iterations=2, **overrides, **kw)  # noqa: E731
    return make(), make(tools=builtin_tools())


def score(item: Item, response: Any) -> bool:
    called = [c.tool for c in response.tool_calls]
    text = response.message
    if item.expect is None:
        return len(text) >= LONG_CHARS and max_sentence_repeats(text) <= 2 and not response.truncated
    found = re.search(item.expect, text, re.IGNORECASE) is not None
    if item.category == "tool":
        return found and "calculator" in called
    if item.category in ("no_tool", "chit_chat"):
        return found and not called
    return found


def evaluate(config: str, quick: bool = False, only: set[str] | None = None) -> Scores:
    plain, tooled = agents(config)
    plain.chat("Hi")  # load the model outside the timings
    scores = Scores()
    seen: Counter[str] = Counter()
    for item in ITEMS:
        seen[item.category] += 1
        if (quick and seen[item.category] > 2) or (only and item.category not in only):
            continue
        uses_tools = item.category in ("tool", "no_tool", "chit_chat")
        started = time.perf_counter()
        response = (tooled if uses_tools else plain).chat(item.prompt)
        scores.seconds += time.perf_counter() - started
        scores.items += 1
        print(f"[{config}] {item.category}: {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
        scores.right[item.category].append(score(item, response))
        repeats = max_sentence_repeats(response.message)
        cut_loop = any(r.get("finish_reason") == "loop" for r in response.trace)
        scores.loops += cut_loop or repeats >= 3
        scores.worst_repeats = max(scores.worst_repeats, repeats)
        scores.truncated += response.truncated or (not cut_loop and _hit_cap(response))
        if uses_tools:
            scores.tool_called.append((item.category == "tool", bool(response.tool_calls)))
    return scores


def _hit_cap(response: Any) -> bool:
    # The old configuration predates ChatResponse.truncated for the cap: read the finish reason.
    return any(r.get("finish_reason") == "length" for r in response.trace if r.get("step") == "model")


def lines(results: dict[str, Scores]) -> list[tuple[str, list[str]]]:
    ran = {category for scores in results.values() for category in scores.right}
    categories = [c for c in dict.fromkeys(item.category for item in ITEMS) if c in ran]
    pct = lambda x: f"{100 * x:.0f}%"  # noqa: E731
    out = [(f"accuracy: {c}", [pct(s.accuracy(c)) for s in results.values()]) for c in categories]
    out += [
        ("accuracy: all", [pct(s.accuracy()) for s in results.values()]),
        ("loop rate", [f"{s.loops}/{s.items}" for s in results.values()]),
        ("most repeats of one sentence in a reply", [str(s.worst_repeats) for s in results.values()]),
        ("truncation rate", [f"{s.truncated}/{s.items}" for s in results.values()]),
        ("tool precision", [pct(s.tool_precision()) for s in results.values()]),
        ("tool recall", [pct(s.tool_recall()) for s in results.values()]),
        ("seconds per item", [f"{s.seconds / max(s.items, 1):.2f}" for s in results.values()]),
    ]
    return out


def table(results: dict[str, Scores]) -> str:
    names = list(results)
    rows = [f"| metric | {' | '.join(names)} |", "|---|" + "---|" * len(names)]
    rows += [f"| {label} | {' | '.join(values)} |" for label, values in lines(results)]
    return "\n".join(rows)


def run(quick: bool) -> list[Row]:
    """Rows for ``bench/run.py``: each metric, old defaults as the peer."""
    results = {name: evaluate(name, quick=quick) for name in CONFIGS}
    return [Row(GROUP, label, new, f"old: {old}; new, every tool offered: {all_tools}")
            for label, (old, all_tools, new) in lines(results)]
