"""Cost group measure: a cascade (``aiforge.Cascade``) against the strong model alone (issue 24).

Three generated labelled tasks (sentiment, topic, a yes/no filter). The strong model is scripted with a known
accuracy (95 % against the generated truth) and billed at gpt-4o's price; the cheap model is a keyword scorer billed
at gpt-4o-mini's price for the prompt and one output token (what scoring labels by log-probabilities costs). Token
counts are the scripted provider's (about four characters a token) over the real prompts. Agreement is measured on
the rows outside the calibration sample, against what the strong model answers on them.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.common import Row

GROUP = "cost"
STRONG_MODEL = "gpt-4o"
CHEAP_MODEL = "gpt-4o-mini"
STRONG_ACCURACY = 0.95
TARGET = 0.9

POSITIVE = "great excellent love wonderful perfect superb delighted recommend".split()
NEGATIVE = "terrible awful hate broken useless disappointed refund-worthy waste".split()
TOPICS = {
    "sports": "match goal coach league striker tournament".split(),
    "politics": "election senate minister policy vote parliament".split(),
    "technology": "software chip startup algorithm cloud smartphone".split(),
    "business": "earnings merger shares revenue investors quarterly".split(),
}
REFUND = "refund money-back reimburse chargeback".split()
NEUTRAL = "the package arrived on tuesday and i opened it in the kitchen after work".split()


@dataclass(frozen=True)
class Task:
    """One labelled task: its rows (text, label), its prompt and labels, and the cheap model's keyword lists."""

    name: str
    prompt: str
    labels: tuple[str, ...]
    keywords: dict[str, list[str]]
    rows: list[tuple[str, str]]


def _text(rng: random.Random, words: list[str]) -> str:
    filler = rng.sample(NEUTRAL, 8)
    for word in words:
        filler.insert(rng.randrange(len(filler) + 1), word)
    return " ".join(filler)


def _rows(rng: random.Random, n: int, keywords: dict[str, list[str]], easy: float) -> list[tuple[str, str]]:
    """Easy rows say their label twice; hard ones once, beside a word of another label (or of none)."""
    rows = []
    labels = list(keywords)
    for _ in range(n):
        label = rng.choice(labels)
        if rng.random() < easy:
            words = rng.sample(keywords[label], 2)
        else:
            decoy = rng.choice([other for other in labels if other != label])
            words = [rng.choice(keywords[label]), *rng.sample(keywords[decoy], rng.choice([0, 1]))]
        rows.append((_text(rng, words), label))
    return rows


def tasks(n: int, seed: int = 24) -> list[Task]:
    """Three tasks of ``n`` rows each, generated reproducibly."""
    rng = random.Random(seed)
    sentiment = {"positive": POSITIVE, "negative": NEGATIVE}
    refund = {"true": REFUND, "false": ["return", "exchange", "repair", "invoice"]}
    return [
        Task("sentiment", "Is this review positive or negative?\n\n{text}", ("positive", "negative"), sentiment,
             _rows(rng, n, sentiment, 0.75)),
        Task("topic", "What is this news snippet about?\n\n{text}", tuple(TOPICS), TOPICS, _rows(rng, n, TOPICS, 0.75)),
        Task("refund filter", "Does this customer ask for their money back?\n\n{text}", ("true", "false"), refund,
             _rows(rng, n, refund, 0.75)),
    ]


def strong_answers(task: Task) -> dict[str, str]:
    """What the strong model answers on each text: the truth, except on a seeded 1 - STRONG_ACCURACY of rows, all
    of them hard ones (a row that says its label twice is easy for a strong model too)."""
    hard = [text for text, label in task.rows if sum(w in task.keywords[label] for w in text.split()) < 2]
    answers = {}
    for text, label in task.rows:
        rng = random.Random(f"strong {text}")
        wrong = text in hard and rng.random() < (1 - STRONG_ACCURACY) * len(task.rows) / len(hard)
        answers[text] = rng.choice([other for other in task.labels if other != label]) if wrong else label
    return answers


def keyword_scores(task: Task) -> Callable[[list[Any]], dict[str, float]]:
    """The cheap model: a softmax over how many of each label's keywords the text holds."""

    def scores(messages: list[Any]) -> dict[str, float]:
        words = messages[-1]["content"].split()
        weights = {label: math.exp(2.0 * sum(w in task.keywords[label] for w in words)) for label in task.labels}
        return weights

    return scores


def _cascade_one(task: Task, sample: int) -> dict[str, Any]:
    import pandas as pd

    from aiforge import Cascade, ChatAgent
    from aiforge.providers.scripted import ScriptedProvider, structured

    answers = strong_answers(task)
    as_value: Callable[[str], Any] = (lambda label: label == "true") if task.labels == ("true", "false") else str
    strong_provider = ScriptedProvider(
        default=lambda messages: structured(as_value(answers[messages[-1]["content"].split("\n\n", 1)[1]])),
        model=STRONG_MODEL,
    )
    cheap_provider = ScriptedProvider(scores=keyword_scores(task), model=CHEAP_MODEL)
    for provider in (strong_provider, cheap_provider):
        provider.free = False  # billed at the models' list prices
    frame = pd.DataFrame({"text": [text for text, _ in task.rows]})
    strong = ChatAgent(provider=strong_provider, memory="none", PROGRESS_BAR=False)
    cheap = ChatAgent(provider=cheap_provider, memory="none", PROGRESS_BAR=False)
    cascade = Cascade(first=cheap, then=strong, target=TARGET, confidence=0.95, sample=sample)
    if task.labels == ("true", "false"):
        batch = frame.aiforge.filter(task.prompt, cascade=cascade).attrs["aiforge"]
    else:
        batch = frame.aiforge.classify(task.prompt, labels=list(task.labels), cascade=cascade).attrs["aiforge"]
    report = batch.cascade
    result = batch.to_dataframe()
    sampled = set(report.sampled)
    texts = frame["text"].tolist()
    got = [str(bool(v)).lower() if as_value is not str else str(v) for v in result["output"]]
    held_out = [i for i in range(len(texts)) if i not in sampled]
    kept = [i for i in held_out if report.answered_by[i] == "first"]
    agree = sum(got[i] == answers[texts[i]] for i in held_out) / len(held_out)
    kept_agree = sum(got[i] == answers[texts[i]] for i in kept) / len(kept) if kept else math.nan
    strong_only = report.then_cost_per_row * len(texts)
    return {
        "report": report,
        "cost": report.first_cost + report.then_cost,
        "strong_only": strong_only,
        "held_out_agreement": agree,
        "kept_agreement": kept_agree,
        "strong_calls": len(strong_provider.calls),
        "rows": len(texts),
    }


def cascade_rows(quick: bool) -> list[Row]:
    """A cascade at target 0.9 against the strong model alone: cost ratio and held-out agreement per task."""
    n, sample = (400, 100) if quick else (1000, 200)
    rows: list[Row] = []
    total_cost = total_strong_only = 0.0
    for task in tasks(n):
        measured = _cascade_one(task, sample)
        report = measured["report"]
        ratio = measured["cost"] / measured["strong_only"]
        total_cost += measured["cost"]
        total_strong_only += measured["strong_only"]
        rows.append(
            Row(
                GROUP,
                f"cascade {task.name} ({n} rows, sample {sample}): cost vs {STRONG_MODEL} alone",
                f"${measured['cost']:.4f}",
                f"${measured['strong_only']:.4f}",
                ratio,
                "<= 0.5x",
                ratio <= 0.5,
                f"{report.by_first} rows by {CHEAP_MODEL}, {measured['strong_calls']} strong calls, threshold "
                f"{report.threshold:.3f}, bound {report.lower_bound:.3f}",
            )
        )
        rows.append(
            Row(
                GROUP,
                f"cascade {task.name}: held-out agreement with {STRONG_MODEL} (kept rows / all rows)",
                f"{measured['kept_agreement']:.3f} / {measured['held_out_agreement']:.3f}",
                target=f">= {TARGET}",
                passed=measured["kept_agreement"] >= TARGET,
            )
        )
    ratio = total_cost / total_strong_only
    rows.append(
        Row(GROUP, f"cascade, all three tasks ({3 * n} rows): cost vs {STRONG_MODEL} alone", f"${total_cost:.4f}",
            f"${total_strong_only:.4f}", ratio, "<= 0.5x", ratio <= 0.5)
    )
    return rows
