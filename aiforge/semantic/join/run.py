"""A semantic join: the rows of two DataFrames paired where the model says a prompt holds, never n x m questions.

``semantic_join(left, right, "Does the ticket {left.text} concern the product {right.name}?")`` (the public
surface is ``left.aiforge.join(right, ...)``) answers one of three ways; ``strategy="auto"`` takes the first or
the second by the size of the right side:

- ``"classify"`` (at most ``CLASSIFY_MAX_RIGHT`` distinct right rows): one question per distinct left row, listing
  the right rows as numbered items; the answer is the numbers that apply (``multiple=True``, a list that may be
  empty) or one number or ``"none"``. n questions instead of n x m, the rewrite Snowflake reports 15-70x from.
- ``"candidates"``: both sides embedded (``semantic.embeddings.embed_texts``), and each distinct left row asked one
  multiple-choice question over its nearest right rows (``candidates``; ``choices``): a list of the numbers that
  match, empty for none. n questions, plus the embedding requests. The depth (how many candidates) is
  ``candidates=`` when a number; ``"auto"`` (the default) chooses it for ``target_recall`` from a sample of left
  rows asked at ``choices.MAX_DEPTH`` (its answers kept, so no extra request), reported in ``JoinReport``.
- ``"pairs"`` (only when asked for; the ``"candidates"`` of before issue 32): the same nearest right rows, each pair
  asked as a yes/no question (a bool output): n x k questions, k = ``candidates`` (``DEFAULT_K`` for ``"auto"``).
  A model judging one pair at a time may be surer than one picking from a list; it costs k times the requests.

A pair the embeddings do not propose is never asked by either, so recall is bounded by the blocking step's
(``bench/semantic_join.py`` measures both). On a chat model's vectors (the embedded model's) they warn
(``ChatModelVectorsWarning``): its neighbours say little.

Rows are compared by the values of the columns the prompt names: identical rows are asked about once, and each
side's texts are embedded once. A row with a missing or blank value in one of them is asked nothing and matches
nothing (a ``MissingValueError`` in ``JoinReport.failed``). Each question is one ``run_batch`` item, so the batch
options apply (``cache=``, also the embeddings', ``checkpoint=``, ``max_cost=``, ``concurrency``, progress). The
result is ``frame.joined_frame``'s; its ``.attrs["aiforge"]`` is a ``JoinReport``: requests, tokens and cost
of both steps, and every failure. A question that failed is never read as "no match": the pairs it asks about are
left out, listed in ``JoinReport.failed``, and a warning says how many.
"""

from __future__ import annotations

from types import GenericAlias
from typing import TYPE_CHECKING, Any, Literal

from aiforge.batch.identity import check_budget_enforceable
from aiforge.batch.options import DEFAULT_CONCURRENCY, batch_options
from aiforge.chat.operation_agent import operation_agent
from aiforge.core.files import refuse_files
from aiforge.core.types import UsageError
from aiforge.semantic.join.asker import Asker, embedded
from aiforge.semantic.join.candidates import DEFAULT_K, checked_k, nearest
from aiforge.semantic.join.choices import TARGET_RECALL, chosen_pairs
from aiforge.semantic.join.frame import check_how, check_suffixes, joined_frame
from aiforge.semantic.join.report import JoinFailure, JoinReport, warn_if_failed
from aiforge.semantic.join.rows import DistinctRows, expanded, missing_rows
from aiforge.semantic.join.template import PairTemplate

if TYPE_CHECKING:
    import pandas as pd

    from aiforge.chat.agent import ChatAgent

STRATEGIES = ("auto", "classify", "candidates", "pairs")
CLASSIFY_MAX_RIGHT = 30
"""``strategy="auto"`` classifies over the right side up to this many distinct right rows. Below it the list fits
one prompt comfortably (30 short rows are a few hundred tokens) and each left row costs one request instead of k;
above it every request carries the whole list (input tokens grow as n x m again, only in fewer requests), and a
model picking from a long numbered list misses more than one judging a single pair."""
ATTRS_KEY = "aiforge"
_NO_MATCH = "none"


def semantic_join(
    left: pd.DataFrame,
    right: pd.DataFrame,
    prompt: str,
    *,
    how: str = "inner",
    suffixes: Any = ("_x", "_y"),
    strategy: str = "auto",
    candidates: int | str = "auto",
    target_recall: float = TARGET_RECALL,
    multiple: bool = True,
    agent: ChatAgent | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    **settings: Any,
) -> pd.DataFrame:
    """The pairs of ``left`` and ``right`` rows for which the model answers yes to ``prompt``, merged as pandas does.

    >>> semantic_join(tickets, products, "Does the ticket {left.text} concern {right.name}?", how="left")

    ``strategy``: ``"auto"`` (classify up to ``CLASSIFY_MAX_RIGHT`` distinct right rows, candidates above),
    ``"classify"``, ``"candidates"`` or ``"pairs"``; ``candidates`` is the right rows asked about per left row, a
    number or ``"auto"`` (chosen for ``target_recall`` of the matches a sample finds; ``k`` is topk's result size,
    ``k=`` here is a UsageError naming ``candidates=``); ``multiple=False`` lets a left row match at most one right
    row (classify and candidates). ``cache=``, ``checkpoint=``, ``max_cost=`` and the other
    batch options go to the questions' ``run_batch``; other keywords are the settings of the agent built when
    ``agent=None``. The module docstring says how each strategy asks; ``join.frame`` what the result looks like.
    """
    if "k" in settings:
        raise UsageError(
            f"join: k= is now candidates= (the nearest right rows asked about per left row): "
            f"join(..., candidates={settings['k']!r}); k is topk's number of rows."
        )
    how, suffixes = check_how(how), check_suffixes(suffixes, left, right)
    depth = candidates if candidates == "auto" else checked_k(candidates)
    if isinstance(target_recall, bool) or not isinstance(target_recall, float | int) or not 0 < target_recall <= 1:
        raise UsageError(f"join: target_recall= is a share of the matches in (0, 1], e.g. 0.95, not {target_recall!r}.")
    if strategy not in STRATEGIES:
        raise UsageError(f"join: strategy= is one of {', '.join(map(repr, STRATEGIES))}, not {strategy!r}.")
    if not isinstance(multiple, bool):
        raise UsageError(f"join: multiple= is True (several matches per left row) or False, not {multiple!r}.")
    own = [name for name in ("output", "estimate") if name in settings]
    if own:
        raise UsageError(f"join asks its own questions (a list of numbers, or yes/no per pair): it takes no {own[0]}=.")
    template = PairTemplate.parse(prompt, left.columns, right.columns)
    for frame, columns in ((left, template.fields("left")), (right, template.fields("right"))):
        for column in columns:  # a file's str is its path: refused, naming map/extract or split
            refuse_files(frame[column], "join", column)
    lefts, rights = DistinctRows.of(left, template.fields("left")), DistinctRows.of(right, template.fields("right"))
    options = batch_options(settings)
    agent = operation_agent(agent, settings)
    check_budget_enforceable(agent, options.get("max_cost"))  # before the embeddings' requests
    small = len(rights.values) <= CLASSIFY_MAX_RIGHT
    chosen = strategy if strategy != "auto" else "classify" if small else "candidates"
    report = JoinReport(chosen, None, len(lefts.values) * len(rights.values))
    report.failed += missing_rows(left, lefts, template, "left") + missing_rows(right, rights, template, "right")
    asker = Asker(agent, concurrency, options, report)
    if chosen == "classify":
        pairs = _classified(asker, template, lefts, rights, multiple)
    elif chosen == "candidates":
        pairs = chosen_pairs(asker, template, lefts, rights, depth, multiple, float(target_recall))
    else:
        k = DEFAULT_K if depth == "auto" else int(depth)
        report.k, report.depth_how = k, f"candidates={candidates!r}" + " (DEFAULT_K)" * (depth == "auto")
        pairs = _proposed(asker, template, lefts, rights, k)
    joined = joined_frame(left, right, pairs, how, suffixes)
    report.matches = len(pairs)
    warn_if_failed(report)
    joined.attrs[ATTRS_KEY] = report
    return joined


def _classified(
    asker: Asker, template: PairTemplate, lefts: DistinctRows, rights: DistinctRows, multiple: bool
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
                pairs |= expanded(lefts.members[position], rights.members[int(number) - 1])
    for failure in batch.failed:
        asker.report.failed += [
            JoinFailure(lefts.labels[i], None, failure.error) for i in lefts.members[failure.position]
        ]
    return pairs


def _proposed(
    asker: Asker, template: PairTemplate, lefts: DistinctRows, rights: DistinctRows, k: int
) -> set[tuple[int, int]]:
    """The k nearest right rows of each distinct left row by embedding, each pair asked yes/no: the pairs kept."""
    if not lefts.values or not rights.values:
        nearest_rows: list[list[int]] = []
    else:
        left_vectors, right_vectors = embedded(asker, template, lefts, rights)
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
                pairs |= expanded(lefts.members[lk], rights.members[rk])
    for failure in batch.failed:
        for lk, rk in groups[failure.position]:
            asker.report.failed += [
                JoinFailure(lefts.labels[i], rights.labels[j], failure.error)
                for i, j in sorted(expanded(lefts.members[lk], rights.members[rk]))
            ]
    return pairs
