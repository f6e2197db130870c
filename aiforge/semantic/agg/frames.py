"""pandas data to ``agg``'s groups of rows and back: a frame, a Series, a ``groupby`` and its keys.

The prompt names the columns each row is read from (``agg.chunks.AggInstruction``); a row whose named
values are all missing is left out, as pandas' reductions skip NA. Groups are pandas' own: ``ngroup()`` says
which group a row is in and ``size()`` gives the result's index, so several keys give a MultiIndex and the
groupby's ``dropna``, ``observed`` and ``sort`` hold as in any pandas aggregation (a category with no row,
under ``observed=False``, answers NA without a request).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from aiforge.chat.operation_agent import operation_agent
from aiforge.core.files import refuse_files
from aiforge.core.templates import VALUE_FIELD, RowTemplate
from aiforge.core.types import UsageError
from aiforge.semantic.agg.chunks import AggInstruction, row_text
from aiforge.semantic.agg.reduce import check_groups, reduce_groups
from aiforge.semantic.agg.report import AggReport

if TYPE_CHECKING:
    from pandas.core.groupby import DataFrameGroupBy, SeriesGroupBy

    from aiforge.chat.agent import ChatAgent

    Grouped = DataFrameGroupBy[Any, Any] | SeriesGroupBy[Any, Any]

AGG_NAME = "response"
"""The name of a grouped ``agg``'s Series."""


def instruction_for(data: pd.DataFrame | pd.Series, prompt: Any) -> AggInstruction:
    """The instruction of ``prompt`` over ``data``'s columns (a Series: its values); ``UsageError`` naming the fix."""
    if isinstance(data, pd.Series):
        name = data.name if isinstance(data.name, str) else VALUE_FIELD
        instruction = AggInstruction.of(prompt, shown={VALUE_FIELD: name})
        odd = [field for field in instruction.fields if field not in (VALUE_FIELD, data.name)]
        if odd:
            raise UsageError(
                f"agg: {{{odd[0]}}} names no column: a Series' prompt reads its values, named {{{VALUE_FIELD}}}"
                + (f" or {{{data.name}}}" if isinstance(data.name, str) else "")
                + ", or no field at all."
            )
        return instruction
    instruction = AggInstruction.of(prompt)
    if not instruction.fields:
        example = str(data.columns[0]) if len(data.columns) else "review"
        raise UsageError(
            f"agg: the prompt names no column, so there is nothing to read: name the columns in braces, e.g. "
            f"df.aiforge.agg('What do the {{{example}}}s have in common?')."
        )
    RowTemplate(prompt).check(data.columns)
    return instruction


def row_texts(data: pd.DataFrame | pd.Series, instruction: AggInstruction) -> list[str | None]:
    """Each row as the model reads it, None for a row whose named values are all missing."""
    if isinstance(data, pd.Series):
        columns = pd.DataFrame({VALUE_FIELD: data.to_numpy(dtype=object)}, index=data.index)
        fields: Sequence[str] = (VALUE_FIELD,)
    else:
        fields = instruction.fields
        columns = data[list(fields)]
    for name, column in columns.items():  # a file's str is its path: refused, naming map/extract or split
        refuse_files(column, "agg", data.name if isinstance(data, pd.Series) else name)
    missing = columns.isna().to_numpy()
    texts: list[str | None] = []
    for values, gone in zip(columns.itertuples(index=False, name=None), missing, strict=True):
        shown = [None if out else value for value, out in zip(values, gone, strict=True)]
        texts.append(None if gone.all() else row_text(shown, fields))
    return texts


def split_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """Pop ``agg``'s batch options (``ROUND_OPTIONS``) out of ``settings``, the rest configure the agent; another
    batch option is a UsageError naming them."""
    from aiforge.batch.options import ROUND_OPTIONS, take_options

    return take_options(settings, ROUND_OPTIONS, "agg")


def agg_data(
    data: pd.DataFrame | pd.Series, prompt: Any, output: Any, agent: ChatAgent | None, concurrency: int,
    settings: dict[str, Any],
) -> tuple[Any, AggReport]:
    """The one answer for all of ``data``'s rows, and the report."""
    instruction = instruction_for(data, prompt)
    options = split_settings(settings)
    texts = [text for text in row_texts(data, instruction) if text is not None]
    check_groups([texts])
    answers, report = reduce_groups(
        operation_agent(agent, settings), instruction.text, [texts], output=output, concurrency=concurrency,
        options=options,
    )
    return answers[0], report


def agg_groups(
    grouped: Grouped, prompt: Any, output: Any, agent: ChatAgent | None, concurrency: int,
    settings: dict[str, Any],
) -> pd.Series:
    """One answer per group of ``grouped``, a Series on the groups' index (``.attrs["aiforge"]``: the report)."""
    data = cast("pd.DataFrame | pd.Series[Any]", grouped.obj)
    instruction = instruction_for(data, prompt)
    options = split_settings(settings)
    groups = grouped_texts(grouped, row_texts(data, instruction))
    check_groups(groups.texts)
    answers, report = reduce_groups(
        operation_agent(agent, settings), instruction.text, groups.texts, output=output, concurrency=concurrency,
        options=options,
    )
    result = groups.series(answers, typed=output is not None)
    result.attrs["aiforge"] = report
    return result


@dataclass(frozen=True)
class GroupedTexts:
    """The texts of each group with a row, in the groupby's order, and where each sits in its result index."""

    index: pd.Index
    """The result's index: every group ``size()`` lists (a category without rows too, under ``observed=False``)."""
    observed: list[int]
    """The position in ``index`` of each group with rows, in ``ngroup()`` order."""
    texts: list[list[str]]

    def series(self, answers: Sequence[Any], *, typed: bool) -> pd.Series:
        """``answers`` (one per group with rows) on the whole index; NA for the others."""
        values: list[Any] = [None] * len(self.index)
        for position, answer in zip(self.observed, answers, strict=True):
            values[position] = answer
        return pd.Series(values, index=self.index, name=AGG_NAME, dtype=object if typed else "string")


def grouped_texts(grouped: Grouped, texts: Sequence[str | None]) -> GroupedTexts:
    """``texts`` (one per row of ``grouped.obj``, None to leave out) gathered by ``grouped``'s groups."""
    sizes = grouped.size()
    if not isinstance(sizes, pd.Series):
        raise UsageError("agg on a groupby needs its keys as the index: group with as_index=True (the default).")
    observed = [position for position, size in enumerate(sizes.to_numpy()) if size > 0]
    groups: list[list[str]] = [[] for _ in observed]
    for code, text in zip(grouped.ngroup().to_numpy(), texts, strict=True):
        if text is not None and not pd.isna(code):
            groups[int(code)].append(text)
    return GroupedTexts(sizes.index, observed, groups)


def by_groupby(data: pd.DataFrame, by: Any) -> DataFrameGroupBy[Any, Any]:
    """``data.groupby(by)`` as ``agg(by=...)`` groups: sorted keys, NA keys dropped, only categories with rows. A key
    names a column or an index level (``split``'s chunks fold back by their document's level)."""
    checked_keys(data.columns, by, levels=data.index.names)
    return data.groupby(by, sort=True, dropna=True, observed=True)


def checked_keys(columns: pd.Index, by: Any, levels: Sequence[Any] = ()) -> list[Any]:
    """``by`` as a list of column (or index ``levels``) names; a ``UsageError`` for one that names neither."""
    keys = by if isinstance(by, list) else [by]
    for key in keys:
        try:
            found = key in columns or (key is not None and key in levels)
        except TypeError:  # unhashable
            found = False
        if not found:
            from aiforge.core.templates import no_such_column

            raise UsageError(no_such_column("agg: by=", key, columns))
    return keys


class AggText(str):
    """``agg``'s text answer: a ``str``, with the call's ``AggReport`` in ``.attrs["aiforge"]`` as pandas results
    keep their batch."""

    attrs: dict[str, Any]


def agg_answer(
    data: pd.DataFrame | pd.Series, prompt: Any, by: Any, output: Any, agent: ChatAgent | None, concurrency: int,
    settings: dict[str, Any],
) -> Any:
    """``df.aiforge.agg``: the answer (an ``AggText``, or the ``output=`` value), or with ``by`` a Series by group."""
    if by is not None:
        if isinstance(data, pd.Series):
            raise UsageError("agg: by= groups a DataFrame's rows; group a Series with s.groupby(...).aiforge.agg(...).")
        return agg_groups(by_groupby(data, by), prompt, output, agent, concurrency, settings)
    answer, report = agg_data(data, prompt, output, agent, concurrency, settings)
    if output is not None:
        return answer
    text = AggText(answer)
    text.attrs = {"aiforge": report}
    return text
