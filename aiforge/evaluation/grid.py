"""``evaluate``: every candidate (a prompt x an agent) run as one batch over the labelled rows, scored against truth.

Each candidate is one ``run_batch`` over the rows, as ``df.aiforge.map`` / ``classify`` run theirs: ``labels=``
asks for one of the labels (a ``Literal`` output, as ``classify``), ``output=`` for a structured answer, and
neither for text. The batch options (``cache=``, ``max_cost=``, ``plan=``/``deadline=`` for flex or the Batch API,
``pack=``, ...) go to every candidate's batch. ``checkpoint=`` is one file, as everywhere: each candidate's batch
keeps its checkpoint there under the candidate's name and its batch's fingerprint, so running the grid again with
one more candidate (or one prompt edited) asks only the new candidate's rows; the others are read back.

Without ``agents=`` the grid runs on the agent the settings make, as every other operation builds it
(``provider=``, ``MODEL=``...: a ``ChatAgent(memory="none", **settings)``); settings beside ``agents=`` are refused.
Rows whose truth is missing are left out before anything is asked (``EvalResult.unlabelled`` counts them). Every
candidate's batch is checked (its template against the columns, the options, its agent's labels and packing)
before the first candidate sends a request: a bad last candidate costs nothing.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from aiforge.batch.identity import check_budget_enforceable
from aiforge.batch.options import DEFAULT_CONCURRENCY, OPERATION_OPTIONS, ROW_OPTIONS, batch_options, with_options
from aiforge.batch.resume import CheckpointPart, checkpoint_file
from aiforge.chat.operation_agent import operation_agent
from aiforge.core.labels import checked_labels
from aiforge.core.settings import check_overrides
from aiforge.core.templates import RowTemplate, no_such_column
from aiforge.core.types import UsageError
from aiforge.evaluation.result import EvalResult, Kind

if TYPE_CHECKING:
    import pandas as pd

    from aiforge.batch.results import BatchResult
    from aiforge.chat.agent import ChatAgent

Metric = Callable[[Any, Any], "bool | float"]
"""``metric(prediction, truth)``: True / False, or a score in [0, 1]."""


@dataclass(frozen=True)
class Candidate:
    """One cell of the grid: a prompt template asked through one agent."""

    prompt: str
    """The prompt's name in ``prompts=``."""
    agent: str
    """The agent's name in ``agents=``."""
    template: str
    runner: ChatAgent

    @property
    def name(self) -> str:
        return f"{self.prompt}/{self.agent}"


@with_options(ROW_OPTIONS)
def evaluate(
    data: pd.DataFrame,
    prompts: Mapping[str, str],
    agents: Mapping[str, Any] | None = None,
    truth: str | None = None,
    *,
    labels: Sequence[str] | None = None,
    output: Any = None,
    metric: Metric | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    checkpoint: str | os.PathLike[str] | None = None,
    **options: Any,
) -> EvalResult:
    """Run every prompt x agent over the rows of ``data`` that have a ``truth`` and score them: an ``EvalResult``.

    Scoring: with ``labels``, a prediction is right when it is the truth (and kappa and macro-F1 are computed);
    else ``metric(prediction, truth)`` (True/False or a score in [0, 1]); the default metric compares the text
    reply and the truth as strings after ``strip()`` and ``casefold()``, or an ``output=`` value with ``==``. A
    failed row counts as wrong. ``agents`` values are ``ChatAgent``s or settings dicts
    (``{"provider": "openai", "MODEL": "gpt-4o-mini"}``: a ``ChatAgent(memory="none", **settings)``); without
    ``agents``, the one agent the keyword settings make (``provider=``, ``MODEL=``), named by its model. The other
    keywords are the batch options (``cache=``, ``max_cost=``, ``plan=``, ``pack=``...), which go to every
    candidate's batch. Every candidate is checked before the first request::

        result = evaluate(df, prompts={"terse": "Sentiment: {review}", "polite": "Please classify: {review}"},
                          agents={"mini": mini, "4o": big}, truth="label", labels=["pos", "neg"],
                          checkpoint="eval_runs.sqlite")
        result.summary
        evaluate(df, prompts={"terse": "Sentiment: {review}"}, truth="label", provider="openai", MODEL="gpt-4o")
    """
    settings = dict(options)
    options = batch_options(settings)
    kind = _kind(labels, output)
    label_set = checked_labels(labels, "evaluate") if labels is not None else None
    _check_frame(data, truth)
    assert truth is not None  # _check_frame refused anything but a column name
    agents = _grid_agents(agents, settings, options.get("cascade"))
    candidates = _candidates(prompts, agents, truth, data.columns)
    labelled = data[data[truth].notna()]
    if label_set is not None:
        _check_truth_in_labels(labelled[truth], label_set, truth)
    spec = Literal[label_set] if label_set is not None else output
    _check_batches(candidates, labelled, spec, concurrency, options)
    path = checkpoint_file(checkpoint, "evaluate")
    batches: dict[str, BatchResult] = {}
    for candidate in candidates:
        part = None if path is None else CheckpointPart(path, _checkpoint_name(candidate, labelled, spec))
        batches[candidate.name] = candidate.runner.run_batch(
            labelled, concurrency, max(len(labelled), 1), output=spec, prompt=candidate.template,
            checkpoint=part, **options,
        )
    return EvalResult(
        candidates=[(c.name, c.prompt, c.agent) for c in candidates], batches=batches, frame=labelled,
        truth=truth, kind=kind, labels=label_set, metric=metric, unlabelled=len(data) - len(labelled),
    )


def _kind(labels: Sequence[str] | None, output: Any) -> Kind:
    if labels is not None and output is not None:
        raise UsageError("evaluate: pass labels= (a label answer) or output= (a structured answer), not both")
    return "labels" if labels is not None else "output" if output is not None else "text"


def _check_frame(data: Any, truth: Any) -> None:
    if not isinstance(truth, str):
        raise UsageError(f"evaluate: truth= names the column of right answers, e.g. truth='label', not {truth!r:.60}")
    if truth not in data.columns:
        raise UsageError(no_such_column("evaluate: truth=", truth, data.columns))
    if data[truth].notna().sum() == 0:
        raise UsageError(f"evaluate: the truth column {truth!r} has no value: there is nothing to score against")


def _check_truth_in_labels(truth: pd.Series, labels: tuple[str, ...], column: str) -> None:
    """A truth the candidates cannot answer makes every score wrong by construction: say which values."""
    unknown = sorted({str(v) for v in truth.unique() if v not in labels})
    if unknown:
        shown = ", ".join(map(repr, unknown[:5])) + (f" (and {len(unknown) - 5} more)" if len(unknown) > 5 else "")
        raise UsageError(
            f"evaluate: the truth column {column!r} has values that are not among labels={list(labels)!r}: {shown}; "
            "add them to labels= or map the column onto the labels first"
        )


def _candidates(prompts: Any, agents: Any, truth: str, columns: Any) -> list[Candidate]:
    templates = _named("prompts", prompts, "{'short': 'Sentiment: {review}'}")
    runners = {name: _agent(name, value) for name, value in _named("agents", agents, "{'mini': agent}").items()}
    for name, template in templates.items():
        if not isinstance(template, str):
            raise UsageError(f"evaluate: prompts[{name!r}] is a row template string, not {type(template).__name__}")
        row_template = RowTemplate(template)
        if truth in row_template.fields:
            raise UsageError(
                f"evaluate: prompts[{name!r}] names the truth column {{{truth}}}: the answer would be in the question"
            )
        row_template.check(columns)
    return [Candidate(p, a, templates[p], runners[a]) for p in templates for a in runners]


def _grid_agents(agents: Any, settings: dict[str, Any], cascade: Any) -> Any:
    """``agents``, or one agent built from ``settings`` when it is None (named by its model); settings beside
    ``agents`` would be ignored silently, so they are a UsageError, as beside another operation's ``agent=``."""
    from aiforge.chat.agent import ChatAgent

    if agents is None:
        agent = operation_agent(None, settings, cascade)
        return {agent.model: agent}
    if settings:
        parameters = inspect.signature(ChatAgent.__init__).parameters
        check_overrides(settings, parameters, options=(*OPERATION_OPTIONS, "concurrency", "checkpoint"))
        raise UsageError(
            f"evaluate: settings ({', '.join(settings)}) configure the agent built when agents= is not given; "
            "with agents=, set them on each agent (a ChatAgent's settings, or its dict in agents=)"
        )
    return agents


def _check_batches(
    candidates: list[Candidate], rows: pd.DataFrame, spec: Any, concurrency: int, options: dict[str, Any]
) -> None:
    """What each candidate's batch would refuse before its first request, checked for all of them before the first
    candidate runs: the options, each template against the rows (a field naming no column, or no field at all), and
    each agent's tools and labels against ``pack=``, ``calibrate=`` and ``LABELS_BY``, and its price against
    ``max_cost=`` (a ``ConfigError`` naming ``PRICES``)."""
    from aiforge.batch.label_scoring import check_calibration, scored_labels
    from aiforge.batch.options import BatchOptions
    from aiforge.batch.orchestrator import checked_item_type
    from aiforge.batch.packing import check_packable
    from aiforge.core.templates import batch_prompts

    checked = BatchOptions.of(concurrency=concurrency, max_batch=max(len(rows), 1), output=spec, **options)
    for prompt, template in {c.prompt: c.template for c in candidates}.items():
        try:
            batch_prompts(rows, template)
        except UsageError as exc:
            raise UsageError(f"evaluate: prompts[{prompt!r}]: {exc}") from None
    for name, runner in {c.agent: c.runner for c in candidates}.items():
        check_budget_enforceable(runner, checked.max_cost)
        try:
            checked_item_type(runner)
            check_packable(runner, checked.pack)
            scored = scored_labels(runner.provider, runner.settings, checked.output, tools=bool(runner.tools))
            check_calibration(checked, scored)
        except UsageError as exc:
            raise UsageError(f"evaluate: agents[{name!r}]: {exc}") from None


def _named(what: str, value: Any, example: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise UsageError(f"evaluate: {what}= takes a dict of name -> {what[:-1]}, e.g. {what}={example}")
    if not value:
        raise UsageError(f"evaluate: {what}= is empty: give at least one, e.g. {what}={example}")
    odd = [name for name in value if not isinstance(name, str) or not name]
    if odd:
        raise UsageError(f"evaluate: the names in {what}= are non-empty strings, not {odd[0]!r}")
    return dict(value)


def _agent(name: str, value: Any) -> ChatAgent:
    from aiforge.chat.agent import ChatAgent

    if isinstance(value, ChatAgent):
        return value
    if isinstance(value, Mapping):
        return ChatAgent(memory="none", **value)
    raise UsageError(
        f"evaluate: agents[{name!r}] is a ChatAgent or a dict of its settings "
        f"(e.g. {{'provider': 'openai', 'MODEL': 'gpt-4o-mini'}}), not {type(value).__name__}"
    )


def _checkpoint_name(candidate: Candidate, rows: pd.DataFrame, output: Any) -> str:
    """The candidate's part of the checkpoint file: its name, then its batch's fingerprint (an edited prompt, other
    rows or another model is another part, never a mismatch with an earlier run)."""
    from aiforge.batch.identity import batch_identity
    from aiforge.batch.label_scoring import scored_labels
    from aiforge.batch.request.answer import output_spec
    from aiforge.core.templates import batch_prompts

    agent, spec = candidate.runner, output_spec(output)
    scored = scored_labels(agent.provider, agent.settings, spec, tools=bool(agent.tools))
    key = batch_identity(agent, batch_prompts(rows, candidate.template).texts, spec, scored=scored is not None).key
    return f"{candidate.name}-{key[:16]}"
