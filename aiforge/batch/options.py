"""``BatchOptions``: how a batch runs, checked once when it is made (a frozen value the orchestrator reads)."""

from __future__ import annotations

import dataclasses
import datetime
import difflib
import functools
import inspect
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, TypeVar, cast

from aiforge.batch.cascade.spec import Cascade
from aiforge.batch.plans import RUN_PLANS, deadline_seconds
from aiforge.batch.resume import checkpoint_file
from aiforge.core.output import OutputSpec
from aiforge.core.templates import RowTemplate
from aiforge.core.types import UsageError


class BatchArguments(TypedDict, total=False):
    """``run_batch``'s keyword options after ``items``, ``concurrency`` and ``max_batch`` (also the accessor's):

    - ``output``: a type (pydantic model, Literal, Enum, bool...): each reply validated into ``response.output``.
    - ``prompt``: a row template, ``"Classify: {review}"`` (DataFrame columns; ``{value}`` for a list or Series).
    - ``cache``: None uses the ``CACHE`` setting; False off; True, a path or ``"memory"``.
    - ``checkpoint``: a file recording each finished row; the same call again runs only the rest. One SQLite file in
      every operation: a call of several batches (agg's levels, evaluate's candidates, Dask's partitions) keeps
      them all in it (``batch.resume.checkpoint_file``).
    - ``restart``: start over instead of resuming from ``checkpoint``.
    - ``max_cost``: USD; no row starts once the spend plus the rows in flight would pass it.
    - ``estimate``: spend nothing; return a ``BatchEstimate`` comparing the plans.
    - ``dedup``: rows of the same prompt asked once (True, the default); False asks every row.
    - ``cascade``: an ``aiforge.Cascade``: a cheap model keeps the label rows it is confident on, at a threshold
      calibrated to a stated agreement with the strong one.
    - ``pack``: rows per request (k > 1: an id'd list, answers matched by id, a row left out asked again alone).
    - ``plan``: ``"as_is"`` (the default) or ``"cheapest"``: the cheapest of deduped, flex and the Batch API that
      meets ``deadline`` (``aiforge.batch.planner``); ``result.plan`` says which ran.
    - ``deadline``: for ``plan="cheapest"``: a ``timedelta``, seconds, or ``"30m"``, ``"2h"``, ``"1d"``.
    - ``calibrate``: scored label rows (``LABELS_BY``) answered after subtracting each label's mean log-probability
      over the batch: more accurate on a small model, but a row's answer depends on its batch.
    - ``files``: the columns whose str values are paths of files (PDFs, images) to send, ``files=["invoice"]``; a
      column of ``aiforge.File``, ``pathlib.Path``, bytes or PIL images is one without it (``FILE_INPUT`` says how).
    """

    output: Any
    prompt: str | RowTemplate | None
    cache: bool | str | os.PathLike[str] | None
    checkpoint: str | os.PathLike[str] | None
    restart: bool
    max_cost: float | None
    estimate: bool
    dedup: bool
    cascade: Cascade | None
    pack: int
    plan: str
    deadline: datetime.timedelta | float | str | None
    calibrate: bool
    files: Sequence[str]


DEFAULT_CONCURRENCY = 10
"""Requests in flight at once, the one default of every operation (rows, chunks, comparisons, embeddings)."""

BATCH_ARGUMENTS = tuple(BatchArguments.__annotations__)
"""The names ``run_batch`` takes as ``**options``, in the order they are documented."""

OPERATION_OPTIONS = tuple(name for name in BATCH_ARGUMENTS if name not in ("output", "prompt", "estimate"))
"""Keywords of a DataFrame or semantic operation that go to ``run_batch`` rather than to the agent's settings."""


def batch_options(settings: dict[str, Any], names: Sequence[str] = OPERATION_OPTIONS) -> dict[str, Any]:
    """The ``run_batch`` options among ``settings`` (those of ``names``), taken out of it: the rest are settings.

    >>> settings = {"model": "gpt-4o-mini", "max_cost": 1.0}
    >>> batch_options(settings), settings
    ({'max_cost': 1.0}, {'model': 'gpt-4o-mini'})
    """
    return {name: settings.pop(name) for name in names if name in settings}


@dataclass(frozen=True)
class BatchOptions:
    """``run_batch``'s arguments after the items: see ``ChatAgent.arun_batch`` for what each one does."""

    concurrency: int = DEFAULT_CONCURRENCY
    max_batch: int = 100
    output: OutputSpec | None = None
    prompt: str | RowTemplate | None = None
    cache: bool | str | os.PathLike[str] | None = None
    checkpoint: str | os.PathLike[str] | None = None
    restart: bool = False
    max_cost: float | None = None
    estimate: bool = False
    dedup: bool = True
    """Rows with the same prompt are asked once (``batch.dedup``); False asks every row (sampling at a temperature)."""
    cascade: Cascade | None = None
    pack: int = 1
    plan: str = "as_is"
    deadline: datetime.timedelta | float | str | None = None
    calibrate: bool = False
    files: Sequence[str] = ()
    """The columns whose str values are file paths (``core.file_inputs``)."""

    def __post_init__(self) -> None:
        if self.plan not in RUN_PLANS:
            raise UsageError(f"plan= is one of {', '.join(map(repr, RUN_PLANS))}, not {self.plan!r}")
        deadline_seconds(self.deadline)  # a UsageError for a deadline that is not one
        if self.deadline is not None and self.plan != "cheapest":
            raise UsageError('deadline= chooses among plans: pass it with plan="cheapest"')
        for name in ("concurrency", "max_batch", "pack"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"{name} must be an integer >= 1, got {value!r}")
        cost = self.max_cost
        if cost is not None and (isinstance(cost, bool) or not isinstance(cost, int | float) or not cost >= 0):
            raise UsageError(f"max_cost must be a number of USD >= 0, got {cost!r}")
        checkpoint_file(self.checkpoint)  # a UsageError for a folder, a bool or "memory"
        if not isinstance(self.dedup, bool):
            raise UsageError(f"dedup= is True (each distinct prompt once) or False (every row), not {self.dedup!r}")
        if not isinstance(self.calibrate, bool):
            raise UsageError(f"calibrate= is True (calibrate scored labels) or False, not {self.calibrate!r}")
        files = self.files
        if isinstance(files, str) or not isinstance(files, Sequence) or not all(isinstance(n, str) for n in files):
            raise UsageError(f"files= takes a list of column names whose values are file paths, not {files!r}")
        object.__setattr__(self, "files", tuple(files))
        if self.cascade is not None and not isinstance(self.cascade, Cascade):
            raise UsageError(f"cascade= takes an aiforge.Cascade(first=..., then=...), not {self.cascade!r}")

    @classmethod
    def of(cls, output: Any = None, **options: Any) -> BatchOptions:
        """The options with ``output=`` converted (the one conversion: a type, a spec, or None).

        A name ``run_batch`` does not take is a ``UsageError`` that says which was meant.
        """
        unknown = [name for name in options if name not in BATCH_ARGUMENTS and name not in ("concurrency", "max_batch")]
        if unknown:
            close = difflib.get_close_matches(unknown[0], BATCH_ARGUMENTS, n=1)
            hint = f"; did you mean {close[0]}=?" if close else ""
            if unknown[0].isupper():
                hint = f"; settings such as {unknown[0]} go on the agent: ChatAgent({unknown[0]}=...)"
            raise UsageError(
                f"run_batch got an unknown option {unknown[0]}={hint} "  # never its value: it may be a key
                f"(it takes concurrency, max_batch, {', '.join(BATCH_ARGUMENTS)})"
            )
        return cls(output=None if output is None else OutputSpec.of(output), **options)


ROW_OPTIONS = OPERATION_OPTIONS
"""What an operation that is one ``run_batch`` over its rows takes (map, classify, filter, extract, judge, dedup's
confirmation, join, evaluate): every option but ``output``, ``prompt`` and ``estimate``, which it sets itself."""
ROUND_OPTIONS = ("cache", "checkpoint", "restart", "max_cost", "dedup")
"""What an operation that runs batches of its own prompts round after round takes (agg's levels, topk's rounds):
packing, cascades, plans and calibration would change what a round answers, so they do not apply."""
PARTITION_OPTIONS = ("cache", "checkpoint", "restart", "max_cost", "dedup", "pack", "calibrate", "files")
"""What a row operation on a Dask partition takes (``ddf.aiforge.map``...): a cascade and a plan are chosen over the
whole batch, so they do not split into partitions."""
VECTOR_OPTIONS = ("cache",)
"""What an operation that only embeds takes (embed, cluster): the cache is its resume (a rerun embeds only the
texts not cached); nothing else applies to an embeddings request."""

_Operation = TypeVar("_Operation", bound=Callable[..., Any])


def take_options(settings: dict[str, Any], names: Sequence[str], operation: str) -> dict[str, Any]:
    """The options of ``names`` taken out of ``settings`` (the rest are the agent's settings); a batch option that
    is not among ``names`` is a ``UsageError`` naming the ones ``operation`` takes, and so is a name closer to an
    option than to any setting (``checkpiont=``), with the one meant among those it takes.

    >>> settings = {"model": "gpt-4o-mini", "max_cost": 1.0}
    >>> take_options(settings, ROUND_OPTIONS, "agg"), settings
    ({'max_cost': 1.0}, {'model': 'gpt-4o-mini'})
    """
    from aiforge.core.settings import closest_keyword, setting_name, unknown_keyword

    for name in settings:
        if name in names:
            continue
        if name in BATCH_ARGUMENTS or name in ("concurrency", "max_batch"):
            why = " (to price a batch first: agent.estimate_batch(df, prompt=...))" if name == "estimate" else ""
            raise UsageError(
                f"{operation} does not take {name}={why}; of the batch options it takes "
                f"{', '.join(f'{option}=' for option in names) or 'none'}"
            )
        # Closest to an option (one it takes or not): misspelt, said with the options it takes and the settings.
        near = (closest_keyword(name, OPERATION_OPTIONS) or "").rstrip("=")
        if setting_name(name) is None and near in OPERATION_OPTIONS:
            raise UsageError(unknown_keyword(name, names))
    return {name: settings.pop(name) for name in names if name in settings}


def with_options(names: Sequence[str]) -> Callable[[_Operation], _Operation]:
    """An operation taking the batch options ``names`` (``ROW_OPTIONS``, ``ROUND_OPTIONS``, ``VECTOR_OPTIONS``) in
    its ``**settings``: its signature lists each as a keyword with the type and default of ``BatchOptions``' field,
    and a call checks them (``take_options``) before the operation runs.

    The options are declared once (``BatchOptions``' fields) and each operation names which apply, so
    ``help(df.aiforge.map)``, ``inspect.signature`` and Jupyter's Shift-Tab show them before ``**settings``; an
    option an operation cannot honour (``pack=`` to ``agg``) is refused in one line naming those it takes.
    """

    def decorate(operation: _Operation) -> _Operation:
        signature = inspect.signature(operation)
        parameters = list(signature.parameters.values())
        rest = [p for p in parameters if p.kind is inspect.Parameter.VAR_KEYWORD]
        named = [p for p in parameters if p.kind is not inspect.Parameter.VAR_KEYWORD]
        taken = {p.name for p in named}
        fields = {field.name: field for field in dataclasses.fields(BatchOptions)}
        added = [
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=fields[name].default, annotation=fields[name].type
            )
            for name in names
            if name not in taken
        ]
        operation_name = operation.__name__

        @functools.wraps(operation)
        def checked(*args: Any, **keywords: Any) -> Any:
            extra = {name: value for name, value in keywords.items() if name not in taken}
            take_options(extra, names, operation_name)  # raises for a refused or misspelt option; takes nothing
            return operation(*args, **keywords)

        checked.__signature__ = signature.replace(parameters=[*named, *added, *rest])  # type: ignore[attr-defined]
        lines = "\n".join(f"    {p.name}: {p.annotation} = {p.default!r}" for p in added)
        checked.__doc__ = (
            f"{operation.__doc__ or ''}\n\nBatch options (``aiforge.batch.options.BatchOptions``; the other keywords "
            f"are the agent's settings, ``provider=``, ``MODEL=``...):\n\n{lines}\n"
        )
        return cast("_Operation", checked)

    return decorate
