"""``CascadeReport``: what a ``run_batch(cascade=...)`` did, on its ``BatchResult`` as ``cascade``."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence


@dataclass(frozen=True, slots=True)
class CascadeReport:
    """What a cascade did (``BatchResult.cascade``): who answered how many rows, the threshold, its bound, the cost."""

    first_model: str
    then_model: str
    answered_by: tuple[str | None, ...] = field(repr=False)  # one per row: the repr gives the counts instead
    """Per input position: ``"first"``, ``"then"``, or None for a row that failed or was never sent."""
    sampled: tuple[int, ...] = field(repr=False)
    """The input positions of the calibration sample (answered by ``then`` unless the reference is ``truth``)."""
    calibrated_on: int
    """Sample rows whose reference answer was known (the statistics' sample size)."""
    reference: str
    """What the cheap answers were checked against: ``"then"`` or ``"truth:<column>"``."""
    threshold: float
    """Cheap answers at or above this confidence were kept; ``math.inf`` when no threshold passed."""
    agreement: float
    """The agreement seen on the calibration rows at or above ``threshold`` (nan when none)."""
    lower_bound: float
    """The Clopper-Pearson lower bound of the agreement seen above ``threshold`` (at ``confidence``); what is
    guaranteed is only that the kept rows' agreement reaches ``target`` with probability ``confidence``."""
    target: float
    confidence: float
    first_cost: float
    """USD spent by the cheap pass (every row scored)."""
    first_tokens: int
    """Tokens the cheap pass used (input and output, every row scored)."""
    then_cost: float
    """USD spent by the strong model (calibration sample included)."""
    then_cost_per_row: float
    """The mean cost of a row the strong model answered (its dry-run estimate when it answered none)."""
    trained_on: int = 0
    """``first="proxy"``: the sample rows the proxy was trained on (cross-fitted: each row trains the models of the
    other folds, and its confidence comes from its own fold's model, which never saw it)."""
    embedding_model: str | None = None
    """``first="proxy"``: the model that embedded the rows (None for a cheap model)."""
    embedding_requests: int = 0
    """``first="proxy"``: embeddings requests sent (each distinct text once)."""
    embedding_cost: float = 0.0
    """``first="proxy"``: USD the embeddings cost (part of ``first_cost``; 0.0 in process)."""

    @property
    def kept_share(self) -> float:
        """The share of the rows the first pass answered (``by_first`` over all rows; nan for none)."""
        return self.by_first / len(self.answered_by) if self.answered_by else math.nan

    def first_requests(self, inputs: Sequence[str]) -> int:
        """Requests of the first pass over a batch of ``inputs`` (one prompt per row): the proxy's embeddings
        requests, or the cheap model's one scoring request per distinct prompt it scored (kept or not)."""
        if self.embedding_model is not None:
            return self.embedding_requests
        return len({inputs[i] for i, by in enumerate(self.answered_by) if by is not None and i < len(inputs)})

    @property
    def by_first(self) -> int:
        return self.answered_by.count("first")

    @property
    def by_then(self) -> int:
        return self.answered_by.count("then")

    @property
    def saved(self) -> float:
        """USD saved against asking the strong model every row (as ``saved`` counts, before dedup): its cost per row
        times the rows it was not sent, minus what the cheap pass cost (negative when the cascade cost more)."""
        return self.then_cost_per_row * self.by_first - self.first_cost

    def __str__(self) -> str:
        bound = (
            f"agreement {self.agreement:.3f} (>= {self.lower_bound:.3f} at {self.confidence:.0%}) above "
            f"{self.threshold:.3f}"
            if math.isfinite(self.threshold)
            else "no threshold reached the target"
        )
        return (
            f"cascade: {self.by_first} rows by {self.first_model}, {self.by_then} by {self.then_model} · {bound}, "
            f"target {self.target:g}, {self.calibrated_on} rows checked against "
            f"{self.then_model if self.reference == 'then' else self.reference} · "
            f"saved ${self.saved:.4f} against {self.then_model} on every row"
        )

    def _repr_html_(self) -> str:
        return f"<div><b>Cascade</b> · {html.escape(str(self).removeprefix('cascade: '))}</div>"
