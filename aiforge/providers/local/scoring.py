"""The embedded model as a classifier: each label's likelihood as the whole answer, read instead of generated.

For each label, the chat prompt (SmolLM2's template, the assistant turn opened) is followed by the
label's own tokens, forced one by one by a grammar of token ids, and llama.cpp reports each forced
token's log-probability under the raw model (``post_sampling_probs`` false: before temperature,
penalties and the grammar). A label's score is the sum over its tokens and the end of the turn
after them; a softmax over the labels makes the probabilities.

Why token ids and not the label's text as a grammar: a text grammar lets the model spell the label
its own way (``n`` ``e`` ... for ``neutral``, whose own single token it prefers less), and scores
that spelling. Why one request per label: llama.cpp's server returns no log-probabilities of the
prompt (no "echo"), only of what it decodes. The prompt is evaluated once; the other labels reuse
its cached state (``cache_prompt``), so a row costs the prompt plus a few tokens per label.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from aiforge.core.types import LabelScores, Message, ProviderError, Usage
from aiforge.providers.labels import normalised, unrepeated_labels, with_label_instruction
from aiforge.providers.local.protocol import chat_messages

if TYPE_CHECKING:
    from aiforge.providers.local.engine import LocalEngine

COUNT_END_OF_TURN = True
"""Add the end of the turn after the label to its score: the model must stop there, which a label that only
begins a likelier answer does not. Measured (``bench/cost.py``, bench/results.md): 66 reviews' sentiment 56%
right with it, 35% without (65 of 66 "positive"); 44 yes/no rows 50% either way."""
LENGTH_NORMALISED = False
"""Score labels by the mean, not the sum, of their tokens' log-probabilities: the same answers when the labels
have as many tokens (both measured sets); the sum is the label's probability, which a cascade's threshold reads."""

TokenLogprobs = dict[str, list[float]]
"""Per label, the log-probability of each of its tokens, then of the end of the turn after them."""


def token_grammar(tokens: Sequence[int]) -> str:
    """A GBNF grammar matching exactly these token ids, in order."""
    return "root ::= " + " ".join(f"<[{token}]>" for token in tokens)


def forced_request(chat: list[dict[str, str]], tokens: Sequence[int]) -> dict[str, Any]:
    """The chat completion that decodes exactly ``tokens``, then the end of the turn, with their log-probabilities."""
    return {
        "messages": chat,
        "grammar": token_grammar(tokens),
        "max_tokens": len(tokens) + 1,  # the end of the turn is the one token the grammar allows after them
        "temperature": 0.0,
        "logprobs": True,
        "top_logprobs": 1,
        "post_sampling_probs": False,
        "cache_prompt": True,
        "stream": False,
    }


def score_of(logprobs: Sequence[float], *, end_of_turn: bool, mean: bool) -> float:
    """One label's score from its token log-probabilities (the last one the end of the turn)."""
    counted = logprobs if end_of_turn else logprobs[:-1]
    return sum(counted) / len(counted) if mean else sum(counted)


def _reply_to(engine: LocalEngine, request: dict[str, Any]) -> dict[str, Any]:
    """llama.cpp's one (non-streamed) answer to ``request``."""
    replies: list[dict[str, Any]] = []

    def keep(reply: dict[str, Any]) -> bool:
        replies.append(reply)
        return False

    engine.generate(request, keep)
    return replies[-1] if replies else {"error": {"message": "llama.cpp sent no reply"}}


def read_label_logprobs(
    engine: LocalEngine,
    messages: list[Message],
    labels: Sequence[str],
    error: Callable[[dict[str, Any]], ProviderError],
) -> tuple[TokenLogprobs, Usage]:
    """Each label's token log-probabilities as the answer to ``messages`` (worker thread), and the usage."""
    chat = chat_messages(with_label_instruction(messages, labels), None)
    found: TokenLogprobs = {}
    prompt_tokens = read_tokens = 0
    for label in labels:
        tokens = engine.tokens_of(label)
        reply = _reply_to(engine, forced_request(chat, tokens))
        if "error" in reply:
            failure = reply["error"]
            raise error(failure if isinstance(failure, dict) else {"message": str(failure)})
        choice: dict[str, Any] = (reply.get("choices") or [{}])[0]
        content: list[dict[str, Any]] = (choice.get("logprobs") or {}).get("content") or []
        ids = [entry.get("id") for entry in content[: len(tokens)]]
        if ids != list(tokens) or len(content) != len(tokens) + 1:
            raise ProviderError(
                f"the embedded model did not decode the label {label!r} as forced (tokens {tokens}, got {ids})",
                provider="local",
            )
        found[label] = [float(entry["logprob"]) for entry in content]
        # The prompt counted once: the other labels read it from the cache.
        prompt_tokens = prompt_tokens or int((reply.get("usage") or {}).get("prompt_tokens") or 0)
        read_tokens += len(content)
    return found, Usage(input_tokens=prompt_tokens, output_tokens=read_tokens)


async def score_by_likelihood(
    engine: LocalEngine,
    messages: list[Message],
    labels: Sequence[str],
    error: Callable[[dict[str, Any]], ProviderError],
) -> LabelScores:
    """``LabelScores`` of ``labels`` as the answer to ``messages``, from the embedded model's likelihoods."""
    checked = unrepeated_labels(labels)
    loop = asyncio.get_running_loop()
    # One job for all labels: nothing else decodes in between, so every label reuses the prompt's cache.
    found, usage = await loop.run_in_executor(engine.executor, read_label_logprobs, engine, messages, checked, error)
    scores = {
        label: score_of(values, end_of_turn=COUNT_END_OF_TURN, mean=LENGTH_NORMALISED)
        for label, values in found.items()
    }
    return LabelScores(probabilities=normalised(scores), usage=usage, model=engine.model_name)
