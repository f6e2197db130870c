"""``rank_rows``, what ``topk`` runs (its arguments checked, its agent built, a method run), and ``ranked_frame``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiforge.batch.options import DEFAULT_CONCURRENCY, ROUND_OPTIONS, take_options
from aiforge.chat.operation_agent import operation_agent
from aiforge.core.files import refuse_files
from aiforge.core.templates import VALUE_FIELD, RowTemplate, batch_prompts
from aiforge.core.types import UsageError
from aiforge.semantic.topk.methods import DEFAULT_WINDOW, listwise, pairwise, window_size
from aiforge.semantic.topk.prompts import row_text
from aiforge.semantic.topk.rounds import Asker, TopKRun

if TYPE_CHECKING:
    import pandas as pd

    from aiforge.chat.agent import ChatAgent

METHODS = ("listwise", "pairwise")
RANK_COLUMN = "rank"
"""The column of each chosen row's rank, 1 for the best."""


def rank_rows(
    data: Any,
    prompt: str,
    k: int,
    *,
    method: str = "listwise",
    agent: ChatAgent | None = None,
    window: int = DEFAULT_WINDOW,
    concurrency: int = DEFAULT_CONCURRENCY,
    **settings: Any,
) -> TopKRun:
    """The ``k`` rows of ``data`` (a DataFrame or Series) that best satisfy ``prompt``, best first, as a ``TopKRun``.

    ``prompt`` is a row template naming the fields compared; k above the number of rows ranks them all. The batch
    options of ``batch.options.ROUND_OPTIONS`` go to every round's ``run_batch``; the rest configure the agent built
    when ``agent=None``::

        run = rank_rows(tickets, "the most urgent ticket: {ticket}", 3, provider=fake)
        tickets.iloc[run.positions]
    """
    _check_arguments(prompt, k, method, window)
    _check_rank_column(data)
    options = take_options(settings, ROUND_OPTIONS, "topk")
    _refuse_file_columns(data, prompt)
    rows = batch_prompts(data, prompt)  # a UsageError for a field naming no column, before any request
    assert rows.template is not None and rows.values is not None  # a str prompt always gives both
    texts = [row_text(values, rows.template) for values in rows.values]
    run = TopKRun(method, k, len(texts), window_size(window, k) if method == "listwise" else None)
    asker = Asker(_agent(agent, settings), concurrency, options, run, rows.index)
    criterion = rows.template.shown()
    if method == "listwise":
        assert run.window is not None
        run.positions = listwise(texts, criterion, k, run.window, asker)
    else:
        run.positions = pairwise(texts, criterion, k, asker)
    return run


def _refuse_file_columns(data: Any, prompt: str) -> None:
    """A file the prompt names would be compared by its path: a ``UsageError`` naming map/extract or split."""
    if not hasattr(data, "columns"):
        refuse_files(data, "topk", data.name)
        return
    for field in RowTemplate(prompt).fields:
        if field in data.columns:
            refuse_files(data[field], "topk", field)


def _check_arguments(prompt: Any, k: Any, method: Any, window: Any) -> None:
    if not isinstance(prompt, str) or not prompt.strip():
        raise UsageError(
            f"topk: prompt= is a row template such as 'the most urgent ticket: {{ticket}}', got {prompt!r}"
        )
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise UsageError(f"topk: k is the number of rows to return, an integer >= 1, got {k!r}")
    if method not in METHODS:
        raise UsageError(f"topk: method= is one of {', '.join(map(repr, METHODS))}, not {method!r}")
    if isinstance(window, bool) or not isinstance(window, int) or window < 2:
        raise UsageError(f"topk: window= is the rows per listwise request, an integer >= 2, got {window!r}")


def _agent(agent: ChatAgent | None, settings: dict[str, Any]) -> ChatAgent:
    """The agent given, or one built from ``settings`` at TEMPERATURE=0 where the provider sends a temperature."""
    built = operation_agent(agent, settings)
    if agent is not None or "TEMPERATURE" in settings:
        return built
    # Greedy decoding makes a run repeatable; a provider that never sends a temperature would warn if one were set.
    if built.provider.temperature_unsent is not None or built.settings.TEMPERATURE == 0:
        return built
    return operation_agent(None, {**settings, "TEMPERATURE": 0})


def ranked_frame(data: pd.DataFrame | pd.Series, positions: list[int]) -> pd.DataFrame:
    """The rows of ``data`` at ``positions`` in that order, on their index, with ``rank`` 1..len appended.

    A Series becomes a frame of its values (its name, or ``value``) and ``rank``; a frame that has a ``rank`` column
    already is a UsageError rather than losing it (``rank_rows`` checks it before any request).
    """
    import pandas

    if isinstance(data, pandas.Series):
        data = data.to_frame(data.name if data.name is not None else VALUE_FIELD)
    frame: pd.DataFrame = data
    _check_rank_column(frame)
    ranked = frame.iloc[positions].copy()
    ranked[RANK_COLUMN] = range(1, len(positions) + 1)
    return ranked


def _check_rank_column(data: Any) -> None:
    """Returns if the rows have no ``rank`` column for ``topk``'s to overwrite; a UsageError before any request."""
    columns = getattr(data, "columns", None)
    if columns is not None and RANK_COLUMN in columns:
        raise UsageError(
            f"topk adds a {RANK_COLUMN!r} column and the frame has one: rename it first, "
            f"e.g. df.rename(columns={{{RANK_COLUMN!r}: 'old_rank'}})"
        )
