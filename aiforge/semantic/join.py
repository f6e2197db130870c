"""A semantic join: the rows of two DataFrames paired where the model says a prompt holds, never n x m questions.

``semantic_join(left, right, "Does the ticket {left.text} concern the product {right.name}?")`` (the public
surface is ``left.aiforge.join(right, ...)``) answers one of two ways, chosen by the size of the right side:

- ``"classify"`` (at most ``CLASSIFY_MAX_RIGHT`` distinct right rows): one question per distinct left row, listing
  the right rows as numbered items; the answer is the numbers that apply (``multiple=True``, a list that may be
  empty) or one number or ``"none"``. n questions instead of n x m, the rewrite Snowflake reports 15-70x from.
- ``"candidates"``: both sides embedded (``semantic.embeddings.embed_texts``), the ``candidates`` (k) nearest right
  rows of each left row proposed (``join_candidates``), and each proposed pair asked as a yes/no question (a bool
  output).
  At most n x k questions, plus the embedding requests; a pair the embeddings do not propose is never asked, so
  recall is bounded by the blocking step's (``bench/semantic_join.py`` measures both). On a chat model's vectors
  (the embedded model's) it warns (``ChatModelVectorsWarning``): its neighbours say little.

Rows are compared by the values of the columns the prompt names: identical rows are asked about once, and each
side's texts are embedded once. A row with a missing or blank value in one of them is asked nothing and matches
nothing (a ``MissingValueError`` in ``JoinReport.failed``). Each question is one ``run_batch`` item, so the batch
options apply (``cache=``, also the embeddings', ``checkpoint=``, ``max_cost=``, ``concurrency``, progress). The
result is ``join_frame.joined_frame``'s; its ``.attrs["aiforge"]`` is a ``JoinReport``: requests, tokens and cost
of both steps, and every failure. A question that failed is never read as "no match": the pairs it asks about are
left out, listed in ``JoinReport.failed``, and a warning says how many.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from types import GenericAlias
from typing import TYPE_CHECKING, Any, Literal

from aiforge.batch.identity import check_budget_enforceable
from aiforge.batch.options import DEFAULT_CONCURRENCY, batch_options
from aiforge.batch.results import BatchResult
from aiforge.chat.operation_agent import operation_agent
from aiforge.core.costs import _caller_stacklevel
from aiforge.core.errors import BudgetExceededError, FailedRowsWarning, MissingValueError
from aiforge.core.report import SharedOnDeepcopy
from aiforge.core.types import UsageError
from aiforge.semantic.join_candidates import DEFAULT_K, checked_k, nearest
from aiforge.semantic.join_frame import check_how, check_suffixes, joined_frame
from aiforge.semantic.join_template import PairTemplate, Side, is_missing, side_text

if TYPE_CHECKING:
    import pandas as pd

    from aiforge.chat.agent import ChatAgent

STRATEGIES = ("auto", "classify", "candidates")
CLASSIFY_MAX_RIGHT = 30
"""``strategy="auto"`` classifies over the right side up to this many distinct right rows. Below it the list fits
one prompt comfortably (30 short rows are a few hundred tokens) and each left row costs one request instead of k;
above it every request carries the whole list (input tokens grow as n x m again, only in fewer requests), and a
model picking from a long numbered list misses more than one judging a single pair."""
ATTRS_KEY = "aiforge"
_NO_MATCH = "none"


@dataclass(frozen=True, slots=True)
class JoinFailure:
    """A question of the join that got no answer, or a row that was not asked (a missing value)."""

    left: Any
    """The left row's index label (None: a right row not asked)."""
    right: Any
    """The right row's index label (None: a left row's classification over every right row, or a left row)."""
    error: BaseException


@dataclass(slots=True)
class JoinReport(SharedOnDeepcopy):
    """What a semantic join asked and spent: ``result.attrs["aiforge"]``."""

    strategy: str
    """``"classify"`` or ``"candidates"``: the strategy that ran."""
    k: int | None
    """Candidates per left row (``"candidates"`` only)."""
    naive_questions: int
    """n x m: the pairs of distinct rows a question per pair would have asked."""
    questions: int = 0
    """Distinct questions sent to the model (one per distinct left row, or per proposed pair)."""
    chat_requests: int = 0
    """Model requests those questions made (output retries included; none for a cached answer)."""
    embedding_requests: int = 0
    """Embeddings requests sent (``"candidates"`` only)."""
    embedded_texts: int = 0
    """Distinct texts embedded (texts served by the response cache not counted)."""
    embedding_tokens: int = 0
    embedding_cost: float = 0.0
    matches: int = 0
    """Matched row pairs in the result."""
    batch: BatchResult | None = None
    """The questions' ``BatchResult`` (per-question costs, tokens, failures)."""
    failed: list[JoinFailure] = field(default_factory=list)
    """Every row pair a failed question asked about, and every row not asked (a missing value): none is a "no"."""

    @property
    def requests(self) -> int:
        """Chat and embedding requests together."""
        return self.chat_requests + self.embedding_requests

    @property
    def total_cost(self) -> float:
        return self.embedding_cost + (0.0 if self.batch is None else self.batch.total_cost)

    @property
    def total_tokens(self) -> int:
        return self.embedding_tokens + (0 if self.batch is None else self.batch.total_tokens)

    def __repr__(self) -> str:
        k = f", k={self.k}" if self.k is not None else ""
        return (
            f"JoinReport(strategy={self.strategy!r}{k}, matches={self.matches}, questions={self.questions} of "
            f"{self.naive_questions}, requests={self.requests} (chat {self.chat_requests}, embeddings "
            f"{self.embedding_requests}), failed={len(self.failed)}, total_cost={self.total_cost:.6f})"
        )


@dataclass(slots=True)
class _Rows:
    """One side's rows grouped by the values of the columns the prompt names (identical rows asked once)."""

    values: list[dict[Any, Any]] = field(default_factory=list)
    """Each distinct row's values by column."""
    members: list[list[int]] = field(default_factory=list)
    """Each distinct row's positions in the frame."""
    missing: list[int] = field(default_factory=list)
    """Positions of rows with a missing value in a named column: asked nothing."""
    labels: Any = None
    """The frame's index: a position's label, for the failures."""

    @classmethod
    def of(cls, frame: pd.DataFrame, columns: tuple[Any, ...]) -> _Rows:
        rows = cls(labels=frame.index)
        seen: dict[tuple[str, ...], int] = {}
        records = zip(*(frame[column].tolist() for column in columns), strict=True)
        for position, record in enumerate(records):
            if any(_blank(value) for value in record):
                rows.missing.append(position)
                continue
            key = tuple(map(str, record))  # a question reads str(value): rows that read alike are one
            if key not in seen:
                seen[key] = len(rows.values)
                rows.values.append(dict(zip(columns, record, strict=True)))
                rows.members.append([])
            rows.members[seen[key]].append(position)
        return rows


def semantic_join(
    left: pd.DataFrame,
    right: pd.DataFrame,
    prompt: str,
    *,
    how: str = "inner",
    suffixes: Any = ("_x", "_y"),
    strategy: str = "auto",
    candidates: int = DEFAULT_K,
    multiple: bool = True,
    agent: ChatAgent | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    **settings: Any,
) -> pd.DataFrame:
    """The pairs of ``left`` and ``right`` rows for which the model answers yes to ``prompt``, merged as pandas does.

    >>> semantic_join(tickets, products, "Does the ticket {left.text} concern {right.name}?", how="left")

    ``strategy``: ``"auto"`` (classify up to ``CLASSIFY_MAX_RIGHT`` distinct right rows, candidates above),
    ``"classify"`` or ``"candidates"``; ``candidates`` is the right rows asked about per left row (``k`` is topk's
result size; ``k=`` here is a UsageError naming ``candidates=``); ``multiple=False`` lets a left row
    match at most one right row in the classification. ``cache=``, ``checkpoint=``, ``max_cost=`` and the other
    batch options go to the questions' ``run_batch``; other keywords are the settings of the agent built when
    ``agent=None``. The module docstring says how each strategy asks; ``join_frame`` what the result looks like.
    """
    if "k" in settings:
        raise UsageError(
            f"join: k= is now candidates= (the nearest right rows asked about per left row): "
            f"join(..., candidates={settings['k']!r}); k is topk's number of rows."
        )
    how, suffixes, k = check_how(how), check_suffixes(suffixes, left, right), checked_k(candidates)
    if strategy not in STRATEGIES:
        raise UsageError(f"join: strategy= is one of {', '.join(map(repr, STRATEGIES))}, not {strategy!r}.")
    if not isinstance(multiple, bool):
        raise UsageError(f"join: multiple= is True (several matches per left row) or False, not {multiple!r}.")
    own = [name for name in ("output", "estimate") if name in settings]
    if own:
        raise UsageError(
            f"join asks its own questions (a list of numbers, or yes/no per pair): it takes no {own[0]}=."
        )
    template = PairTemplate.parse(prompt, left.columns, right.columns)
    lefts, rights = _Rows.of(left, template.fields("left")), _Rows.of(right, template.fields("right"))
    options = batch_options(settings)
    agent = operation_agent(agent, settings)
    check_budget_enforceable(agent, options.get("max_cost"))  # before the embeddings' requests
    small = len(rights.values) <= CLASSIFY_MAX_RIGHT
    chosen = strategy if strategy != "auto" else "classify" if small else "candidates"
    report = JoinReport(chosen, k if chosen == "candidates" else None, len(lefts.values) * len(rights.values))
    report.failed += _missing_rows(left, lefts, template, "left") + _missing_rows(right, rights, template, "right")
    asker = _Asker(agent, concurrency, options, report)
    if chosen == "classify":
        pairs = _classified(asker, template, lefts, rights, multiple)
    else:
        pairs = _proposed(asker, template, lefts, rights, k)
    joined = joined_frame(left, right, pairs, how, suffixes)
    report.matches = len(pairs)
    _warn_if_failed(report)
    joined.attrs[ATTRS_KEY] = report
    return joined


def _classified(
    asker: _Asker, template: PairTemplate, lefts: _Rows, rights: _Rows, multiple: bool
) -> set[tuple[int, int]]:
    """One question per distinct left row over the numbered right rows: the pairs of positions it matched."""
    if not lefts.values or not rights.values:
        return set()
    numbers = tuple(str(n) for n in range(1, len(rights.values) + 1))
    # Numbers (from 1) rather than the right rows' values: short, and the same whatever the values hold.
    label: Any = Literal[numbers] if multiple else Literal[(*numbers, _NO_MATCH)]
    output = GenericAlias(list, (label,)) if multiple else label
    questions = [template.classify_question(row, rights.values, multiple) for row in lefts.values]
    batch = asker.ask(questions, output)
    pairs: set[tuple[int, int]] = set()
    for position, result in zip(batch.indices, batch.results, strict=True):
        chosen = result.output if multiple else [result.output]
        for number in chosen:
            if number != _NO_MATCH:
                pairs |= _expanded(lefts.members[position], rights.members[int(number) - 1])
    for failure in batch.failed:
        asker.report.failed += [
            JoinFailure(lefts.labels[i], None, failure.error) for i in lefts.members[failure.position]
        ]
    return pairs


def _proposed(asker: _Asker, template: PairTemplate, lefts: _Rows, rights: _Rows, k: int) -> set[tuple[int, int]]:
    """The k nearest right rows of each distinct left row by embedding, each pair asked yes/no: the pairs kept."""
    if not lefts.values or not rights.values:
        nearest_rows: list[list[int]] = []
    else:
        left_vectors, right_vectors = _embedded(asker, template, lefts, rights)
        nearest_rows = nearest(left_vectors, right_vectors, k).tolist()
    asked: dict[str, list[tuple[int, int]]] = {}
    for lk, candidates in enumerate(nearest_rows):
        for rk in candidates:
            asked.setdefault(template.pair_question(lefts.values[lk], rights.values[rk]), []).append((lk, rk))
    if not asked:
        return set()
    batch = asker.ask(list(asked), bool)
    groups = list(asked.values())
    pairs: set[tuple[int, int]] = set()
    for position, result in zip(batch.indices, batch.results, strict=True):
        if result.output:
            for lk, rk in groups[position]:
                pairs |= _expanded(lefts.members[lk], rights.members[rk])
    for failure in batch.failed:
        for lk, rk in groups[failure.position]:
            asker.report.failed += [
                JoinFailure(lefts.labels[i], rights.labels[j], failure.error)
                for i, j in sorted(_expanded(lefts.members[lk], rights.members[rk]))
            ]
    return pairs


def _embedded(asker: _Asker, template: PairTemplate, lefts: _Rows, rights: _Rows) -> tuple[Any, Any]:
    """Both sides' vectors from one embeddings run (the texts of the columns the prompt names), its cost reported."""
    from aiforge.batch.embedded import warn_if_chat_model_vectors
    from aiforge.semantic.embeddings import embedding_provider_of, run_embeddings

    warn_if_chat_model_vectors(embedding_provider_of(asker.agent)[0], "join")
    texts = [side_text(row, template.fields("left")) for row in lefts.values]
    texts += [side_text(row, template.fields("right")) for row in rights.values]
    run = run_embeddings(asker.agent, texts, cache=asker.options.get("cache"))
    report = asker.report
    report.embedding_requests, report.embedded_texts = run.requests, run.embedded
    report.embedding_tokens, report.embedding_cost = run.usage.input_tokens, run.cost
    return run.vectors[: len(lefts.values)], run.vectors[len(lefts.values) :]


@dataclass(frozen=True, slots=True)
class _Asker:
    """Sends a list of questions as one ``run_batch`` with the join's options, and notes it on the report."""

    agent: ChatAgent
    concurrency: int
    options: dict[str, Any]
    report: JoinReport

    def ask(self, questions: list[str], output: Any) -> BatchResult:
        options, report = self.options, self.report
        if options.get("max_cost") is not None:  # the embeddings spent part of the budget
            options = {**options, "max_cost": max(options["max_cost"] - report.embedding_cost, 0.0)}
        batch: BatchResult = self.agent.run_batch(
            questions, self.concurrency, len(questions), output=output, **options
        )
        report.batch, report.questions, report.chat_requests = batch, len(questions), _requests_made(batch)
        return batch


def _requests_made(batch: BatchResult) -> int:
    """Model requests of a batch: each answer's model steps, and one at least per question that failed once sent."""
    answered = sum(sum(r.get("step") == "model" for r in result.trace) for result in batch.results)
    sent_and_failed = sum(not isinstance(f.error, MissingValueError | BudgetExceededError) for f in batch.failed)
    return answered + sent_and_failed


def _blank(value: Any) -> bool:
    """A value a question cannot be about: missing, or a string of only whitespace (nothing to embed either)."""
    return is_missing(value) or (isinstance(value, str) and not value.strip())


def _expanded(left_positions: list[int], right_positions: list[int]) -> set[tuple[int, int]]:
    return {(i, j) for i in left_positions for j in right_positions}


def _missing_rows(frame: pd.DataFrame, rows: _Rows, template: PairTemplate, side: Side) -> list[JoinFailure]:
    """A failure per row not asked: a missing value in a column the prompt names."""
    failures = []
    for position in rows.missing:
        empty = [c for c in template.fields(side) if _blank(frame[c].iloc[position])]
        error = MissingValueError(f"missing value: {', '.join(f'{side}.{c}' for c in empty)}")
        label = frame.index[position]
        failures.append(JoinFailure(label, None, error) if side == "left" else JoinFailure(None, label, error))
    return failures


def _warn_if_failed(report: JoinReport) -> None:
    unanswered = 0 if report.batch is None else len(report.batch.failed)
    missing = sum(isinstance(f.error, MissingValueError) for f in report.failed)
    said = [f"{unanswered} question(s) got no answer, so the pairs they ask about are left out, not decided as "
            "no match"] * bool(unanswered) + [f"{missing} row(s) with a missing value were not asked"] * bool(missing)
    if said:
        warnings.warn(
            f"join: {'; '.join(said)}: see result.attrs['aiforge'].failed.", FailedRowsWarning,
            stacklevel=_caller_stacklevel(),
        )
