"""``agg``: groups of rows of any length, each reduced to one answer by a tree of requests under the context window.

Level 0 packs each group's rows into chunks (``agg.chunks``), each answered; while a group has more than one
answer, its answers are packed into fold chunks and answered again, level by level, until one remains. Every
level is one ``run_batch`` over the chunk prompts of all unfinished groups (its concurrency, cache, checkpoint,
budget, progress and per-chunk failures), two when ``output=`` is given and some groups finish on that level
while others go on: a group's last request answers in ``output=``, every request below it in text.

Resuming. The chunk answers of a call are kept in this process under the call's identity (its rows, prompt,
window, output and the agent's settings) until the call finishes: the same call after Ctrl-C, a failed chunk or
a spent ``max_cost`` asks only the chunks not answered (an interrupted level's finished chunks are kept by
``run_batch`` itself). ``checkpoint=`` names one file where each level's batch keeps its checkpoint under a name
made of its prompts, so a new process (a restarted kernel, ``kill -9``) rebuilds the same levels from the file.
A chunk that fails ends the call with ``AggregationError`` once its level has run: folding without it would
answer for rows it never read.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiforge.batch.identity import batch_identity
from aiforge.batch.options import DEFAULT_CONCURRENCY
from aiforge.batch.resume import checkpoint_part, interrupted_work
from aiforge.core.context_windows import context_window
from aiforge.core.costs import caller_stacklevel
from aiforge.core.errors import AggregationError, BatchInterrupted, TruncatedRowWarning
from aiforge.core.output import OutputSpec
from aiforge.core.types import ContextWindowExceededError, UsageError
from aiforge.semantic.agg.chunks import ANSWERS, ROWS, ChunkBudget, Kind, chunk_prompt, pack
from aiforge.semantic.agg.report import AggLevel, AggReport

if TYPE_CHECKING:
    from aiforge.batch.results import BatchFailure, BatchResult
    from aiforge.chat.agent import ChatAgent
    from aiforge.chat.response import ChatResponse


@dataclass(frozen=True)
class _Chunk:
    group: int
    prompt: str
    last: bool
    """The group's only chunk on this level: its answer is the group's."""


def agent_context_window(agent: ChatAgent) -> int:
    """The window ``agent``'s requests must fit: ``CONTEXT_WINDOW``, the embedded engine's context, the model's."""
    settings = agent.settings
    embedded = settings.LOCAL_CONTEXT_SIZE if agent.provider.embedded else None
    return context_window(agent.model, settings.CONTEXT_WINDOW, embedded_context=embedded)


def reduce_groups(
    agent: ChatAgent,
    instruction: str,
    groups: Sequence[Sequence[str]],
    *,
    kind: Kind = ROWS,
    final: bool = True,
    output: Any = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    options: Mapping[str, Any] | None = None,
) -> tuple[list[Any], AggReport]:
    """One answer per group of ``groups`` (rows, or with ``kind="answers"`` partial answers to fold), and the report.

    ``final=False`` leaves each group's answer a partial one, to be folded with others (a Dask partition's);
    ``output=`` types the final answers. ``options`` are ``run_batch``'s ``cache``, ``checkpoint`` (one file
    for every level), ``restart``, ``max_cost`` (for the whole call) and ``dedup``. A group with no item answers None.

    >>> from aiforge import ChatAgent
    >>> from aiforge.providers.scripted import ScriptedProvider
    >>> agent = ChatAgent(provider=ScriptedProvider(default="all fine"), memory="none", PROGRESS_BAR=False)
    >>> reduce_groups(agent, "What do these reviews say?", [["good", "great"]])[0]
    ['all fine']
    """
    options = dict(options or {})
    spec = None if output is None else OutputSpec.of(output)
    system_prompt, tools = agent.request_context.system_prompt, agent.request_context.tools
    budget = ChunkBudget.of(
        agent_context_window(agent), instruction, system_prompt=system_prompt, tools=tools,
        schema=None if spec is None else spec.wire_schema, max_tokens=agent.settings.MAX_TOKENS,
    )
    budget.check()
    report = AggReport(budget.window, budget.limit)
    key = _call_key(agent, instruction, groups, kind, final, spec, budget.window)
    answers: dict[tuple[str, bool], ChatResponse] = interrupted_work.live(
        key, dict, restart=bool(options.get("restart"))
    )
    results: list[Any] = [None] * len(groups)
    items = {g: list(texts) for g, texts in enumerate(groups) if texts}
    kinds = dict.fromkeys(items, kind)
    while items:
        chunks = _level_chunks(items, kinds, budget, final, report)
        level = AggLevel(len(report.levels), len(chunks))
        report.levels.append(level)
        replies = _run_level(agent, chunks, level, answers, spec if final else None, concurrency, options, report)
        folded: dict[int, list[str]] = {}
        for chunk, reply in zip(chunks, replies, strict=True):
            if chunk.last:
                results[chunk.group] = reply
            else:
                folded.setdefault(chunk.group, []).append(reply)
        items = folded
        kinds = dict.fromkeys(items, ANSWERS)
    if report.truncated:
        warnings.warn(
            f"agg: {report.truncated} row(s) or partial answer(s) were longer than one request can hold under "
            f"CONTEXT_WINDOW={budget.window} and were cut to fit (ending with ' […]').",
            TruncatedRowWarning,
            stacklevel=caller_stacklevel(),
        )
    interrupted_work.forget(key)
    return results, report


def _level_chunks(
    items: dict[int, list[str]], kinds: dict[int, Kind], budget: ChunkBudget, final: bool, report: AggReport
) -> list[_Chunk]:
    chunks: list[_Chunk] = []
    for group, texts in items.items():
        packed = pack(texts, kinds[group], budget.room(kinds[group]))
        report.truncated += packed.truncated
        last = len(packed.chunks) == 1
        for part in packed.chunks:
            prompt = chunk_prompt(budget.instruction, kinds[group], part, final=final and last)
            report.largest_request = max(report.largest_request, budget.request_tokens(prompt))
            chunks.append(_Chunk(group, prompt, last))
    return chunks


def _run_level(
    agent: ChatAgent,
    chunks: list[_Chunk],
    level: AggLevel,
    answers: dict[tuple[str, bool], ChatResponse],
    spec: OutputSpec | None,
    concurrency: int,
    options: dict[str, Any],
    report: AggReport,
) -> list[Any]:
    """Each chunk's answer (text, or ``spec``'s value for a group's last chunk); asks the chunks not kept."""
    typed = [spec is not None and chunk.last for chunk in chunks]
    for wants_output in (False, True):
        todo = list(dict.fromkeys(c.prompt for c, t in zip(chunks, typed, strict=True) if t == wants_output))
        todo = [prompt for prompt in todo if (prompt, wants_output) not in answers]
        if todo:
            batch = _run_batch(agent, todo, level, spec if wants_output else None, concurrency, options, report)
            for position, result in zip(batch.indices, batch.results, strict=True):
                answers[todo[position], wants_output] = result
            if batch.failed:
                _raise_if_over_the_servers_context(batch.failed, len(todo), level, report)
                first = batch.failed[0].error
                raise AggregationError(
                    f"agg: {len(batch.failed)} of {len(todo)} chunks at level {level.level} failed (first: "
                    f"{type(first).__name__}: {first}); the answered chunks are kept: run the same call again to "
                    "ask only the failed ones.",
                    failed=batch.failed,
                    report=report,
                )
    return [
        reply.output if t else reply.message
        for reply, t in ((answers[c.prompt, t], t) for c, t in zip(chunks, typed, strict=True))
    ]


def _raise_if_over_the_servers_context(
    failed: list[BatchFailure], chunks: int, level: AggLevel, report: AggReport
) -> None:
    """An ``AggregationError`` naming ``CONTEXT_WINDOW`` when the server refused chunks as longer than its context.

    Asking them again would fail the same way: ``CONTEXT_WINDOW`` is larger than the server's context, and the
    fix is to set it to the server's number (the chunks are then packed anew, smaller).
    """
    refused = [f for f in failed if isinstance(f.error, ContextWindowExceededError)]
    if not refused:
        return
    windows = [f.error.context_window for f in refused if isinstance(f.error, ContextWindowExceededError)]
    said = [w for w in windows if w is not None]
    server = min(said) if said else None
    context = f"its context ({server} tokens)" if server is not None else "its context"
    fix = f"CONTEXT_WINDOW={server}" if server is not None else "CONTEXT_WINDOW to the server's context size"
    raise AggregationError(
        f"agg: the server refused {len(refused)} of {chunks} chunks at level {level.level} as longer than {context}: "
        f"they were packed under CONTEXT_WINDOW={report.context_window}, which is larger; asked again they fail "
        f"the same way. Set {fix} (ChatAgent(CONTEXT_WINDOW=...), AIFORGE_CONTEXT_WINDOW or aiforge.yaml) and "
        "call agg again: its chunks are packed under it.",
        failed=failed,
        report=report,
    )


def _run_batch(
    agent: ChatAgent,
    prompts: list[str],
    level: AggLevel,
    spec: OutputSpec | None,
    concurrency: int,
    options: dict[str, Any],
    report: AggReport,
) -> BatchResult:
    batch_options = {name: value for name, value in options.items() if name in ("cache", "restart", "dedup")}
    if options.get("max_cost") is not None:
        batch_options["max_cost"] = max(options["max_cost"] - report.total_cost, 0.0)
    if options.get("checkpoint") is not None:  # each level's batch a part of the one file, named by its prompts
        digest = hashlib.sha256("\0".join(prompts).encode()).hexdigest()[:20]
        batch_options["checkpoint"] = checkpoint_part(options["checkpoint"], f"agg-level{level.level}-{digest}", "agg")
    try:
        batch: BatchResult = agent.run_batch(
            prompts, concurrency, max(len(prompts), 1), output=None if spec is None else spec, **batch_options
        )
    except BatchInterrupted as stop:
        raise BatchInterrupted(
            f"agg interrupted at level {level.level}: {stop.finished} of its {stop.total} chunk requests finished; "
            "they and every answer of the levels below are kept: run the same call again to ask only the others.",
            finished=stop.finished,
            total=stop.total,
        ) from None
    level.batches.append(batch)
    return batch


def _call_key(
    agent: ChatAgent, instruction: str, groups: Sequence[Sequence[str]], kind: Kind, final: bool,
    spec: OutputSpec | None, window: int,
) -> str:
    """The identity of an ``agg`` call: its rows, instruction, shape, window and the agent's settings."""
    head = [f"agg kind={kind} final={final} window={window}", instruction]
    rows = [text for texts in groups for text in (f"group of {len(texts)}", *texts)]
    return batch_identity(agent, [*head, *rows], spec).key


def check_groups(groups: Sequence[Sequence[str]]) -> None:
    """A ``UsageError`` when there is nothing to aggregate: no group, or no group with a row."""
    if not any(groups):
        raise UsageError("agg: there are no rows to aggregate (the frame is empty, or every row's value is missing).")
