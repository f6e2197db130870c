"""Cost group measure: the embedded model as a classifier, label scoring against generation (issue 24).

``label_scoring_vs_generation``: the embedded model (SmolLM2-135M-Instruct, temperature 0) as a classifier,
two ways, on the labelled sets of ``bench/data`` (66 product reviews: positive / negative / neutral; 44
reviews: is it about shipping? yes / no), the same prompt for both:

- generation: ``series.aiforge.classify(prompt, labels, agent=agent, concurrency=1)`` with
  ``LABELS_BY="generation"``, the answer decoded under a grammar of the labels (what ``classify`` did before);
- scoring: ``provider.score_labels([user prompt], labels)``, each label's own tokens read, never generated
  (``aiforge/providers/local/scoring.py``).

Accuracy is the share of rows whose answer is the label; time per row is wall time over the rows, one at a
time. The scoring rows' notes give the other ways of adding up a label's token log-probabilities (mean or
sum, with or without the end of the turn), from the same pass, and how confidence separates right from wrong.

``classify_default_and_calibrated``: ``classify`` as it runs now on the embedded model (scored, the agent's default
system prompt), and with ``calibrate=True`` (each label's mean log-probability over the batch subtracted).
"""

from __future__ import annotations

import asyncio
import csv
import time
from pathlib import Path
from typing import Any

from bench.common import Row

GROUP = "cost"
DATA = Path(__file__).resolve().parent / "data"


def labelled(name: str) -> list[dict[str, str]]:
    with (DATA / name).open(newline="") as file:
        return list(csv.DictReader(file))


TASKS = [
    (
        "sentiment",
        "sentiment_reviews.csv",
        "What is the sentiment of this product review: positive, negative or neutral?\n\nReview: {value}",
        ["positive", "negative", "neutral"],
    ),
    (
        "about shipping",
        "shipping_filter.csv",
        "Is this product review about shipping or delivery? Answer yes or no.\n\nReview: {value}",
        ["yes", "no"],
    ),
]
"""(name, file in bench/data, prompt template, labels): the same prompt for both ways."""

VARIANTS = {"sum + end": (True, False), "sum": (False, False), "mean + end": (True, True), "mean": (False, True)}
"""Ways to add up a label's token log-probabilities: (count the end of the turn, average instead of sum)."""


def _scored(provider: Any, prompts: list[str], labels: list[str]) -> tuple[list[dict[str, list[float]]], float]:
    """Each row's label token log-probabilities, and the wall time of reading them all (what score_labels does)."""
    from aiforge.providers.local.scoring import read_label_logprobs

    async def read_all() -> list[dict[str, list[float]]]:
        loop = asyncio.get_running_loop()
        out = []
        for prompt in prompts:
            messages = [{"role": "user", "content": prompt}]
            found, _ = await loop.run_in_executor(
                provider.engine.executor, read_label_logprobs, provider.engine, messages, labels, provider._error
            )
            out.append(found)
        return out

    started = time.perf_counter()
    found = asyncio.run(read_all())
    return found, time.perf_counter() - started


def _answers(found: list[dict[str, list[float]]], end_of_turn: bool, mean: bool) -> list[tuple[str, float]]:
    from aiforge.core.types import LabelScores
    from aiforge.providers.labels import normalised
    from aiforge.providers.local.scoring import score_of

    out = []
    for row in found:
        scores = {label: score_of(values, end_of_turn=end_of_turn, mean=mean) for label, values in row.items()}
        answer = LabelScores(normalised(scores))
        out.append((answer.answer, answer.confidence))
    return out


def _mean(values: list[float]) -> str:
    return f"{sum(values) / len(values):.2f}" if values else "-"


def _separation(answers: list[tuple[str, float]], truth: list[str]) -> str:
    """How confidence tells right answers from wrong ones: what a cascade's threshold relies on."""
    right = [confidence for (answer, confidence), label in zip(answers, truth, strict=True) if answer == label]
    wrong = [confidence for (answer, confidence), label in zip(answers, truth, strict=True) if answer != label]
    return f"mean confidence right {_mean(right)}, wrong {_mean(wrong)}"


def label_scoring_vs_generation(quick: bool) -> list[Row]:
    import pandas as pd

    from aiforge import ChatAgent
    from aiforge.providers.local import scoring

    # Generation as it was measured: LABELS_BY would have classify score on this provider.
    agent = ChatAgent(provider="local", memory="none", TEMPERATURE=0.0, PROGRESS_BAR=False, LABELS_BY="generation")
    provider = agent.provider
    rows: list[Row] = []
    for name, file, template, labels in TASKS:
        data = labelled(file)
        if quick:
            data = data[:: max(1, len(data) // 6)][:6]
        texts, truth = [row["review"] for row in data], [row["label"] for row in data]
        prompts = [template.format(value=text) for text in texts]
        n = len(data)

        _scored(provider, prompts[:1], labels)  # the model loaded and the labels tokenized before the clock starts
        found, scoring_time = _scored(provider, prompts, labels)
        default = (scoring.COUNT_END_OF_TURN, scoring.LENGTH_NORMALISED)
        accuracy = {}
        for variant, (end, mean) in VARIANTS.items():
            answers = _answers(found, end, mean)
            accuracy[variant] = sum(a == t for (a, _), t in zip(answers, truth, strict=True)) / n
            if (end, mean) == default:
                chosen, separation = variant, _separation(answers, truth)
        others = ", ".join(f"{v} {a:.0%}" for v, a in accuracy.items())

        started = time.perf_counter()
        generated = pd.Series(texts).aiforge.classify(template, labels, agent=agent, concurrency=1)
        generation_time = time.perf_counter() - started
        generation_accuracy = float((generated.astype("string") == pd.Series(truth)).mean())

        rows.append(
            Row(
                GROUP,
                f"embedded classify, {name} ({n} rows): accuracy, scoring vs generation",
                f"{accuracy[chosen]:.0%} ({chosen})",
                f"{generation_accuracy:.0%}",
                note=f"scoring: {others}; {separation}",
            )
        )
        rows.append(
            Row(
                GROUP,
                f"embedded classify, {name} ({n} rows): time per row, scoring vs generation",
                f"{scoring_time / n * 1000:.0f} ms",
                f"{generation_time / n * 1000:.0f} ms",
                (scoring_time / n) / (generation_time / n),
            )
        )
    return rows


def classify_default_and_calibrated(quick: bool) -> list[Row]:
    """``classify`` as a user runs it on the embedded model (scored by default since ``LABELS_BY``, the agent's
    default system prompt), then with ``calibrate=True`` on the same rows (served by the response cache)."""
    import pandas as pd

    from aiforge import ChatAgent

    agent = ChatAgent(provider="local", memory="none", TEMPERATURE=0.0, PROGRESS_BAR=False, CACHE="memory")
    rows: list[Row] = []
    for name, file, template, labels in TASKS:
        data = labelled(file)
        if quick:
            data = data[:: max(1, len(data) // 6)][:6]
        texts, truth = pd.Series([row["review"] for row in data]), pd.Series([row["label"] for row in data])
        started = time.perf_counter()
        scored = texts.aiforge.classify(template, labels, agent=agent, concurrency=1)
        per_row = (time.perf_counter() - started) / len(data)
        calibrated = texts.aiforge.classify(template, labels, agent=agent, concurrency=1, calibrate=True)
        # Not trace[0]: at concurrency=1 a row's first record is its wait for the worker.
        answered_by = {next(s["name"] for s in r.trace if s["step"] != "wait") for r in scored.attrs["aiforge"].results}
        rows.append(
            Row(
                GROUP,
                f"embedded classify default, {name} ({len(data)} rows): accuracy, calibrate=True vs not",
                f"{(calibrated.astype('string') == truth).mean():.0%}",
                f"{(scored.astype('string') == truth).mean():.0%}",
                note=f"{per_row * 1000:.0f} ms per row scored; trace steps {sorted(answered_by)}; "
                f"calibrated rows from the cache: {calibrated.attrs['aiforge'].cached}",
            )
        )
    return rows
