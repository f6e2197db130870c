"""The first stage of the batch pipeline: a batch prepared once, whatever strategy then answers its lead rows.

``prepare`` checks the options against the owner (before any request), renders the prompts, fingerprints the
batch, takes the rows an earlier run finished (``resume``) and finds the repeated rows (``dedup``). What is left
to ask is ``PreparedBatch.leads``: one row per distinct prompt not answered yet. A strategy (``live``,
``planner``'s flex and Batch API, ``cascade``) answers those into ``done`` and ``errors``; their repeats take
their answers (``BatchRun`` as each lead lands, ``fan_out`` after a whole job), and ``orchestrator`` assembles the
``BatchResult`` once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiforge.batch.dedup import Duplicates, find_duplicates
from aiforge.batch.file_route import check_packable_files, file_route_of
from aiforge.batch.identity import batch_identity, check_budget_enforceable, open_cache
from aiforge.batch.label_scoring import check_calibration, scored_labels, unpacked_if_scored
from aiforge.batch.packing import check_packable
from aiforge.batch.resume import finished_items, open_checkpoint
from aiforge.batch.savings import Savings
from aiforge.core.errors import MissingValueError
from aiforge.core.templates import batch_prompts
from aiforge.core.types import UsageError

if TYPE_CHECKING:
    from aiforge.batch.item import BatchItem
    from aiforge.batch.options import BatchOptions
    from aiforge.batch.owner import BatchOwner
    from aiforge.core.output import OutputSpec
    from aiforge.core.templates import BatchPrompts
    from aiforge.store import BatchFingerprint, Checkpoint, ResponseCache


@dataclass(slots=True)
class PreparedBatch:
    """A batch ready for a strategy: its prompts, identity and checkpoint, what is done, what repeats what."""

    owner: BatchOwner
    items: Any
    """The items as given (a ``Cascade(truth=...)`` reads its column)."""
    options: BatchOptions
    """The options as they run (``pack=`` dropped for scored rows: ``label_scoring.unpacked_if_scored``)."""
    item_type: type[BatchItem]
    prompts: BatchPrompts
    scored: dict[str, Any] | None
    """Each label's text -> its value when the rows are answered by scoring (``label_scoring``); None: generated."""
    cache: ResponseCache | None
    identity: BatchFingerprint
    checkpoint: Checkpoint | None
    done: dict[int, Any]
    """Input position -> its answer: finished by an earlier run, then by the strategy."""
    errors: dict[int, BaseException]
    """Input position -> why it failed (a missing value from the start)."""
    served_again: Callable[[Any], Any] | None
    """A lead's answer as its repeat's (``BatchItem.served_again``); None: every row is asked (no dedup)."""
    duplicates: Duplicates

    @property
    def inputs(self) -> list[str]:
        return self.prompts.texts

    @property
    def spec(self) -> OutputSpec | None:
        return self.options.output

    @property
    def leads(self) -> list[int]:
        """The rows to ask: not done nor failed, and no repeat of another row (its lead's answer is its own)."""
        waiting = {i for rows in self.duplicates.twins.values() for i in rows} | self.duplicates.answered.keys()
        skip = self.done.keys() | self.errors.keys() | waiting
        return [i for i in range(len(self.inputs)) if i not in skip]

    def serve_finished_repeats(self) -> None:
        """Rows whose prompt a finished row has take its answer (no request)."""
        if self.served_again is not None:
            self.done.update({i: self.served_again(self.done[twin]) for i, twin in self.duplicates.answered.items()})

    def fan_out(self, lead: int) -> list[int]:
        """Lead ``lead``'s answer (or error) to each of its repeats; the repeats it answered."""
        twins = self.duplicates.twins.get(lead, [])
        for twin in twins:
            if lead in self.done:
                assert self.served_again is not None  # repeats are found only for a result type that has it
                self.done[twin] = self.served_again(self.done[lead])
            elif lead in self.errors:
                self.errors[twin] = self.errors[lead]
        return twins


def prepare(owner: BatchOwner, items: Any, options: BatchOptions, *, resume: bool = True) -> PreparedBatch:
    """``items`` prepared to run as ``options`` say; every ``UsageError`` a batch can meet comes here, before any
    request. ``resume=False``: nothing is taken from an earlier run (a cascade)."""
    item_type = checked_item_type(owner)
    if not options.estimate:
        check_budget_enforceable(owner, options.max_cost)  # before any request: no price, no budget
    prompts = batch_prompts(items, options.prompt, files=options.files, route=file_route_of(owner))
    check_packable(owner, options.pack)
    check_packable_files(prompts, options.pack)
    if len(prompts.texts) > options.max_batch:
        raise UsageError(
            f"run_batch got {len(prompts.texts)} items but max_batch={options.max_batch}; "
            f"pass max_batch={len(prompts.texts)} to process them all, or split the list"
        )
    cache = owner.response_cache if options.cache is None else open_cache(options.cache)
    # Decided once here too: LABELS_BY=scoring that cannot score is a UsageError before any call.
    scored = scored_labels(owner.provider, owner.settings, options.output, tools=bool(owner.request_context.tools))
    check_calibration(options, scored)
    options = unpacked_if_scored(options, scored, owner.settings.LABELS_BY)
    identity = batch_identity(owner, prompts.texts, options.output, scored=scored is not None)
    names = prompts.file_names
    checkpoint = open_checkpoint(options.checkpoint, identity, options.restart, lambda i: ", ".join(names.get(i, ())))
    done = (
        finished_items(identity, checkpoint, item_type, options.output, restart=options.restart) if resume else {}
    )
    errors: dict[int, BaseException] = {i: MissingValueError(why) for i, why in prompts.missing.items()}
    errors.update(prompts.failed)  # a file that cannot be sent fails its row alone, without a call
    served_again: Callable[[Any], Any] | None = getattr(item_type, "served_again", None) if options.dedup else None
    duplicates = Duplicates() if served_again is None else find_duplicates(prompts.texts, done, errors)
    return PreparedBatch(
        owner, items, options, item_type, prompts, scored, cache, identity, checkpoint, done, errors, served_again,
        duplicates,
    )


def checked_item_type(owner: BatchOwner) -> type[BatchItem]:
    """``owner.result_type()``, checked to lay out a batch row (``to_row``, ``failed_row``)."""
    result = owner.result_type()
    if not (isinstance(result, type) and hasattr(result, "to_row") and hasattr(result, "failed_row")):
        raise TypeError(
            f"{type(owner).__name__}.result_type() must return a type with to_row() and failed_row() "
            f"(see aiforge.batch.results.BatchItem), not {result!r}"
        )
    return result


@dataclass(slots=True)
class Answered:
    """What a strategy says of how it answered a batch's leads (the rows themselves are in ``done`` and ``errors``)."""

    plan: str
    """The plan that ran, as the estimate names them (``plans.PLANS``)."""
    wall_time_s: float
    report: Any = None
    """What the strategy did, when it has more to say than its rows: ``PackingStats``, ``CascadeReport``."""
    saved: Savings = field(default_factory=Savings)
    """What it saved that the rows do not show (packing, flex, the Batch API, a cascade)."""
