"""What a semantic join asked and spent (``JoinReport``, ``result.attrs["aiforge"]``), each question or row that got
no answer (``JoinFailure``), and the warning that says how many."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

from aiforge.batch.results import BatchResult
from aiforge.core.costs import caller_stacklevel
from aiforge.core.errors import FailedRowsWarning, MissingValueError
from aiforge.core.report import OperationReport


@dataclass(frozen=True, slots=True)
class JoinFailure:
    """A question of the join that got no answer, or a row that was not asked (a missing value)."""

    left: Any
    """The left row's index label (None: a right row not asked)."""
    right: Any
    """The right row's index label (None: a left row's one question over every right row or over its candidates,
    or a left row not asked)."""
    error: BaseException


@dataclass(slots=True, repr=False)
class JoinReport(OperationReport):
    """What a semantic join asked and spent: ``result.attrs["aiforge"]``, an ``OperationReport``."""

    title = "Join"
    strategy: str
    """``"classify"``, ``"candidates"`` or ``"pairs"``: the strategy that ran."""
    k: int | None
    """Candidates per left row, the depth (``"candidates"`` and ``"pairs"`` only; None when a side is empty)."""
    naive_questions: int = field(repr=False)
    """n x m: the pairs of distinct rows a question per pair would have asked."""
    matches: int = 0
    """Matched row pairs in the result."""
    questions: int = 0
    """Distinct questions sent to the model (one per distinct left row, or per proposed pair), the sample's too."""
    chat_requests: int = 0
    """Model requests those questions made (output retries included; none for a cached answer)."""
    embedding_requests: int = 0
    """Embeddings requests sent (``"candidates"`` only)."""
    embedded_texts: int = field(default=0, repr=False)
    """Distinct texts embedded (texts served by the response cache not counted)."""
    embedding_tokens: int = field(default=0, repr=False)
    embedding_cost: float = field(default=0.0, repr=False)
    batch: BatchResult | None = field(default=None, repr=False)
    """The questions' ``BatchResult`` (per-question costs, tokens, failures)."""
    failed: list[JoinFailure] = field(default_factory=list)
    """Every row pair a failed question asked about, and every row not asked (a missing value): none is a "no"."""
    depth_how: str = field(default="", repr=False)
    """How ``k`` was chosen: given (``candidates=``), or from the sample's matches for ``target_recall``."""
    estimated_recall: float | None = None
    """With ``candidates="auto"``: the share of the sample's matches (found among ``k_max`` candidates) that lie
    within the chosen depth; matches deeper than ``k_max`` or missed by the embeddings are not seen by it."""
    recall_interval: tuple[float, float] | None = None
    """A 95 % Wilson interval around ``estimated_recall`` (the sample is small: read the width)."""
    k_max: int | None = field(default=None, repr=False)
    """The depth the sample's rows were asked at (``candidates="auto"``)."""
    sample_questions: int = field(default=0, repr=False)
    """Questions of the sample (also in ``questions``): its rows were asked at ``k_max`` and not again."""
    sample_batch: BatchResult | None = field(default=None, repr=False)
    """The sample's ``BatchResult`` (its rows that failed were asked again with the others, in ``batch``)."""
    dropped_numbers: int = 0
    """Numbers the answers gave that name no listed candidate (0, negative, past the list), and with
    ``multiple=False`` every number after the first: dropped, matched to nothing."""

    @property
    def requests(self) -> int:
        """Chat and embedding requests together."""
        return self.chat_requests + self.embedding_requests

    @property
    def total_cost(self) -> float:
        batches = (self.sample_batch, self.batch)
        return self.embedding_cost + sum(b.total_cost for b in batches if b is not None)

    @property
    def total_tokens(self) -> int:
        batches = (self.sample_batch, self.batch)
        return self.embedding_tokens + sum(b.total_tokens for b in batches if b is not None)

    def shown(self, name: str, value: Any) -> str:
        """``questions`` out of the naive n x m; the sample's estimates to two places."""
        if name == "questions":
            return f"{value} of {self.naive_questions}"
        if name == "estimated_recall":
            return f"{value:.2f}"
        if name == "recall_interval":
            return f"({value[0]:.2f}, {value[1]:.2f})"
        return OperationReport.shown(self, name, value)


def warn_if_failed(report: JoinReport) -> None:
    unanswered = 0 if report.batch is None else len(report.batch.failed)
    missing = sum(isinstance(f.error, MissingValueError) for f in report.failed)
    said = [
        f"{unanswered} question(s) got no answer, so the pairs they ask about are left out, not decided as no match"
    ] * bool(unanswered) + [f"{missing} row(s) with a missing value were not asked"] * bool(missing)
    if said:
        warnings.warn(
            f"join: {'; '.join(said)}: see result.attrs['aiforge'].failed.",
            FailedRowsWarning,
            stacklevel=caller_stacklevel(),
        )
