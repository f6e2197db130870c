"""Typed DataFrame columns from structured outputs: one column per field, with pandas' nullable dtypes.

Column dtypes come from the output's JSON schema, so pydantic models, TypedDicts and dataclasses are
handled alike: boolean -> ``boolean``, integer -> ``Int64``, number -> ``Float64``, string -> ``string``,
a ``Literal`` or an ``Enum`` -> a ``category`` with exactly its values as categories (an enum member is
stored as its value), anything else (nested models as dicts, lists as lists) -> ``object``. A failed row
(value ``None``) is null in every column.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from aiforge.core.output import OutputSpec, resolve_ref

if TYPE_CHECKING:
    import pandas as pd

OUTPUT_COLUMN = "output"

_SCALAR_DTYPES: dict[str, Literal["boolean", "Int64", "Float64", "string"]] = {
    "boolean": "boolean",
    "integer": "Int64",
    "number": "Float64",
    "string": "string",
}


def output_columns(values: Sequence[Any], spec: OutputSpec, index: Any) -> pd.DataFrame:
    """A DataFrame on ``index`` with the fields of each validated value (``None`` for a failed row)."""
    import pandas as pd

    if len(values) != len(index):
        raise ValueError(f"output_columns: {len(values)} values for an index of {len(index)} rows.")
    defs = spec.schema.get("$defs", {})
    if not spec.is_object:
        column = _column([_plain(spec, v) for v in values], spec.schema, defs)
        return pd.DataFrame({OUTPUT_COLUMN: pd.Series(column, index=index, copy=False)}, index=index)
    rows = [None if v is None else _plain(spec, v) for v in values]
    properties = spec.schema["properties"]
    data = {}
    for name, schema in properties.items():
        cells = [None if row is None else row.get(name) for row in rows]
        data[name] = pd.Series(_column(cells, schema, defs), index=index, copy=False)
    return pd.DataFrame(data, index=index, columns=list(properties))


def _plain(spec: OutputSpec, value: Any) -> Any:
    """``value`` as Python data: models and dataclasses as dicts, enum members kept for ``_column``."""
    if value is None:
        return None
    return spec.adapter.dump_python(value, mode="python")


def _column(cells: list[Any], schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    """``cells`` as a pandas array of the dtype the schema calls for."""
    import pandas as pd

    schema = _non_null(schema, defs)
    categories = _categories(schema, defs)
    if categories is not None:
        cells = [c.value if isinstance(c, enum.Enum) else c for c in cells]
        return pd.Categorical(cells, categories=categories)
    dtype = _SCALAR_DTYPES.get(str(schema.get("type")))
    if dtype is not None:
        return pd.array(cells, dtype=dtype)
    column = pd.array([None] * len(cells), dtype=object)
    column[:] = cells  # element-wise, so lists and dicts stay whole instead of being broadcast
    return column


def _non_null(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """The schema behind ``Optional[X]`` (and a ``$ref``), since every column is nullable anyway."""
    schema = resolve_ref(schema, defs)
    branches = [s for s in schema.get("anyOf", []) if resolve_ref(s, defs).get("type") != "null"]
    if len(branches) == 1 and len(schema.get("anyOf", [])) == 2:
        return resolve_ref(branches[0], defs)
    return schema


def _categories(schema: dict[str, Any], defs: dict[str, Any]) -> list[Any] | None:
    if isinstance(schema.get("enum"), list):
        return [v for v in schema["enum"] if v is not None]
    if "const" in schema:
        return [schema["const"]]
    branches = [resolve_ref(s, defs) for s in schema.get("anyOf", [])]
    if branches and all("const" in b or "enum" in b for b in branches):
        values = [v for b in branches for v in (b.get("enum") or [b.get("const")])]
        return list(dict.fromkeys(v for v in values if v is not None))
    return None
