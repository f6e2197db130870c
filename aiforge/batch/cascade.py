"""``run_cascade``: a label batch answered by a cheap model where it is confident enough, the rest by a strong one.

1. The cheap model (``Cascade.first``) scores every row's labels (``Provider.score_labels``): an answer and
   its confidence. A row it fails on goes to the strong model.
2. A seeded random sample of the scored rows is answered by the strong model (``then``), or read from the
   user's labels (``truth=``). ``calibration.choose_threshold`` picks the confidence threshold.
3. Rows at or above it keep the cheap answer; the others go to the strong model. A sample row already has
   its strong answer and is never asked again (one the strong model failed on keeps the cheap answer when
   that is at or above the threshold, and stays failed otherwise, as any failed row of a batch).

The strong model runs through ``run_items`` (handed in by the orchestrator: this module does not import it),
so its rows get the cache, concurrency, progress bar and failures of any batch. Checkpoints and budgets are not
combined with a cascade (a ``UsageError`` says so); an estimate lists the cascade among its plans (``plan_table``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiforge.batch.calibration import choose_threshold
from aiforge.batch.cascade_labels import label_of, label_values, truth_labels
from aiforge.batch.cascade_report import CascadeReport
from aiforge.batch.cascade_spec import LOCAL, Cascade
from aiforge.batch.identity import pricer_of
from aiforge.batch.options import BatchOptions
from aiforge.batch.results import BatchResult
from aiforge.batch.savings import CASCADE, Savings
from aiforge.core.errors import MissingValueError
from aiforge.core.progress import progress_bar, progress_enabled
from aiforge.core.templates import batch_prompts
from aiforge.core.types import CallParams, LabelScores, Message, UsageError
from aiforge.providers import builtin_class, create_provider, label_scoring_providers

if TYPE_CHECKING:
    from aiforge.batch.owner import BatchOwner
    from aiforge.core.output import OutputSpec
    from aiforge.providers.base import Provider

RunItems = Callable[["BatchOwner", list[str], BatchOptions], Awaitable[Any]]
"""``orchestrator.run_items``: how the strong model's rows run."""


@dataclass(frozen=True, slots=True)
class CheapAnswer:
    """A row the cheap model answered: a ``BatchItem`` laid out in the strong model's columns."""

    output: Any
    message: str
    model: str
    cost: float
    input_tokens: int
    output_tokens: int
    latency_ms: float
    confidence: float
    columns: dict[str, Any]
    """The strong model's empty row (``failed_row``): which columns this row fills."""
    cached: bool = False

    def to_row(self) -> dict[str, Any]:
        known = {
            "message": self.message, "model": self.model, "cost": self.cost, "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens, "latency_ms": self.latency_ms, "error": None,
            "confidence": self.confidence,
        }
        return {name: known.get(name, value) for name, value in self.columns.items()}


@dataclass(frozen=True, slots=True)
class Scorer:
    """How the cheap model is asked: its provider, the system prompt, the call's parameters, its bill."""

    provider: Provider
    system_prompt: str
    params: CallParams
    price: Callable[[LabelScores], float]

    async def score(self, text: str, labels: Sequence[str]) -> tuple[LabelScores, float, float]:
        """The labels' scores for one row, its cost and latency in milliseconds."""
        messages: list[Message] = [
            {"role": "system", "content": self.system_prompt}, {"role": "user", "content": text}
        ]
        started = time.perf_counter()
        scores = await self.provider.score_labels(messages, labels, self.params)
        return scores, self.price(scores), (time.perf_counter() - started) * 1000


def scorer_of(first: BatchOwner | str, strong: BatchOwner, spec: OutputSpec) -> Scorer:
    """The cheap pass of ``first`` (an agent, or ``"local"`` with ``strong``'s system prompt); a ``UsageError``
    when its provider cannot score labels."""
    if first == LOCAL:
        if not builtin_class(LOCAL).scores_labels:  # read from the class: the weights load only when they can
            raise _cannot_score(LOCAL)
        # The strong agent's MODEL names its own model, which the embedded one would warn it ignores.
        provider = create_provider(strong.settings.model_copy(update={"MODEL": None}), LOCAL)
        system_prompt, params = strong._request_context()[0], CallParams(model=provider.default_model, output=spec)
        price: Callable[[LabelScores], float] = lambda scores: 0.0  # noqa: E731 - the embedded model is free
    else:
        assert not isinstance(first, str)
        agent = first
        provider, system_prompt = agent.provider, agent._request_context()[0]
        params = dataclasses.replace(agent._call_params(), output=spec)

        def price(scores: LabelScores) -> float:
            return agent.cost_tracker.record(
                scores.usage, scores.model or agent.model, provider=agent.provider_name, kind="score_labels",
                price_overrides=agent.settings.PRICES or None, free=provider.free,
            ).cost

    if not provider.scores_labels:
        raise _cannot_score(provider.registry_name)
    return Scorer(provider, system_prompt, params, price)


def _cannot_score(name: str) -> UsageError:
    return UsageError(
        f"Cascade(first=...) must give a confidence with each answer, and the {name} provider cannot score labels; "
        f"use an agent on one that can ({', '.join(label_scoring_providers())}, or any provider whose "
        "scores_labels is True)"
    )


def check_cascade_options(options: BatchOptions) -> None:
    """A ``UsageError`` for the options a cascade does not combine with."""
    for name in ("checkpoint", "max_cost"):
        if getattr(options, name) is not None:
            raise UsageError(f"cascade= does not combine with {name}= yet; run the cascade without it")
    if options.calibrate:
        raise UsageError("cascade= does not combine with calibrate=True: its threshold is set on the scores as given")


async def run_cascade(owner: BatchOwner, items: Any, options: BatchOptions, run_items: RunItems) -> BatchResult:
    """Run ``items`` as ``options.cascade`` says; the ``BatchResult`` has ``cascade`` (a ``CascadeReport``)."""
    cascade = options.cascade
    assert isinstance(cascade, Cascade)
    check_cascade_options(options)
    values = label_values(options.output)
    spec = options.output
    assert spec is not None
    strong = owner if cascade.then is None else cascade.then
    scorer = scorer_of(cascade.first, strong, spec)
    prompts = batch_prompts(items, options.prompt)
    texts = prompts.texts
    if len(texts) > options.max_batch:
        raise UsageError(
            f"run_batch got {len(texts)} items but max_batch={options.max_batch}; "
            f"pass max_batch={len(texts)} to process them all, or split the list"
        )
    truth = truth_labels(items, cascade.truth, values)
    started = time.perf_counter()
    # One text, one answer: a repeated row's scores and strong answer are its first occurrence's (asked once).
    firsts = _first_occurrences(texts) if options.dedup else {i: i for i in range(len(texts))}
    first_of = {i: lead for i, lead in firsts.items() if i not in prompts.missing}
    leads = {i for i, lead in first_of.items() if i == lead}
    shown = progress_enabled(strong.settings.PROGRESS_BAR) and len(leads) > 0
    bar = progress_bar(len(leads), desc=f"cascade: scoring on {scorer.params.model}") if shown else None
    try:
        scored, score_errors = await _score_all(
            scorer, texts, {**prompts.missing, **{i: "" for i in first_of if i not in leads}}, list(values),
            options.concurrency, bar,
        )
    finally:
        if bar is not None:
            bar.close()
    for i, lead in first_of.items():
        if i != lead and lead in scored:
            scored[i] = (scored[lead][0], 0.0, 0.0)
        elif i != lead and lead in score_errors:
            score_errors[i] = score_errors[lead]
    done: dict[int, Any] = {}
    failed: dict[int, BaseException] = {}

    async def ask_strong(positions: list[int]) -> None:
        if not positions:
            return
        batch_options = dataclasses.replace(options, cascade=None, prompt=None, max_batch=len(positions))
        batch: BatchResult = await run_items(strong, [texts[i] for i in positions], batch_options)
        done.update({positions[i]: result for i, result in zip(batch.indices, batch.results, strict=True)})
        failed.update({positions[f.position]: f.error for f in batch.failed})

    # The sample is of rows, as the guarantee is: a text repeated on many rows weighs as many rows.
    eligible = [i for i in sorted(scored) if truth is None or truth[i] is not None]
    sample = sorted(random.Random(cascade.seed).sample(eligible, min(cascade.sample, len(eligible))))
    reference: dict[int, str] = {}
    if truth is None:
        await ask_strong(sorted({first_of[i] for i in sample}))  # each sampled text once, by its first row
        served_again = getattr(strong.result_type(), "served_again", None)
        for i, lead in first_of.items():  # every row of a sampled text takes its strong answer
            if i != lead and lead in done:
                done[i] = done[lead] if served_again is None else served_again(done[lead])
        reference = {i: label_of(done[i].output) for i in sample if i in done}
    else:
        reference = {i: label for i in sample if (label := truth[i]) is not None}
    calibrated = sorted(reference)
    chosen = choose_threshold(
        [scored[i][0].confidence for i in calibrated],
        [scored[i][0].answer == reference[i] for i in calibrated],
        target=cascade.target,
        confidence=cascade.confidence,
    )
    kept = {i for i, (scores, _, _) in scored.items() if scores.confidence >= chosen.threshold}
    answered = kept | done.keys() | failed.keys() | prompts.missing.keys()
    await ask_strong([i for i in range(len(texts)) if i not in answered])

    result = BatchResult(
        strong.result_type(), inputs=texts, wall_time_s=time.perf_counter() - started, index=prompts.index, output=spec,
        plan="cascade",
    )
    columns = strong.result_type().failed_row("")
    answered_by: list[str | None] = [None] * len(texts)
    for i in range(len(texts)):
        if i in done:
            result.results.append(done[i])
            result.indices.append(i)
            answered_by[i] = "then"
        elif i in kept:
            scores, cost, latency = scored[i]
            answer = CheapAnswer(
                values[scores.answer], scores.answer, scores.model, cost, scores.usage.input_tokens * (i in leads),
                scores.usage.output_tokens * (i in leads), latency, scores.confidence, columns,
            )
            result.results.append(answer)
            result.indices.append(i)
            answered_by[i] = "first"
        else:
            why = prompts.missing.get(i)
            result.fail(i, MissingValueError(why) if why is not None else failed.get(i) or score_errors[i])
    result.cascade = CascadeReport(
        first_model=scorer.params.model,
        then_model=strong.model,
        answered_by=tuple(answered_by),
        sampled=tuple(sample),
        calibrated_on=len(calibrated),
        reference="then" if cascade.truth is None else f"truth:{cascade.truth}",
        threshold=chosen.threshold,
        agreement=chosen.agreement,
        lower_bound=chosen.lower_bound,
        target=cascade.target,
        confidence=cascade.confidence,
        first_cost=sum(cost for _, cost, _ in scored.values()),
        first_tokens=sum(
            scored[i][0].usage.input_tokens + scored[i][0].usage.output_tokens for i in leads if i in scored
        ),
        then_cost=sum(r.cost for r in done.values()),
        then_cost_per_row=_cost_per_row(strong, spec, list(done.values()), [texts[i] for i in kept]),
    )
    # The strong model's requests for the rows the cheap one kept; a cascade that cost more saves no dollars.
    report = result.cascade
    saved = report.saved
    result.extra_saved += Savings.of(CASCADE, requests=report.by_first, dollars=saved if saved > 0 else 0.0)
    return result


def _first_occurrences(texts: list[str]) -> dict[int, int]:
    """Each position's first position with the same text."""
    first: dict[str, int] = {}
    return {i: first.setdefault(text, i) for i, text in enumerate(texts)}


async def _score_all(
    scorer: Scorer, texts: list[str], missing: dict[int, str], labels: list[str], concurrency: int, bar: Any = None
) -> tuple[dict[int, tuple[LabelScores, float, float]], dict[int, BaseException]]:
    """Every row's scores, cost and latency by position, with at most ``concurrency`` in flight; and the errors.
    ``bar`` (a progress bar) counts each row scored or failed."""
    scored: dict[int, tuple[LabelScores, float, float]] = {}
    errors: dict[int, BaseException] = {}
    pending = iter([i for i in range(len(texts)) if i not in missing])

    async def worker() -> None:
        for index in pending:  # a fixed pool of workers pulling the next row, as run_batch's
            try:
                scored[index] = await scorer.score(texts[index], labels)
            except Exception as exc:  # noqa: BLE001 - the row goes to the strong model instead
                errors[index] = exc
            if bar is not None:
                bar.update(1)

    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(texts))))))
    if errors and not scored:
        raise next(iter(errors.values()))  # not one row scored: a setup problem, not a row's
    return scored, errors


def _cost_per_row(strong: BatchOwner, spec: OutputSpec, answered: list[Any], kept_texts: list[str]) -> float:
    """What a row costs the strong model: the mean of those it answered (cache hits left out), else its estimate."""
    paid: list[float] = [r.cost for r in answered if not getattr(r, "cached", False)]
    if paid:
        return sum(paid) / len(paid)
    pricer = pricer_of(strong, spec)
    estimates = [pricer.cost(text) or 0.0 for text in kept_texts]
    return sum(estimates) / len(estimates) if estimates else 0.0  # nothing answered nor kept: nothing to price
