"""``df.groupby(keys).aiforge`` and ``s.groupby(keys).aiforge`` (``GroupByOperations``): ``agg`` per group of a
pandas groupby, installed on pandas' groupby classes when this module is imported."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from aiforge.batch.options import DEFAULT_CONCURRENCY, ROUND_OPTIONS, with_options
from aiforge.dataframes.results import ATTRS_KEY, remember

if TYPE_CHECKING:
    from aiforge.chat.agent import ChatAgent


class GroupByOperations:
    """``df.groupby(keys).aiforge`` and ``s.groupby(keys).aiforge``: ``agg`` per group.

    pandas registers no accessors on groupby objects, so importing this module sets an ``aiforge`` property on
    pandas' ``DataFrameGroupBy`` and ``SeriesGroupBy`` (unless they have one already).
    """

    def __init__(self, grouped: Any) -> None:
        self._grouped = grouped

    @with_options(ROUND_OPTIONS)
    def agg(
        self,
        prompt: str,
        output: Any = None,
        *,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.Series:
        """One answer per group, a Series on the groupby's keys (a MultiIndex for several), ``dropna`` and
        ``observed`` as pandas applies them: ``df.groupby("product").aiforge.agg("Top complaint in {review}")``.
        The ``AggReport`` is in its ``.attrs["aiforge"]``, and at ``df.aiforge.last_report`` of the grouped frame."""
        from aiforge.semantic.agg.frames import agg_groups

        result = agg_groups(self._grouped, prompt, output, agent, concurrency, settings)
        remember(self._grouped.obj, result.attrs[ATTRS_KEY])
        return result


def _install_groupby_accessor() -> None:
    from pandas.api.typing import DataFrameGroupBy, SeriesGroupBy

    for grouped in (DataFrameGroupBy, SeriesGroupBy):
        if not hasattr(grouped, ATTRS_KEY):
            setattr(grouped, ATTRS_KEY, property(GroupByOperations, doc=GroupByOperations.__doc__))


_install_groupby_accessor()
