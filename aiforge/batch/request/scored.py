"""A batch row with a label output answered by ``Provider.score_labels`` instead of generated (``LABELS_BY``).

Which rows are scored is ``batch.label_scoring``'s decision; this is how one is. The messages are the generated
turn's (system prompt, then the row's prompt); the provider adds its label instruction. The reply is the answer in
the output's wrapped JSON form (``{"value": ...}``, what a generated answer is validated from), so the batch's typed
columns, a checkpoint and the response cache read a scored row as they read a generated one. Its trace is one model
record named ``score_labels`` with every label's probability; ``confidence`` is the answer's.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import pydantic_core

from aiforge.batch.request.outcome import TurnOutcome
from aiforge.core import otel
from aiforge.core.output import WRAPPER_KEY
from aiforge.core.types import CallParams, Completion, LabelScores, Message, TraceRecord

if TYPE_CHECKING:
    from aiforge.batch.request.call import Turn
    from aiforge.providers.base import Provider

SCORE_KIND: Final = "score_labels"
"""The ``name`` of a scored turn's trace record, and the kind its cost is tracked under."""


def label_message(value: Any) -> str:
    """The reply of a scored label row: the output value as a generated answer's wrapped JSON (``{"value": ...}``)."""
    return pydantic_core.to_json({WRAPPER_KEY: value}).decode()


async def scored_outcome(
    turn: Turn, provider: Provider, messages: list[Message], labels: Mapping[str, Any]
) -> TurnOutcome:
    """The outcome of answering ``messages`` with the likeliest of ``labels`` (label text -> output value)."""
    started = time.perf_counter()
    params = turn.params or turn.runtime.params
    telemetry = turn.runtime.telemetry
    if telemetry is None:
        scores = await provider.score_labels(messages, list(labels), params)
        completion, record = _accounted(turn, scores, labels, params, started)
    else:
        with otel.model_scope(telemetry, params, messages, kind=SCORE_KIND) as span:
            scores = await provider.score_labels(messages, list(labels), params)
            completion, record = _accounted(turn, scores, labels, params, started)
            otel.end_model_call(span, telemetry, completion, record["cost"])
    value = labels[scores.answer]
    reply = completion.text
    record["probabilities"] = dict(scores.probabilities)
    return TurnOutcome(
        produced=[{"role": "assistant", "content": reply}],
        reply=reply,
        output=value,
        trace=[record],
        input_tokens=scores.usage.input_tokens,
        output_tokens=scores.usage.output_tokens,
        model=completion.model,
        confidence=scores.confidence,
        label_probabilities=dict(scores.probabilities),
    )


def _accounted(
    turn: Turn, scores: LabelScores, labels: Mapping[str, Any], params: CallParams, started: float
) -> tuple[Completion, TraceRecord]:
    """The scored answer as a call's ``Completion`` (its reply the answer's JSON form), costed and traced."""
    reply = label_message(labels[scores.answer])
    completion = Completion(text=reply, usage=scores.usage, model=scores.model or params.model, finish_reason="stop")
    return completion, turn.account(completion, kind=SCORE_KIND, node="score", started=started)
