"""What every provider's ``score_labels`` shares: the labels checked, the instruction, the normalisation."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from aiforge.core.types import Message, UsageError

MIN_LOGPROB = -9999.0
"""What an impossible or unreadable log-probability counts as (OpenAI's own value for "very unlikely")."""


def unrepeated_labels(labels: Sequence[str]) -> list[str]:
    """``labels`` as a list, or ``UsageError`` naming what is wrong: fewer than two, blank, not text, or repeated
    (a label given twice is refused, not dropped: ``core.labels.checked_labels`` drops repeats of a user's list)."""
    if isinstance(labels, str) or not isinstance(labels, Sequence):
        raise UsageError(f"labels must be a list of strings, got {type(labels).__name__}: {labels!r}")
    out = list(labels)
    if len(out) < 2:
        raise UsageError(f"score_labels needs at least two labels to choose between, got {out!r}")
    seen: dict[str, str] = {}
    for label in out:
        if not isinstance(label, str) or not label.strip():
            raise UsageError(f"every label must be a non-blank string, got {label!r} in {out!r}")
        if label != label.strip():
            raise UsageError(f"label {label!r} has surrounding whitespace; pass {label.strip()!r}")
        key = label.casefold()
        if key in seen:
            raise UsageError(f"labels {seen[key]!r} and {label!r} are the same answer; pass each label once")
        seen[key] = label
    return out


def label_instruction(labels: Sequence[str]) -> str:
    """The sentence that asks for exactly one of ``labels`` as the whole answer."""
    return "Answer with exactly one of these labels and nothing else: " + ", ".join(labels) + "."


def with_label_instruction(messages: list[Message], labels: Sequence[str]) -> list[Message]:
    """``messages`` with the label instruction at the end of the system message (one is added if none)."""
    if not messages:
        raise UsageError("score_labels needs the messages to answer; got none")
    instruction = label_instruction(labels)
    first = messages[0]
    if first["role"] == "system":
        system: Message = {"role": "system", "content": f"{first['content'].rstrip()}\n\n{instruction}".lstrip()}
        return [system, *messages[1:]]
    return [{"role": "system", "content": instruction}, *messages]


def normalised(logprobs: Mapping[str, float]) -> dict[str, float]:
    """Probabilities summing to 1 from unnormalised log-probabilities (a softmax), in the same order."""
    finite = {label: value if value >= MIN_LOGPROB else MIN_LOGPROB for label, value in logprobs.items()}  # -inf, NaN
    top = max(finite.values())
    weights = {label: math.exp(value - top) for label, value in finite.items()}
    total = sum(weights.values())
    return {label: weight / total for label, weight in weights.items()}
