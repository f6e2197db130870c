"""A cascade's cheap pass: the first model scores each row's labels (``Provider.score_labels``), with its bill."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiforge.batch.cascade.spec import LOCAL, PROXY
from aiforge.batch.estimate import ItemPricer, item_pricer
from aiforge.core.types import CallParams, LabelScores, Message, UsageError
from aiforge.providers import builtin_class, create_provider, label_scoring_providers
from aiforge.providers.embedding_choice import embedding_provider_name
from aiforge.providers.sentence_vectors import SENTENCE_TRANSFORMERS

if TYPE_CHECKING:
    from aiforge.batch.owner import BatchOwner
    from aiforge.core.output import OutputSpec
    from aiforge.providers.base import Provider

SCORING_OUTPUT_TOKENS = 1
"""A cascade's cheap model answers one label token per row."""


@dataclass(frozen=True, slots=True)
class ScoredRow:
    """One row's label scores from the cheap model, what they cost and how long they took."""

    scores: LabelScores
    cost: float
    latency_ms: float

    def served_again(self) -> ScoredRow:
        """These scores for a row with the same prompt: no request, no cost."""
        return ScoredRow(self.scores, 0.0, 0.0)


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
            "message": self.message,
            "model": self.model,
            "cost": self.cost,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "latency_ms": self.latency_ms,
            "error": None,
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

    async def score(self, text: str, labels: Sequence[str]) -> ScoredRow:
        """The labels' scores for one row, its cost and latency."""
        messages: list[Message] = [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": text}]
        started = time.perf_counter()
        scores = await self.provider.score_labels(messages, labels, self.params)
        return ScoredRow(scores, self.price(scores), (time.perf_counter() - started) * 1000)


def scorer_of(first: BatchOwner | str, strong: BatchOwner, spec: OutputSpec) -> Scorer:
    """The cheap pass of ``first`` (an agent, or ``"local"`` with ``strong``'s system prompt); a ``UsageError``
    when its provider cannot score labels."""
    if first == LOCAL:
        if not builtin_class(LOCAL).scores_labels:  # read from the class: the weights load only when they can
            raise _cannot_score(LOCAL)
        # The strong agent's MODEL names its own model, which the embedded one would warn it ignores.
        provider = create_provider(strong.settings.model_copy(update={"MODEL": None}), LOCAL)
        system_prompt = strong.request_context.system_prompt
        params = CallParams(model=provider.default_model, output=spec)
        price: Callable[[LabelScores], float] = lambda scores: 0.0  # noqa: E731 - the embedded model is free
    else:
        assert not isinstance(first, str)
        agent = first
        provider, system_prompt = agent.provider, agent.request_context.system_prompt
        params = dataclasses.replace(agent.request_context.params, output=spec)

        def price(scores: LabelScores) -> float:
            return agent.cost_tracker.record(
                scores.usage,
                scores.model or agent.model,
                provider=agent.provider_name,
                kind="score_labels",
                price_overrides=agent.settings.PRICES or None,
                free=provider.free,
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


def first_pass_pricer(first: BatchOwner | str, strong: BatchOwner) -> ItemPricer:
    """What scoring one row costs ``first`` (an agent, ``"local"``, which is free, or ``"proxy"``: embedding it),
    counted before any request."""
    if first == LOCAL:
        model, system_prompt, settings = LOCAL, strong.request_context.system_prompt, strong.settings
        free = builtin_class(LOCAL).free  # read from the class: nothing loads
    elif first == PROXY:  # each row embedded once by the strong agent's embedding provider
        settings, system_prompt = strong.settings, ""
        name = embedding_provider_name(settings, strong.provider_name)
        free, model = name == SENTENCE_TRANSFORMERS, settings.EMBEDDING_MODEL or name
        if not free:
            try:
                embedder = builtin_class(name)
            except KeyError:  # a registered provider: priced by EMBEDDING_MODEL, if that has a price
                pass
            else:
                free = embedder.free
                model = settings.EMBEDDING_MODEL or embedder.default_embedding_model or name
    else:
        assert not isinstance(first, str)
        model, system_prompt, settings = first.model, first.request_context.system_prompt, first.settings
        free = first.provider.free
    return item_pricer(
        model=model,
        system_prompt=system_prompt,
        extras=[],
        max_tokens=SCORING_OUTPUT_TOKENS,
        free=free,
        prices=settings.PRICES,
    )
