"""The labels of a cascade: what a label-like ``output=`` type can answer, as the texts a provider scores.

A label is a value's text: a string as it is, anything else as its JSON (``True`` -> ``"true"``, ``3`` ->
``"3"``); an Enum member is its value's. ``bool`` (``filter``) is ``"true"`` / ``"false"``, a ``Literal``
(``classify``) its values, an ``Enum`` its members'.
"""

from __future__ import annotations

import enum
import json
import sys
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

from aiforge.core.types import UsageError

if TYPE_CHECKING:
    from aiforge.core.output import OutputSpec


def label_of(value: Any) -> str:
    """The label text of an output value (or of a user's label in a ``truth=`` column)."""
    if isinstance(value, enum.Enum):
        value = value.value
    if hasattr(value, "dtype") and hasattr(value, "item"):  # a NumPy scalar: its Python value
        value = value.item()
    return value if isinstance(value, str) else json.dumps(value)


def label_values(spec: OutputSpec | None) -> dict[str, Any]:
    """Each label's text -> the output value it stands for; a ``UsageError`` for an output that is no label."""
    kind = None if spec is None else spec.output_type
    if kind is bool:
        return {"true": True, "false": False}
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return {label_of(member): member for member in kind}
    if get_origin(kind) is Literal:
        return {label_of(value): value for value in get_args(kind)}
    named = "no output=" if spec is None else f"output={spec.name}"
    raise UsageError(
        f"cascade= answers labels: it needs a label output (a Literal, an Enum or bool, as classify and filter "
        f"use), not {named}"
    )


def truth_labels(items: Any, column: str | None, values: dict[str, Any]) -> list[str | None] | None:
    """The label of each row in the ``truth=`` column of ``items`` (None where missing); None without ``truth``."""
    if column is None:
        return None
    pd = sys.modules.get("pandas")
    if pd is None or not isinstance(items, pd.DataFrame):
        raise UsageError(
            f"Cascade(truth={column!r}) names a column of a DataFrame, but the items are a {type(items).__name__}"
        )
    if column not in items.columns:
        raise UsageError(f"Cascade(truth={column!r}): the DataFrame has no such column (it has {list(items.columns)})")
    labels: list[str | None] = [None if pd.isna(value) else label_of(value) for value in items[column].tolist()]
    odd = next((label for label in labels if label is not None and label not in values), None)
    if odd is not None:
        raise UsageError(f"Cascade(truth={column!r}) has the label {odd!r}, which is not one of {list(values)}")
    return labels
