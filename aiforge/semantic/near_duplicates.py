"""Near-duplicate rows of a text column: embeddings block, the model confirms the borderline pairs if asked.

(Not ``batch/dedup.py``, which asks rows with the *same prompt* once inside one batch.) Rows are grouped in three
steps, and each row gets the index label of its group's first row (``duplicate_of``; so ``df[ids == ids.index]``
keeps one row per group, and ``df.groupby(ids)`` gathers each group):

1. Exact duplicates: rows with the same text are one group before anything is embedded (each distinct text is
   embedded once), so they always share an id, at any threshold.
2. Blocking: each distinct text, in order, is compared with the groups' first texts so far (``similarity.
   leader_groups``, in tiles of 2048 x 2048: 16 MiB at a time, never n x n). A text whose similarity with one of
   them is at or above ``threshold`` is its duplicate and joins that group (the most similar one's); any other
   text starts a group.
3. Confirmation (``confirm=``): a text that started a group no other text joined, and is in the band ``[low,
   high)`` below the threshold with an earlier group's first text, is asked to the model with it as one ``bool``
   row of a ``run_batch`` over pair prompts (``{left}`` and ``{right}``). It joins the most similar group whose
   first text the model confirms, unless that text has just joined another group itself. ``confirm=True`` is the
   band ``[threshold - CONFIRM_BAND, threshold)``. A band holding more than ``MAX_BORDERLINE`` such pairs is a
   ``UsageError`` before any request: that many calls is rarely meant, and it bounds the pairs kept in memory.

Groups never chain: every row of a group is a duplicate of the row it names (a similarity at or above the
threshold, or a pair the model confirmed), so one false pair adds one row to a group, never two groups together.
Two members of a group need not be duplicates of each other, and which text a group starts from follows the
order of the rows. A missing value (None, NaN) is a group of its own: there is nothing to compare. On a chat
model's pooled vectors (the embedded model's) it warns first (``batch.embedded.ChatModelVectorsWarning``).

What a call asks (``threshold=``, ``confirm=``, ``prompt=`` as a ``Band`` and a ``DedupRequest``) is
``semantic.dedup_request``; its names are importable from here too. ``threshold="auto"`` (and no threshold with
``confirm=True``) sets the band from the model's answers on a stratified sample of pairs first
(``semantic.dedup_auto``): confirmation pairs the sample answered are not asked again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from aiforge.batch.identity import check_budget_enforceable
from aiforge.core.report import OperationReport
from aiforge.core.types import UsageError
from aiforge.semantic.dedup_auto import ask_pairs as ask_pairs
from aiforge.semantic.dedup_auto import auto_band
from aiforge.semantic.dedup_request import CONFIRM_BAND as CONFIRM_BAND
from aiforge.semantic.dedup_request import CONFIRM_PROMPT as CONFIRM_PROMPT
from aiforge.semantic.dedup_request import DEFAULT_THRESHOLD as DEFAULT_THRESHOLD
from aiforge.semantic.dedup_request import AutoSettings as AutoSettings
from aiforge.semantic.dedup_request import Band as Band
from aiforge.semantic.dedup_request import DedupRequest as DedupRequest
from aiforge.semantic.dedup_request import confirm_template as confirm_template
from aiforge.semantic.dedup_request import dedup_request as dedup_request
from aiforge.semantic.dedup_request import similarity_band as similarity_band
from aiforge.semantic.distinct import DistinctTexts, embed_distinct
from aiforge.semantic.similarity import BandOverflow, leader_groups, unit_rows

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from aiforge.batch.results import BatchFailure, BatchResult
    from aiforge.chat.agent import ChatAgent
    from aiforge.semantic.dedup_auto import AutoEstimate
    from aiforge.semantic.embeddings import EmbeddingReport, EmbeddingRun

DUPLICATE_OF = "duplicate_of"
"""The name of ``dedup``'s Series: each row's group, as the index label of the group's first row (of which the row
is a duplicate)."""
MAX_BORDERLINE = 200_000
"""The most pairs ``confirm=`` asks about in one call (each is a request)."""
PairAsker = Callable[[list[tuple[str, str]]], list[bool]]
"""Borderline pairs of texts -> whether each is a duplicate (the model's answer; False for a failed pair)."""


@dataclass(repr=False)
class DedupReport(OperationReport):
    """What one ``dedup`` did and spent, kept in its result's ``.attrs["aiforge"]``: an ``OperationReport``
    (``core.report``)."""

    title = "Dedup"

    rows: int
    distinct: int
    """Distinct texts embedded and compared (exact duplicates and missing values are not)."""
    band: Band
    similar: int = 0
    """Distinct texts that joined a group without asking: at or above the threshold with its first text."""
    borderline: int = 0
    """Pairs of groups' first texts in the confirmation band (0 without ``confirm=``)."""
    asked: int = 0
    """Borderline pairs asked to the model: those whose later text no other text had joined."""
    confirmed: int = 0
    """Asked pairs the model said are duplicates (a text confirmed with several groups joins one)."""
    groups: int = 0
    """Distinct ids among the rows."""
    embedding: EmbeddingReport | None = field(default=None, repr=False)
    """What embedding the distinct texts cost: requests, tokens, USD, cache hits (None: nothing to embed)."""
    confirmation: BatchResult | None = field(default=None, repr=False)
    """The ``run_batch`` over the asked pairs, with each pair's answer, cost and failures."""
    pairs: list[tuple[int, int]] = field(default_factory=list, repr=False)
    """The asked pairs as positions of rows (each pair's first rows), in the order of ``confirmation``."""
    threshold: float = field(default=0.0, repr=False)
    """The threshold: given or the table's (``band.accept``; a confirmation band lies below it), or chosen by
    ``threshold="auto"`` (``band.ask``: no pair below it joins; those up to ``auto.bound`` are confirmed)."""
    how: str = field(default="user", repr=False)
    """How it was chosen: ``"user"`` (given), ``"table"`` (the embedding model's), ``"auto"`` (from a sample)."""
    auto: AutoEstimate | None = field(default=None, repr=False)
    """``threshold="auto"``: the sample, its answers, the estimated precision and recall with their intervals."""

    def shown(self, name: str, value: Any) -> str:
        """The band as the similarities it spans: ``[ask, accept)`` asked, ``accept`` and up taken unasked."""
        if name == "band":
            return f"[{value.ask:.3g}, {value.accept:.3g})"
        return OperationReport.shown(self, name, value)

    @property
    def sampling_requests(self) -> int:
        """Requests of ``threshold="auto"``'s sample (0 otherwise)."""
        sampling = self.auto.sampling if self.auto is not None else None
        return sampling.requests if sampling is not None else 0

    @property
    def confirmation_requests(self) -> int:
        """Requests of the confirmation batch (0 without one)."""
        return self.confirmation.requests if self.confirmation is not None else 0

    @property
    def batches(self) -> list[BatchResult]:
        """The sample's batch (``threshold="auto"``) and the confirmation's, those that ran."""
        sampling = self.auto.sampling if self.auto is not None else None
        return [batch for batch in (sampling, self.confirmation) if batch is not None]

    @property
    def total_cost(self) -> float:
        """USD of the embeddings, the sample and the confirmation batch."""
        embedding = self.embedding.cost if self.embedding is not None else 0.0
        return embedding + sum(batch.total_cost for batch in self.batches)

    @property
    def total_tokens(self) -> int:
        """Tokens of the embeddings, the sample and the confirmation batch."""
        embedding = self.embedding.usage.total_tokens if self.embedding is not None else 0
        return embedding + sum(batch.total_tokens for batch in self.batches)

    @property
    def requests(self) -> int:
        """Embeddings requests, the sample's and the confirmation batch's."""
        embedding = self.embedding.requests if self.embedding is not None else 0
        return embedding + sum(batch.requests for batch in self.batches)

    @property
    def failed(self) -> list[BatchFailure]:
        """The sample's failed pairs (left out of the estimates), then the confirmation's (each counts as not a
        duplicate; ``confirmation.failed``)."""
        return [failure for batch in self.batches for failure in batch.failed]


def duplicate_ids(values: pd.Series, agent: ChatAgent, request: DedupRequest) -> tuple[pd.Series, DedupReport]:
    """``DUPLICATE_OF`` of each row of ``values`` (on its index) and the report: embeds, blocks, confirms.

    >>> ids, report = duplicate_ids(pd.Series(["refund please", "Refund, please!", "new card"]), agent,
    ...                             DedupRequest(similarity_band(0.9, False)))
    >>> ids.tolist()
    [0, 0, 2]
    """
    from aiforge.batch.embedded import warn_if_chat_model_vectors
    from aiforge.semantic.embeddings import embedding_provider_of

    check_unique_index(values.index)
    if request.judges:  # before the embeddings' requests
        check_budget_enforceable(agent, request.options.get("max_cost"))
    warn_if_chat_model_vectors(embedding_provider_of(agent)[0], "dedup")
    distinct = DistinctTexts.of(values)
    vectors, embedding = embed_distinct(agent, distinct.texts, request.options.get("cache"))
    return ids_from_vectors(values.index, distinct, vectors, request, agent, embedding)


def ids_from_vectors(
    index: pd.Index,
    distinct: DistinctTexts,
    vectors: np.ndarray,
    request: DedupRequest,
    agent: ChatAgent | None,
    embedding: EmbeddingRun | None = None,
) -> tuple[pd.Series, DedupReport]:
    """``DUPLICATE_OF`` of each row from the embeddings of its distinct texts; ``agent`` asks borderline pairs."""
    import numpy as np
    import pandas as pd

    estimate, how = None, request.how
    if request.auto is not None:
        estimate = auto_band(distinct.texts, vectors, request, agent)
        request = replace(request, band=Band(estimate.threshold, estimate.bound))
    elif embedding is not None:  # no threshold given: the embedding model's own
        request = replace(request, band=request.band.for_model(embedding.model))
    batches: list[BatchResult] = []
    known = estimate.answers if estimate is not None else {}
    number = {text: position for position, text in enumerate(distinct.texts)} if known else {}
    sent: list[int] = []  # positions of the band's pairs the confirmation batch asks

    def ask(pairs: list[tuple[str, str]]) -> list[bool]:
        if agent is None:
            raise ValueError("borderline pairs to confirm but no agent to ask them")
        keys = [(number[left], number[right]) if known else (0, 0) for left, right in pairs]
        sent.extend(position for position, key in enumerate(keys) if key not in known)
        options = dict(request.options)
        if estimate is not None and estimate.sampling is not None and options.get("max_cost") is not None:
            options["max_cost"] = max(float(options["max_cost"]) - estimate.sampling.total_cost, 0.0)
        answers = [known.get(key, False) for key in keys]
        if sent:
            asked, batch = ask_pairs(agent, [pairs[p] for p in sent], request.prompt, request.concurrency, options)
            batches.append(batch)
            for position, answer in zip(sent, asked, strict=True):
                answers[position] = answer
        return answers

    roots, report = group_texts(distinct.texts, vectors, request.band, ask)
    if estimate is not None:
        estimate.reused = len(report.pairs) - len(sent)
        report.pairs = [report.pairs[position] for position in sent]
        report.asked = len(report.pairs)
    report.threshold = estimate.threshold if estimate is not None else request.band.accept
    report.how, report.auto = how, estimate
    positions = np.arange(len(index))
    texted = distinct.of_row >= 0
    positions[texted] = distinct.first_rows[roots[distinct.of_row[texted]]]
    ids = pd.Series(index.take(positions), index=index, name=DUPLICATE_OF)
    report.rows = len(index)
    report.groups = int(ids.nunique())
    report.embedding = embedding.report() if embedding is not None else None
    report.confirmation = batches[0] if batches else None
    report.pairs = [(int(distinct.first_rows[left]), int(distinct.first_rows[right])) for left, right in report.pairs]
    return ids, report


def check_unique_index(index: pd.Index) -> None:
    """Returns if ``index`` has no repeated label: ``dedup``'s ids are labels, so two rows must not share one."""
    if not index.is_unique:
        repeated = index[index.duplicated()][0]
        raise UsageError(
            f"dedup gives each row the index label of its group's first row, and the index repeats {repeated!r}: "
            "call it on df.reset_index() (or give the frame a unique index)."
        )


def group_texts(
    texts: Sequence[str], vectors: np.ndarray, band: Band, ask: PairAsker | None = None
) -> tuple[np.ndarray, DedupReport]:
    """Each distinct text's group (the number of its group's first text, its representative) from its ``vectors``;
    the report. ``ask`` answers the borderline pairs when ``band`` confirms. ``report.pairs`` holds text numbers.

    A text joins a group only as a duplicate of its representative (``similarity.leader_groups``): never through
    another member. A text left alone by the similarities joins the most similar earlier representative the model
    confirms it with, unless that one has joined another group itself.
    """
    import numpy as np

    unit = unit_rows(vectors)
    if len(unit) != len(texts):
        raise ValueError(f"{len(unit)} embeddings for {len(texts)} texts")
    try:
        found = leader_groups(unit, band.accept, band.ask, max_band=MAX_BORDERLINE)
    except BandOverflow:
        raise UsageError(
            f"dedup: more than {MAX_BORDERLINE} pairs have a similarity in the confirmation band "
            f"[{band.ask}, {band.accept}), each a request to the model: narrow it (confirm=(low, high) with a "
            "higher low) or raise the threshold."
        ) from None
    representative = found.representative.copy()
    report = DedupReport(rows=len(texts), distinct=len(texts), band=band)
    report.similar = int((representative != np.arange(len(texts))).sum())
    report.borderline = len(found.band)
    alone = np.bincount(representative, minlength=len(texts)) == 1  # leads a group of itself only
    asked = sorted((later, earlier, similarity) for earlier, later, similarity in found.band if alone[later])
    report.pairs = [(earlier, later) for later, earlier, _ in asked]
    report.asked = len(report.pairs)
    if report.pairs:
        if ask is None:
            raise ValueError("borderline pairs to confirm but nothing to ask them")
        answers = ask([(texts[earlier], texts[later]) for earlier, later in report.pairs])
        report.confirmed = sum(answers)
        confirmed: dict[int, list[tuple[float, int]]] = {}
        for (later, earlier, similarity), same in zip(asked, answers, strict=True):
            if same:
                confirmed.setdefault(later, []).append((similarity, earlier))
        for later in sorted(confirmed):  # an earlier text has settled before a later one may join it
            leading = [
                (similarity, -earlier) for similarity, earlier in confirmed[later] if representative[earlier] == earlier
            ]
            if leading:
                representative[later] = -max(leading)[1]  # the most similar; the earliest of equals
    return representative, report
