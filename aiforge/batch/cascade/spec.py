"""``Cascade``: what ``run_batch(cascade=...)`` is asked for (``run`` runs it, ``report`` says what it did).

A cheap model answers every row with a confidence; a calibration sample answered by the strong model (or the
user's own labels) fixes the threshold above which the cheap answers are kept with a stated guarantee
(``threshold``); the other rows go to the strong model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from aiforge.batch.cascade.threshold import fewest_rows
from aiforge.batch.owner import is_batch_owner
from aiforge.core.types import UsageError

if TYPE_CHECKING:
    from aiforge.batch.owner import BatchOwner

LOCAL = "local"
"""``Cascade(first="local")``: the embedded model, asked with the strong agent's system prompt."""
PROXY = "proxy"
"""``Cascade(first="proxy")``: a classifier on the rows' embeddings, trained on the strong model's labels."""


@dataclass(frozen=True)
class Cascade:
    """Answer label rows with a cheap model where it is confident enough, the rest with a strong one.

    ``first`` (an agent, or ``"local"``) scores every row's labels (``Provider.scores_labels``); a random
    sample of ``sample`` rows (``seed``) is answered by ``then`` (the agent ``run_batch`` is called on when
    None), or read from the DataFrame column ``truth`` (the user's labels: no strong call to calibrate). The
    cheap answers are kept down to the lowest confidence threshold at which their agreement with that reference
    is at least ``target`` with probability ``confidence`` (one-sided Clopper-Pearson bound, fixed-sequence
    testing: ``aiforge.batch.cascade.threshold``); every other row goes to ``then``. The result's ``cascade`` is the
    ``CascadeReport``. It pays off when the batch is several times ``sample`` (a batch of ``sample`` rows or fewer
    is all answered by ``then``).

    ``first="proxy"``: no cheap model is asked. Every row is embedded (``EMBEDDING_PROVIDER``) and logistic
    regressions (scikit-learn, in the ``[embeddings]`` extra) are cross-fitted on the sample's reference labels:
    each sample row's confidence comes from a model that never saw it, and every other row is scored by one of
    those models drawn at random (``aiforge.batch.cascade.proxy``).

    Files in the rows (images, PDFs) go to every model as the agent ``run_batch`` is called on sends them: a kind it
    sends as files must be one ``first`` and ``then`` read too, else a ``UsageError`` before any request
    (``FILE_INPUT='text'`` sends PDFs as their text to all); ``first="proxy"`` needs every file sent as text.
    """

    first: BatchOwner | Literal["local", "proxy"]
    then: BatchOwner | None = None
    target: float = 0.9
    confidence: float = 0.95
    sample: int = 200
    truth: str | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("target", "confidence"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
                raise UsageError(f"Cascade({name}=...) must be a number strictly between 0 and 1, got {value!r}")
        if isinstance(self.sample, bool) or not isinstance(self.sample, int) or self.sample < 10:
            raise UsageError(f"Cascade(sample=...) must be an integer >= 10 (rows to calibrate), got {self.sample!r}")
        if not (self.first in (LOCAL, PROXY) or is_batch_owner(self.first)):
            raise UsageError(f'Cascade(first=...) takes an agent (a ChatAgent), "local" or "proxy", got {self.first!r}')
        needed = 2 * fewest_rows(self.target, self.confidence)  # what the first threshold tested keeps
        if self.sample < needed:
            raise UsageError(
                f"Cascade(sample={self.sample}) can never keep a row at target={self.target:g}, "
                f"confidence={self.confidence:g}: the first threshold tested needs {needed} sample rows "
                f"(sample >= {needed}; the default is 200)"
            )
        if self.then is not None and not is_batch_owner(self.then):
            raise UsageError(f"Cascade(then=...) takes an agent (a ChatAgent) or None, got {self.then!r}")
        if self.truth is not None and not isinstance(self.truth, str):
            raise UsageError(f"Cascade(truth=...) names the DataFrame column of your labels, got {self.truth!r}")
