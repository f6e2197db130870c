"""Semantic group: which ``dedup`` threshold each embedding model needs (issue 32; ``semantic.dedup_thresholds``).

Two planted sets, each deduplicated as ``dedup`` does (``near_duplicates.group_texts``: a text joins a group when it
is at or above the threshold with the group's first text) at every threshold from 0.50 to 0.99 in steps of 0.01;
pairwise precision, recall and F1 against the planted groups:

- ``paraphrased bugs``: 81 bug titles, 36 bugs each reported in 2-3 people's own words (``bench/paraphrased_bugs.py``:
  other words and order, what a real duplicate looks like), beside other bugs of the same features;
- ``planted tickets``: ``semantic_dedup.planted_tickets``' 2 000 templated tickets, 400 rewordings by small edits
  (a synonym, a typo, "please" added), among tickets that share most of their words (near-copies, not paraphrases).

Models: all-MiniLM-L6-v2 (sentence-transformers, the ``[embeddings]`` extra), the embedded SmolLM2-135M's pooled
vectors, and the scripted provider's hashed words. The row gives the threshold of best F1 on each set and the F1 at
0.9 (the old fixed default) and at the model's entry in ``DEDUP_THRESHOLDS``. Each model is skipped when not
installed; SmolLM2 on the 2 000 tickets only in a full run (minutes on 2 cores).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bench.common import Row
from bench.paraphrased_bugs import PARAPHRASED_BUGS
from bench.semantic_dedup import _pairs_of, _scores, planted_tickets

GROUP = "semantic"
THRESHOLDS = [round(0.5 + step / 100, 2) for step in range(50)]


def paraphrased_bugs() -> tuple[list[str], list[int]]:
    """The titles and each one's bug number."""
    texts = [title for group in PARAPHRASED_BUGS for title in group]
    numbers = [number for number, group in enumerate(PARAPHRASED_BUGS) for _ in group]
    return texts, numbers


def f1_by_threshold(vectors: Any, numbers: list[int]) -> dict[float, tuple[float, float, float]]:
    """Precision, recall and F1 of ``dedup``'s grouping of ``vectors`` at each of ``THRESHOLDS``."""
    from aiforge.semantic.near_duplicates import Band, group_texts

    truth = _pairs_of(numbers)
    texts = [str(n) for n in range(len(numbers))]
    scores = {}
    for threshold in THRESHOLDS:
        roots, _ = group_texts(texts, vectors, Band(threshold, threshold))
        precision, recall = _scores(_pairs_of(roots.tolist()), truth)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        scores[threshold] = (precision, recall, f1)
    return scores


def _agents() -> list[tuple[str, Callable[[], Any]]]:
    from aiforge import ChatAgent
    from aiforge.providers.local.weights import find_default_weights, xllamacpp_installed
    from aiforge.providers.sentence_vectors import bundled_model_zip, sentence_transformers_installed

    found: list[tuple[str, Callable[[], Any]]] = []
    if sentence_transformers_installed() and bundled_model_zip() is not None:
        found.append(
            (
                "all-MiniLM-L6-v2",
                lambda: ChatAgent(provider="scripted", EMBEDDING_PROVIDER="sentence-transformers", PROGRESS_BAR=False),
            )
        )
    if xllamacpp_installed() and find_default_weights() is not None:
        found.append(
            (
                "SmolLM2-135M-Instruct",
                lambda: ChatAgent(provider="local", EMBEDDING_PROVIDER="local", PROGRESS_BAR=False),
            )
        )
    found.append(("scripted", lambda: ChatAgent(provider="scripted", PROGRESS_BAR=False)))
    return found


def threshold_rows(quick: bool) -> list[Row]:
    """The best threshold per model and set, and F1 at 0.9 and at the table's default (module note)."""
    import warnings

    from aiforge.semantic.dedup_thresholds import default_threshold
    from aiforge.semantic.embeddings import run_embeddings

    sets = {"paraphrased bugs": paraphrased_bugs(), "planted tickets": planted_tickets()}
    rows = []
    for model, make in _agents():
        agent = make()
        for label, (texts, numbers) in sets.items():
            if quick and label == "planted tickets" and model == "SmolLM2-135M-Instruct":
                continue
            started = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run = run_embeddings(agent, texts, cache=False)
            seconds = time.perf_counter() - started
            scores = f1_by_threshold(run.vectors, numbers)
            best = max(scores, key=lambda t: (scores[t][2], -t))
            table = default_threshold(run.model)
            precision, recall, f1 = scores[best]
            rows.append(
                Row(
                    GROUP,
                    f"dedup threshold for {model}, {label} ({len(texts)} texts)",
                    f"best F1 {f1:.2f} at {best} (P {precision:.2f} R {recall:.2f})",
                    "",
                    None,
                    "",
                    None,
                    note=f"F1 at 0.9: {scores[0.9][2]:.2f} (P {scores[0.9][0]:.2f} R {scores[0.9][1]:.2f}); at the "
                    f"table's {table}: {scores[table][2]:.2f} (P {scores[table][0]:.2f} R {scores[table][1]:.2f}); "
                    f"F1 >= 0.9 x best from {_plateau(scores)}; embedding took {seconds:.1f} s",
                )
            )
    return rows


def _plateau(scores: dict[float, tuple[float, float, float]]) -> str:
    """The thresholds whose F1 is within 90 % of the best, as a range."""
    best = max(f1 for _, _, f1 in scores.values())
    near = [t for t, (_, _, f1) in scores.items() if f1 >= 0.9 * best]
    return f"{min(near)} to {max(near)}"


if __name__ == "__main__":
    for row in threshold_rows(quick=False):
        print(row.benchmark, "|", row.aiforge, "|", row.note)
