"""The joined DataFrame from matched row pairs, by pandas ``merge``'s conventions.

``how``: ``"inner"`` keeps the matched pairs, ``"left"`` adds every unmatched left row (right columns null),
``"right"`` every unmatched right row, ``"outer"`` both. One row per matched pair: a left row matching three
right rows is three rows. Rows follow the left frame's order, a left row's matches in the right frame's order;
with ``how="right"`` they follow the right frame's order instead, and with ``"outer"`` the unmatched right rows
come last. A column name both frames have gets ``suffixes`` (``("_x", "_y")``; ``None`` keeps that side's name).

The result's index is a two-level ``MultiIndex`` named ``("left", "right")``: each row's index label in the left
and in the right frame (null on the side an unmatched row lacks), so ``result.index.get_level_values("left")``
leads back to the left frame. As in ``merge``, a column that gains nulls may change dtype (int to float).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from aiforge.core.types import UsageError

if TYPE_CHECKING:
    import pandas as pd

HOWS = ("inner", "left", "right", "outer")
INDEX_NAMES = ("left", "right")
"""The levels of the joined frame's index: the left row's label, then the right row's."""
_NONE = -1
"""The position standing for "no row on this side" in a pair."""


def check_how(how: Any) -> str:
    if how not in HOWS:
        raise UsageError(f"join: how= is one of {', '.join(map(repr, HOWS))} (pandas merge's), not {how!r}.")
    return str(how)


def check_suffixes(suffixes: Any, left: pd.DataFrame, right: pd.DataFrame) -> tuple[str | None, str | None]:
    """``suffixes`` as a pair of strings or None that leaves no clashing column; a ``UsageError`` otherwise."""
    if isinstance(suffixes, str) or not isinstance(suffixes, Sequence) or len(suffixes) != 2:
        raise UsageError(f"join: suffixes= is a pair such as ('_x', '_y'), got {suffixes!r}.")
    if not all(s is None or isinstance(s, str) for s in suffixes):
        raise UsageError(f"join: suffixes= holds strings (or None to keep a side's names), got {suffixes!r}.")
    pair = (suffixes[0], suffixes[1])
    _suffixed(list(left.columns), list(right.columns), pair)
    return pair


def joined_frame(
    left: pd.DataFrame,
    right: pd.DataFrame,
    pairs: set[tuple[int, int]],
    how: str,
    suffixes: tuple[str | None, str | None],
) -> pd.DataFrame:
    """Both frames' columns side by side, one row per pair of positions (plus the unmatched rows ``how`` keeps)."""
    import pandas as pd

    rows = _rows(pairs, len(left), len(right), how)
    left_columns, right_columns = _suffixed(list(left.columns), list(right.columns), suffixes)
    parts = [_taken(left, [i for i, _ in rows], left_columns), _taken(right, [j for _, j in rows], right_columns)]
    index = pd.MultiIndex.from_arrays(
        [_labels(left.index, [i for i, _ in rows]), _labels(right.index, [j for _, j in rows])], names=INDEX_NAMES
    )
    joined = pd.concat(parts, axis=1)
    joined.index = index
    return joined


def _rows(pairs: set[tuple[int, int]], n_left: int, n_right: int, how: str) -> list[tuple[int, int]]:
    rows = set(pairs)
    if how in ("left", "outer"):
        matched = {i for i, _ in pairs}
        rows |= {(i, _NONE) for i in range(n_left) if i not in matched}
    if how in ("right", "outer"):
        matched = {j for _, j in pairs}
        rows |= {(_NONE, j) for j in range(n_right) if j not in matched}
    if how == "right":
        return sorted(rows, key=lambda row: (row[1], row[0]))
    # Unmatched right rows (outer) after every left row: their left position -1 would sort them first.
    return sorted(rows, key=lambda row: (row[0] == _NONE, row[0], row[1]))


def _suffixed(
    left: list[Any], right: list[Any], suffixes: tuple[str | None, str | None]
) -> tuple[list[Any], list[Any]]:
    """Each side's column names with ``suffixes`` on the ones both sides have; a clash left over is a UsageError."""
    both = set(left) & set(right)
    if both and suffixes == (None, None):
        raise UsageError(f"join: both frames have the columns {sorted(map(str, both))}: give suffixes=('_x', '_y').")

    def named(columns: list[Any], suffix: str | None) -> list[Any]:
        return [f"{c}{suffix}" if c in both and suffix is not None else c for c in columns]

    left_names, right_names = named(left, suffixes[0]), named(right, suffixes[1])
    clashes = set(left_names) & set(right_names)
    if clashes or len(set(left_names)) < len(left_names) or len(set(right_names)) < len(right_names):
        shown = sorted(map(str, clashes)) or "a suffixed name that is already a column"
        raise UsageError(f"join: suffixes={suffixes!r} leave clashing column names ({shown}): choose others.")
    return left_names, right_names


def _taken(frame: pd.DataFrame, positions: list[int], columns: list[Any]) -> pd.DataFrame:
    """The rows of ``frame`` at ``positions`` (-1: a row of nulls), renamed to ``columns``, on a fresh index."""
    import pandas as pd

    taken = frame.reset_index(drop=True).reindex(pd.Index(positions, dtype="int64"))
    taken.columns = pd.Index(columns, dtype=object)
    return taken.reset_index(drop=True)


def _labels(index: pd.Index, positions: list[int]) -> list[Any]:
    return [index[p] if p != _NONE else None for p in positions]
