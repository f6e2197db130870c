"""Semantic group: ``dedup(threshold="auto")`` on real vectors (issue 32): precision, recall and requests.

Two planted sets, embedded by all-MiniLM-L6-v2 (sentence-transformers, the ``[embeddings]`` extra): ``bench/
paraphrased_bugs.py``' 81 bug titles (36 bugs, each in 2-3 people's own words, beside other bugs of the same
features), and in a full run ``semantic_dedup.planted_tickets``' 2 000 templated tickets (400 rewordings by small
edits among tickets that differ only in a name or a number: MiniLM's table threshold merges them). Two judges
answer the sample and the confirmation pairs:

- a perfect judge: the scripted provider answering from the planted truth (the two titles are one bug). It shows
  what the sampling and the band reach when the model is right, not what a real model answers;
- the embedded SmolLM2-135M (``provider="local"``), a real but very small model, when its weights are installed
  (full run, on the bug titles only: a few minutes on 2 cores).

Pairwise precision and recall of the groups against the planted bugs (pairs of rows in one group), beside the
table's threshold (0.65, no model request), and the estimates the report gives with their intervals.
"""

from __future__ import annotations

import re
import time
import warnings
from typing import Any

from bench.common import Row
from bench.dedup_thresholds import paraphrased_bugs
from bench.semantic_dedup import _pairs_of, _scores

GROUP = "semantic"
PAIR = re.compile(r"First text:\n(.*)\n\nSecond text:\n(.*)$", re.S)


def truth_judge(numbers: dict[str, int]) -> Any:
    """The scripted reply: "true" when the pair's two titles are one planted bug (a perfect judge)."""

    def judge(messages: list[Any]) -> str:
        found = PAIR.search(messages[-1]["content"])
        if found is None:
            return "false"
        left, right = found.group(1).strip(), found.group(2).strip()
        return "true" if numbers.get(left, -1) == numbers.get(right, -2) else "false"

    return judge


def _judges(numbers: dict[str, int], local: bool) -> list[tuple[str, Any]]:
    from aiforge import ChatAgent
    from aiforge.providers.local.weights import find_default_weights, xllamacpp_installed
    from aiforge.providers.scripted import ScriptedProvider

    minilm = {"EMBEDDING_PROVIDER": "sentence-transformers", "PROGRESS_BAR": False}
    judges: list[tuple[str, Any]] = [
        (
            "a perfect judge (planted truth)",
            ChatAgent(provider=ScriptedProvider(default=truth_judge(numbers)), **minilm),
        )
    ]
    if local and xllamacpp_installed() and find_default_weights() is not None:
        judges.append(("the embedded SmolLM2-135M as judge", ChatAgent(provider="local", **minilm)))
    return judges


def auto_rows(quick: bool) -> list[Row]:
    """``threshold="auto"`` on the planted sets per judge, beside the table's threshold (module note)."""
    from aiforge.providers.sentence_vectors import bundled_model_zip, sentence_transformers_installed

    if not sentence_transformers_installed() or bundled_model_zip() is None:
        return []
    from bench.semantic_dedup import planted_tickets

    sets = {"paraphrased bug titles": paraphrased_bugs()}
    if not quick:
        sets["planted tickets"] = planted_tickets()
    rows = []
    for label, (texts, numbers) in sets.items():
        rows += _set_rows(label, texts, numbers, local=not quick and label != "planted tickets")
    return rows


def _set_rows(label: str, texts: list[str], numbers: list[int], local: bool) -> list[Row]:
    import pandas as pd

    truth = _pairs_of(numbers)
    values = pd.Series(texts)
    rows = []
    for judge, agent in _judges(dict(zip(texts, numbers, strict=True)), local):
        table = _table(values, agent, truth)
        for target in (0.95, 0.9):
            started = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ids = values.aiforge.dedup("auto", target_recall=target, agent=agent, cache=False)
            seconds = time.perf_counter() - started
            report = ids.attrs["aiforge"]
            auto = report.auto
            precision, recall = _scores(_pairs_of(ids.tolist()), truth)
            rows.append(
                Row(
                    GROUP,
                    f"dedup threshold='auto', target_recall={target}, MiniLM, {len(texts)} {label}, {judge}",
                    f"precision {precision:.1%}, recall {recall:.1%}; {report.sampling_requests} + "
                    f"{report.confirmation_requests} requests",
                    f"table threshold 0.65, no request: precision {table}",
                    None,
                    "",
                    None,
                    note=f"threshold {report.threshold:.3f}, bound {auto.bound:.3f} (pairs in between confirmed); "
                    f"{auto.candidates} candidate pairs, {auto.sample} sampled, {auto.positives} said duplicates, "
                    f"{len(report.failed)} failed; estimated recall {_estimate(auto.recall, auto.recall_interval)}, "
                    f"precision {_estimate(auto.precision, auto.precision_interval)} "
                    "(of candidate pairs: median and 95 % "
                    f"interval of the simulation; weighted recall {auto.weighted_recall:.2f}); "
                    f"{report.sampling_requests} requests for the sample, "
                    f"{report.confirmation_requests} to confirm ({auto.reused} band pairs answered by the sample); "
                    f"{seconds:.1f} s",
                )
            )
    return rows


def _table(values: Any, agent: Any, truth: set[tuple[int, int]]) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ids = values.aiforge.dedup(agent=agent, cache=False)
    precision, recall = _scores(_pairs_of(ids.tolist()), truth)
    return f"{precision:.1%}, recall {recall:.1%}"


def _estimate(value: float | None, interval: tuple[float, float] | None) -> str:
    if value is None or interval is None:
        return "none"
    return f"{value:.2f} [{interval[0]:.2f}-{interval[1]:.2f}]"


if __name__ == "__main__":
    import sys

    for row in auto_rows(quick="--quick" in sys.argv):
        print(row.benchmark, "|", row.aiforge, "|", row.peer, "|", row.note)
