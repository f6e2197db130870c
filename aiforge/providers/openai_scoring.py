"""Label scoring over Chat Completions: each label's probability from the first answer token's ``top_logprobs``.

What ``score_labels`` of the ``openai``, ``internal_gateway`` and local-server providers runs.

One request asks for exactly one of the labels (the instruction of ``providers/labels.py``) with
``logprobs``, ``top_logprobs=20`` and one answer token. A label's mass is that of the listed tokens
that begin it and no other label (case and leading space ignored); a label no listed token begins
gets a floor: no more than the least likely token listed, nor than its share of the mass not listed.

When the labels cannot be told apart by their first token (``"no"`` and ``"none"``, or a listed
token that begins several labels and holds more than ``COLLISION_SHARE`` of the labels' mass), the
answer is generated instead under a strict ``json_schema`` whose ``enum`` is the labels, and its
probability is that of the tokens spelling it out in the reply; the other labels share the rest
equally, so an answer no likelier than chance ties them all at ``1 / len(labels)``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from aiforge.core.retry import call_with_retries
from aiforge.core.types import CallParams, LabelScores, Message, ProviderError, Usage
from aiforge.providers.labels import MIN_LOGPROB, normalised, unrepeated_labels, with_label_instruction
from aiforge.providers.openai_completion import usage_from_openai

if TYPE_CHECKING:
    from aiforge.providers.openai_wire import ChatCompletionsProvider

TOP_LOGPROBS = 20
"""The most alternatives Chat Completions lists per token."""
COLLISION_SHARE = 0.05
"""Share of the labels' first-token mass that may sit on tokens beginning several labels before the
answer is generated instead (a larger share would decide the answer by guesswork)."""

TokenEntry = tuple[str, float]
"""A listed token and its log-probability."""


def _key(text: str) -> str:
    return text.lstrip().casefold()


def first_token_scores(entries: Sequence[TokenEntry], labels: Sequence[str]) -> tuple[dict[str, float], float]:
    """Per label, the log of the listed mass beginning only it (or of its floor); and the mass beginning several."""
    keys = {label: _key(label) for label in labels}
    mass = dict.fromkeys(labels, 0.0)
    shared = listed = 0.0
    for token, logprob in dict(entries).items():
        probability = math.exp(logprob) if logprob > MIN_LOGPROB else 0.0
        listed += probability
        begun = [label for label, key in keys.items() if _key(token) and key.startswith(_key(token))]
        if len(begun) == 1:
            mass[begun[0]] += probability
        elif begun:
            shared += probability
    unseen = [label for label, value in mass.items() if value == 0.0]
    if unseen:
        least = min((math.exp(logprob) for _, logprob in entries), default=1.0)
        floor = min(least, max(1.0 - listed, 0.0) / len(unseen))
        mass.update(dict.fromkeys(unseen, floor))
    return {label: math.log(value) if value > 0 else MIN_LOGPROB for label, value in mass.items()}, shared


def _first_token_entries(response: Mapping[str, Any], provider: str) -> list[TokenEntry]:
    """The first answer token and its listed alternatives; ``ProviderError`` when the server sent none."""
    choices = response.get("choices") or [{}]
    content = (choices[0].get("logprobs") or {}).get("content") or []
    if not content:
        raise ProviderError(
            f"the {provider} server returned no logprobs for a request with logprobs=true; it cannot score labels "
            "(use a model or server that returns them, or generate the answer instead)",
            provider=provider,
        )
    first = content[0]
    listed = first.get("top_logprobs") or ()
    return [(first["token"], first["logprob"]), *((top["token"], top["logprob"]) for top in listed)]


def _answer_logprob(content: Sequence[Mapping[str, Any]], text: str, label: str) -> float:
    """The summed log-probability of the reply's tokens that spell ``label`` (its JSON string's inside)."""
    start = text.rfind(json.dumps(label)) + 1
    end, position, total = start + len(json.dumps(label)) - 2, 0, 0.0
    for entry in content:
        token_end = position + len(entry["token"])
        if token_end > start and position < end:
            total += entry["logprob"]
        position = token_end
    return total


def _generated_scores(response: Mapping[str, Any], labels: Sequence[str], provider: str) -> dict[str, float]:
    """Probabilities of ``labels`` from a reply that generated one of them under the enum schema."""
    choices = response.get("choices") or [{}]
    text = (choices[0].get("message") or {}).get("content") or ""
    try:
        answer = json.loads(text)["label"]
    except (ValueError, KeyError, TypeError):
        answer = None
    if answer not in labels:
        raise ProviderError(
            f"the {provider} model answered {text!r}, not one of the labels {list(labels)!r}", provider=provider
        )
    content = (choices[0].get("logprobs") or {}).get("content") or []
    chosen = math.exp(_answer_logprob(content, text, answer)) if content else 1.0 / len(labels)
    rest = (1.0 - chosen) / (len(labels) - 1)
    if chosen <= rest:
        return dict.fromkeys(labels, 1.0 / len(labels))
    return {label: chosen if label == answer else rest for label in labels}


def _enum_format(labels: Sequence[str]) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {"label": {"type": "string", "enum": list(labels)}},
        "required": ["label"],
        "additionalProperties": False,
    }
    return {"type": "json_schema", "json_schema": {"name": "label", "strict": True, "schema": schema}}


async def _post_json(provider: ChatCompletionsProvider, messages: list[Message], request: dict[str, Any]) -> Any:
    """The decoded answer to ``request``, paced, retried and with errors mapped exactly as ``complete``'s."""
    caught = provider._sdk_errors().caught
    pacer = provider._pacer

    async def attempt() -> Mapping[str, Any]:
        reserved = await pacer.acquire(messages, request.get(provider.max_tokens_field))
        try:
            response = provider._json_object(await provider._post(request))
        except caught as exc:
            provider._fail(exc)
        usage = usage_from_openai(response.get("usage"))
        pacer.settle(reserved, usage.input_tokens + usage.output_tokens)
        return response

    return await call_with_retries(attempt, policy=provider.retry_policy)


async def score_by_logprobs(
    provider: ChatCompletionsProvider, messages: list[Message], labels: Sequence[str], params: CallParams
) -> LabelScores:
    """``LabelScores`` of ``labels`` as the answer to ``messages``, from the first answer token's log-probabilities."""
    checked = unrepeated_labels(labels)
    asked = with_label_instruction(messages, checked)
    first_token = replace(params, output=None, max_tokens=1, temperature=0.0)
    usage = Usage()
    if not _prefix_of_another(checked):
        request = {**provider._request(asked, None, first_token), "logprobs": True, "top_logprobs": TOP_LOGPROBS}
        response = await _post_json(provider, asked, request)
        scores, shared = first_token_scores(_first_token_entries(response, provider.name), checked)
        usage = usage_from_openai(response.get("usage"))
        if shared <= COLLISION_SHARE * sum(math.exp(value) for value in scores.values()):
            return LabelScores(probabilities=normalised(scores), usage=usage, model=response.get("model") or "")
    longest = max(len(label) for label in checked)
    generate = replace(first_token, max_tokens=16 + longest)  # the JSON around the label, a token per character
    request = {**provider._request(asked, None, generate), "logprobs": True, "response_format": _enum_format(checked)}
    response = await _post_json(provider, asked, request)
    return LabelScores(
        probabilities=_generated_scores(response, checked, provider.name),
        usage=usage + usage_from_openai(response.get("usage")),
        model=response.get("model") or "",
    )


def _prefix_of_another(labels: Sequence[str]) -> bool:
    """True when a label begins another (``no``, ``none``): every token of the one begins both."""
    keys = [_key(label) for label in labels]
    return any(a != b and b.startswith(a) for a in keys for b in keys)
