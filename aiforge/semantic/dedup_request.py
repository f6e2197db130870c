"""What one ``dedup`` call asks, apart from its rows: ``threshold=`` and ``confirm=`` as a similarity ``Band``, the
pair prompt ``prompt=`` asks borderline pairs with, and the confirmation batch's options, as a ``DedupRequest``;
each argument checked, with a ``UsageError`` naming what does not fit.

Which threshold (``dedup_request``): a number given is used (``how="user"``). ``threshold="auto"``, or no threshold
with ``confirm=True``, has the model label a sample of pairs and sets the threshold and the confirmation band from
it for ``target_recall`` (``semantic.dedup_auto``; ``how="auto"``). With neither, the agent decides: a billed chat
model (``Provider.free`` false: OpenAI, Anthropic, a gateway) can judge pairs, so ``"auto"`` is the default; a free
one (the embedded SmolLM2, a local server, the scripted provider) judges too poorly for it to be, and the
embedding model's own threshold is taken, with no chat request (``semantic.dedup_thresholds``; ``how="table"``).
``confirm=False`` keeps the table's threshold with any model. ``threshold="auto"`` with ``confirm=False`` or a band
is a ``UsageError``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiforge.batch.options import DEFAULT_CONCURRENCY
from aiforge.core.templates import RowTemplate
from aiforge.core.types import UsageError

AUTO = "auto"
"""``threshold="auto"``: the model's answers on a sample of pairs set the threshold (``semantic.dedup_auto``)."""
DEFAULT_TARGET_RECALL = 0.95
"""``target_recall=``: the share of the duplicate candidate pairs ``threshold="auto"`` aims to keep."""
DEFAULT_SAMPLE = 100
"""``sample=``: pairs ``threshold="auto"`` asks the model about to choose the threshold (each a request)."""
DEFAULT_THRESHOLD = 0.9
"""Cosine similarity at or above which two texts are duplicates when ``threshold=`` is not given and the embedding
model has no threshold of its own (``semantic.dedup_thresholds``)."""
CONFIRM_BAND = 0.1
"""``confirm=True`` asks the model about pairs within this much below the threshold."""
PAIR_FIELDS = ("left", "right")
CONFIRM_PROMPT = (
    "Are these two texts duplicates: the same request, item or entity, possibly worded differently? "
    "Answer true if they are, false if they only share a topic.\n\nFirst text:\n{left}\n\nSecond text:\n{right}"
)
"""What ``confirm=`` asks of each borderline pair, as a ``bool``; ``prompt=`` replaces it."""


@dataclass(frozen=True)
class Band:
    """Similarity cut-offs: a pair at or above ``accept`` is a duplicate; in ``[ask, accept)`` it is asked."""

    ask: float
    accept: float
    default: bool = field(default=False, compare=False, repr=False)
    """``threshold=`` was not given: ``dedup`` takes the embedding model's (``semantic.dedup_thresholds``)."""

    @property
    def confirms(self) -> bool:
        return self.ask < self.accept

    def for_model(self, model: str) -> Band:
        """This band at ``model``'s own threshold (``semantic.dedup_thresholds``) when none was given, a confirming
        band keeping its width below it; else this band."""
        from aiforge.semantic.dedup_thresholds import default_threshold

        if not self.default:
            return self
        accept = default_threshold(model)
        return Band(round(max(accept - (self.accept - self.ask), 0.0), 6), accept)


@dataclass(frozen=True)
class AutoSettings:
    """``threshold="auto"``'s target and sample size."""

    target_recall: float = DEFAULT_TARGET_RECALL
    sample: int = DEFAULT_SAMPLE


@dataclass(frozen=True)
class DedupRequest:
    """What one ``dedup`` call asks, apart from the rows: the band, the pair prompt, the confirmation's options."""

    band: Band
    prompt: str = CONFIRM_PROMPT
    concurrency: int = DEFAULT_CONCURRENCY
    options: dict[str, Any] = field(default_factory=dict)
    """``run_batch``'s options for the confirmation batch (``cache``, ``max_cost``, ``checkpoint``...)."""
    auto: AutoSettings | None = None
    """``threshold="auto"``: the band is set from the model's answers on a sample (``band`` is a placeholder)."""

    @property
    def judges(self) -> bool:
        """The model is asked about pairs: a confirmation band, or a sample to set the threshold."""
        return self.auto is not None or self.band.confirms

    @property
    def how(self) -> str:
        """How the threshold is chosen: ``"auto"``, ``"table"`` (the embedding model's) or ``"user"``."""
        return "auto" if self.auto is not None else "table" if self.band.default else "user"


def dedup_request(
    threshold: float | str | None,
    confirm: bool | tuple[float, float] | None,
    prompt: str | None,
    concurrency: int,
    options: dict[str, Any],
    target_recall: float = DEFAULT_TARGET_RECALL,
    sample: int = DEFAULT_SAMPLE,
    *,
    judge: bool = False,
) -> DedupRequest:
    """The ``DedupRequest`` of one ``dedup`` call's arguments (module note: which threshold; ``judge``: the agent is a
    billed chat model); a ``UsageError`` naming what does not fit, before anything is embedded.

    >>> dedup_request(None, True, None, 10, {}).how, dedup_request(None, None, None, 10, {}).how
    ('auto', 'table')
    """
    if judge and threshold is None and confirm is None:  # a billed chat model judges pairs by default
        threshold = AUTO
    auto = auto_settings(threshold, confirm, target_recall, sample)
    template = confirm_template(prompt)
    if auto is not None:
        return DedupRequest(Band(1.0, 1.0), template, concurrency, options, auto)
    number = None if isinstance(threshold, str) else threshold
    return DedupRequest(similarity_band(number, confirm or False), template, concurrency, options)


def auto_settings(
    threshold: Any, confirm: bool | tuple[float, float] | None, target_recall: Any, sample: Any
) -> AutoSettings | None:
    """``threshold="auto"``'s settings when the call asks for it (module note), else None; each checked."""
    if isinstance(target_recall, bool) or not isinstance(target_recall, int | float) or not 0 < target_recall <= 1:
        raise UsageError(
            f"dedup: target_recall={target_recall!r} is outside (0, 1]: it is the share of duplicate pairs "
            "threshold='auto' aims to keep, e.g. target_recall=0.95."
        )
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 1:
        raise UsageError(f"dedup: sample={sample!r} is the number of pairs to ask the model, e.g. sample=100.")
    if isinstance(threshold, str) and threshold != AUTO:
        raise UsageError(f"dedup: threshold is a cosine similarity in (0, 1] or 'auto', got {threshold!r}.")
    if threshold == AUTO and confirm is False:
        raise UsageError(
            "dedup: threshold='auto' has the model judge a sample of pairs, and confirm=False says no model: drop "
            "confirm=False, or give a threshold (e.g. threshold=0.9)."
        )
    if threshold == AUTO and isinstance(confirm, tuple | list):
        raise UsageError(
            f"dedup: threshold='auto' sets the confirmation band itself: drop confirm={tuple(confirm)!r}, or give "
            "the band alone."
        )
    if threshold == AUTO or (threshold is None and confirm is True):
        return AutoSettings(float(target_recall), sample)
    return None


def similarity_band(threshold: float | None, confirm: bool | tuple[float, float]) -> Band:
    """The band that ``threshold=`` and ``confirm=`` describe; a ``UsageError`` naming what does not fit.

    >>> similarity_band(0.9, True)
    Band(ask=0.8, accept=0.9)
    """
    if isinstance(confirm, bool):
        accept = _similarity("threshold", DEFAULT_THRESHOLD if threshold is None else threshold)
        return Band(round(max(accept - CONFIRM_BAND, 0.0), 6) if confirm else accept, accept, threshold is None)
    if not isinstance(confirm, tuple | list) or len(confirm) != 2:
        raise UsageError(f"dedup: confirm= is True, False or a band (low, high) like (0.8, 0.9), got {confirm!r}.")
    low, high = _similarity("confirm's low end", confirm[0]), _similarity("confirm's high end", confirm[1])
    if not low < high:
        raise UsageError(f"dedup: confirm=({low}, {high}) must go from low to high, e.g. confirm=(0.8, 0.9).")
    if threshold is not None and threshold != high:
        raise UsageError(
            f"dedup: threshold={threshold} and confirm=({low}, {high}) disagree: with a band, pairs at its high "
            f"end or above are duplicates. Give one: threshold={threshold}, confirm=True, or confirm=({low}, {high})."
        )
    return Band(low, high)


def confirm_template(prompt: str | None) -> str:
    """The pair prompt ``confirm=`` asks with: ``prompt`` checked to name ``{left}`` and ``{right}``, or the default."""
    if prompt is None:
        return CONFIRM_PROMPT
    if not isinstance(prompt, str):
        raise UsageError(f"dedup: prompt= is a template naming {{left}} and {{right}}, got {type(prompt).__name__}.")
    fields = set(RowTemplate(prompt).fields)
    if fields != set(PAIR_FIELDS):
        odd = sorted(fields - set(PAIR_FIELDS))
        named = f" (it names {', '.join(f'{{{name}}}' for name in odd)})" if odd else ""
        raise UsageError(
            "dedup: prompt= is asked of two texts and must name both {left} and {right}, and nothing else"
            f"{named}: e.g. 'Same customer request? {{left}} / {{right}}'."
        )
    return prompt


def _similarity(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"dedup: {name} is a cosine similarity in (0, 1], got {value!r}.")
    if not 0 < value <= 1:
        raise UsageError(
            f"dedup: {name}={value} is outside (0, 1]: a cosine similarity of 1 is the same direction, 0 unrelated "
            "(and every pair would be a candidate). Typical thresholds are 0.85-0.95."
        )
    return float(value)
