"""The labels a classification chooses among, checked once for every operation that takes ``labels=``.

``df.aiforge.classify`` (pandas and Dask) and ``df.aiforge.evaluate`` take a list of label strings. A DataFrame
or a dict iterates as its column names or keys, and a string as its characters: each would silently become a
classification over the wrong labels, so each is a UsageError that says what was given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiforge.core.types import UsageError


def checked_labels(labels: Any, operation: str) -> tuple[str, ...]:
    """``labels`` as a tuple of distinct strings, in order; a UsageError naming ``operation`` for anything else.

    >>> checked_labels(["pos", "neg", "pos"], "classify")
    ('pos', 'neg')
    """
    if isinstance(labels, Mapping) or hasattr(labels, "columns"):
        # Iterating either gives its column names or keys: a classification over those, silently.
        frame = not isinstance(labels, Mapping)
        raise UsageError(
            f"{operation}: labels= takes a list of label strings, got a {type(labels).__name__} (its "
            f"{'column names' if frame else 'keys'} would be the labels): "
            "e.g. labels=['positive', 'negative'], or labels=df['label'].unique().tolist()."
        )
    if isinstance(labels, str):
        raise UsageError(f"{operation}: labels= takes a list of label strings, got the one string {labels!r}.")
    try:
        values = list(labels)
    except TypeError:
        raise UsageError(f"{operation}: labels= takes a list of label strings, got {type(labels).__name__}.") from None
    odd = [label for label in values if not isinstance(label, str)]
    if odd:
        raise UsageError(f"{operation}: labels must be strings, got {odd[0]!r} ({type(odd[0]).__name__}) among them.")
    unique = tuple(dict.fromkeys(values))
    if len(unique) < 2:
        raise UsageError(f"{operation}: give at least two distinct labels, got {values!r}.")
    return unique
