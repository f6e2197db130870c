"""The labels a label-like ``output=`` type answers (``classify``'s Literal, ``filter``'s bool, an Enum), as texts.

The one mapping from an output type to its labels: a scored row's answer (``label_scoring``), a cascade's labels
(``cascade``) and a label answer's length in an estimate (``identity.label_answer_tokens``) all read it.

A label is a value's text: a string as it is, anything else as its JSON (``True`` -> ``"true"``, ``3`` ->
``"3"``); an Enum member is its value's. ``bool`` (``filter``) is ``"true"`` / ``"false"``, a ``Literal``
(``classify``) its values, an ``Enum`` its members'.
"""

from __future__ import annotations

import enum
import json
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
