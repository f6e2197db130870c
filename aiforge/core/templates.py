"""Row templates: ``"Classify this review: {review}"`` filled from a row's columns.

Fields are plain column names parsed by ``string.Formatter`` (``{{`` and ``}}`` escape braces). Attribute
or index access, format specs and conversions are refused when the template is built: a template is
data from the user's notebook and nothing in it is evaluated.

``batch_prompts`` turns the items of a batch (a list, a pandas Series or DataFrame) into one prompt per row.
A one-dimensional item is the field ``{value}`` (a named Series' values are also its name); a DataFrame's
fields are its columns.
"""

from __future__ import annotations

import math
import string
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

VALUE_FIELD = "value"
"""The field of a one-dimensional item (a list's string, a Series' value) in a template."""


class RowTemplate:
    """A prompt template whose ``{column}`` fields are filled from one row at a time."""

    __slots__ = ("template", "fields", "_parts")

    def __init__(self, template: str) -> None:
        self.template = template
        parts: list[tuple[str, str | None]] = []
        try:
            parsed = list(string.Formatter().parse(template))
        except ValueError as exc:
            raise ValueError(f"Prompt template {template!r}: {exc} (escape literal braces as {{{{ and }}}}).") from None
        for literal, name, spec, conversion in parsed:
            if name is not None:
                _check_field(template, name, spec, conversion)
            parts.append((literal, name))
        self._parts = tuple(parts)
        self.fields: tuple[str, ...] = tuple(dict.fromkeys(name for _, name in parts if name is not None))

    def check(self, columns: Iterable[Any]) -> None:
        """ValueError naming every field that is not among ``columns``, and the columns that exist."""
        available = list(columns)
        missing = [name for name in self.fields if name not in available]
        if missing:
            raise ValueError(
                f"The prompt template names column(s) {', '.join(map(repr, missing))} that do not exist; "
                f"the columns are: {', '.join(map(repr, available)) or '(none)'}."
            )

    def fill(self, row: Mapping[str, Any]) -> str:
        """The template with each field replaced by the row's value (a missing value reads as empty)."""
        pieces = []
        for literal, name in self._parts:
            pieces.append(literal)
            if name is not None:
                try:
                    value = row[name]
                except KeyError:
                    raise ValueError(f"The row has no column {name!r} named by the prompt template.") from None
                pieces.append("" if _is_missing(value) else str(value))
        return "".join(pieces)

    def __repr__(self) -> str:
        return f"RowTemplate({self.template!r})"


def _check_field(template: str, name: str, spec: str | None, conversion: str | None) -> None:
    if not name:
        raise ValueError(f"Empty field {{}} in prompt template {template!r}: name a column, e.g. {{review}}.")
    if "." in name or "[" in name:
        raise ValueError(
            f"Field {{{name}}} in prompt template {template!r} uses attribute or index access, which "
            "templates do not allow: name a column as it is (escape literal braces as {{ and }})."
        )
    if spec or conversion:
        raise ValueError(
            f"Field {{{name}}} in prompt template {template!r} has a format spec or conversion "
            "(':...' or '!...'), which templates do not allow: name a column as it is."
        )


def _is_missing(value: Any) -> bool:
    """None, NaN, pandas' NA and NaT, without importing pandas."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    return type(value).__name__ in ("NAType", "NaTType")


@dataclass(frozen=True, slots=True)
class BatchPrompts:
    """The prompt of each item of a batch, the items that cannot be asked, and the input's index."""

    texts: list[str]
    """One prompt per item; where a value is missing, the template as it reads with that value empty."""
    missing: dict[int, str]
    """Position -> ``"missing value: <fields>"`` for the items that must fail without a call."""
    index: Any = None
    """The pandas index of a Series or DataFrame input, ``None`` for a list (positions)."""


def batch_prompts(items: Any, prompt: str | RowTemplate | None = None) -> BatchPrompts:
    """The prompts of ``items``, ``prompt`` filled from each row; ``ValueError`` before anything runs."""
    template = RowTemplate(prompt) if isinstance(prompt, str) else prompt
    if isinstance(items, str):
        raise ValueError("run_batch takes a list of strings (or a pandas Series or DataFrame), not a single string")
    pd = sys.modules.get("pandas")  # a DataFrame or Series means pandas is loaded already
    if pd is not None and isinstance(items, pd.DataFrame):
        return _frame_prompts(items, template)
    if pd is not None and isinstance(items, pd.Series):
        names = [VALUE_FIELD, *([items.name] if isinstance(items.name, str) else [])]
        return _value_prompts(items.tolist(), names, template, items.index)
    try:
        values = list(items)
    except TypeError:
        raise ValueError(f"run_batch takes a list of strings, got {type(items).__name__}") from None
    return _value_prompts(values, [VALUE_FIELD], template, None)


def _frame_prompts(frame: Any, template: RowTemplate | None) -> BatchPrompts:
    columns = list(frame.columns)
    if template is None:
        if len(columns) != 1:
            raise ValueError(
                f"run_batch got a DataFrame with {len(columns)} columns ({', '.join(map(repr, columns))}) and no "
                "prompt: pass prompt='... {column} ...' to build each row's prompt from its columns, "
                "or pass the one column to ask, e.g. df['review']."
            )
        return _value_prompts(frame.iloc[:, 0].tolist(), [columns[0]], None, frame.index)
    template.check(columns)
    _check_names_a_field(template)
    values = {name: frame[name].tolist() for name in template.fields}
    rows = [dict(zip(values, row, strict=True)) for row in zip(*values.values(), strict=True)]
    return _row_prompts(rows, template, frame.index)


def _value_prompts(values: list[Any], names: list[Any], template: RowTemplate | None, index: Any) -> BatchPrompts:
    if template is not None:
        template.check(names)
        _check_names_a_field(template)
        rows = [dict.fromkeys(names, value) for value in values]
        # A named Series' missing value is reported by its name ("missing value: text"), whichever field asked.
        return _row_prompts(rows, template, index, shown={VALUE_FIELD: names[-1]})
    for i, value in enumerate(values):
        if not (isinstance(value, str) or _is_missing(value)):
            raise ValueError(
                f"run_batch item {i} is {type(value).__name__}, expected str "
                f"(or pass prompt='... {{{VALUE_FIELD}}} ...' to put other values in a prompt)"
            )
    missing = {i: f"missing value: {names[-1]}" for i, value in enumerate(values) if _is_missing(value)}
    return BatchPrompts(["" if i in missing else value for i, value in enumerate(values)], missing, index)


def _row_prompts(
    rows: list[dict[Any, Any]], template: RowTemplate, index: Any, shown: dict[str, Any] | None = None
) -> BatchPrompts:
    missing = {}
    for i, row in enumerate(rows):
        empty = dict.fromkeys(str((shown or {}).get(name, name)) for name in template.fields if _is_missing(row[name]))
        if empty:
            missing[i] = f"missing value: {', '.join(empty)}"
    return BatchPrompts([template.fill(row) for row in rows], missing, index)


def _check_names_a_field(template: RowTemplate) -> None:
    if not template.fields:
        raise ValueError(
            f"The prompt template {template.template!r} names no column, so every row would get the same "
            f"prompt: name the columns to fill in, e.g. {{review}} (or {{{VALUE_FIELD}}} for a list or Series)."
        )
