"""Row templates: ``"Classify this review: {review}"`` filled from a row's columns.

Fields are plain column names parsed by ``string.Formatter`` (``{{`` and ``}}`` escape braces). Attribute
or index access, format specs and conversions are refused when the template is built: a template is
data from the user's notebook and nothing in it is evaluated.

``batch_prompts`` turns the items of a batch (a list, a pandas Series or DataFrame) into one prompt per row.
A one-dimensional item is the field ``{value}`` (a named Series' values are also its name); a DataFrame's
fields are its columns.

Every mistake in the arguments is a ``UsageError`` raised before any request (one line in a notebook); a
field that names no column says which column was probably meant (``did you mean 'review'?``).
"""

from __future__ import annotations

import difflib
import math
import string
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiforge.core.file_inputs import fill_files, is_file_cell
from aiforge.core.files import File, plain_text
from aiforge.core.types import UsageError

if TYPE_CHECKING:
    from aiforge.core.file_inputs import FilePath, FileRoute
    from aiforge.core.files import FileKind

VALUE_FIELD = "value"
"""The field of a one-dimensional item (a list's string, a Series' value) in a template."""
_LISTED_NAMES = 30
"""How many column names an error lists: a wide frame's message stays readable."""


def no_such_column(label: str, name: Any, columns: Iterable[Any], where: str = "in the frame") -> str:
    """``"{label}: no column 'x' in the frame; did you mean 'y'? Columns: a, b"``, the suggestion when one is close."""
    available = list(columns)
    return f"{_not_found(label, name, available, where)} {_listed(available)}"


def _not_found(label: str, name: Any, available: list[Any], where: str) -> str:
    close = difflib.get_close_matches(str(name), [str(c) for c in available], n=1)
    return f"{label}: no column {name!r} {where}" + (f"; did you mean {close[0]!r}?" if close else ".")


def _listed(names: list[Any]) -> str:
    shown = ", ".join(map(str, names[:_LISTED_NAMES])) or "(none)"
    more = f" … ({len(names) - _LISTED_NAMES} more)" if len(names) > _LISTED_NAMES else ""
    return f"Columns: {shown}{more}"


class RowTemplate:
    """A prompt template whose ``{column}`` fields are filled from one row at a time."""

    __slots__ = ("template", "fields", "_parts")

    def __init__(self, template: str) -> None:
        self.template = template
        parts: list[tuple[str, str | None]] = []
        try:
            parsed = list(string.Formatter().parse(template))
        except ValueError as exc:
            raise UsageError(f"Prompt template {template!r}: {exc} (escape literal braces as {{{{ and }}}}).") from None
        for literal, name, spec, conversion in parsed:
            if name is not None:
                _check_field(template, name, spec, conversion)
            parts.append((literal, name))
        self._parts = tuple(parts)
        self.fields: tuple[str, ...] = tuple(dict.fromkeys(name for _, name in parts if name is not None))

    def check(self, columns: Iterable[Any], where: str = "in the frame") -> None:
        """Returns if every field is among ``columns``; else a ``UsageError`` naming each missing one."""
        available = list(columns)
        missing = [name for name in self.fields if name not in available]
        if missing:
            # One message for every missing field, each with its suggestion, then the columns once.
            problems = [_not_found(f"{{{name}}}", name, available, where) for name in missing]
            raise UsageError(f"{' '.join(problems)} {_listed(available)}")

    def fill(self, row: Mapping[str, Any]) -> str:
        """The template with each field replaced by the row's value (a missing value reads as empty)."""
        pieces = []
        for literal, name in self._parts:
            pieces.append(literal)
            if name is not None:
                try:
                    value = row[name]
                except KeyError:
                    raise UsageError(no_such_column(f"{{{name}}}", name, row, "in the row")) from None
                pieces.append("" if _is_missing(value) else str(value))
        return "".join(pieces)

    def shown(self) -> str:
        """The template as a reader sees it: the literal text unescaped, each field as ``{name}``."""
        return "".join(literal + ("" if name is None else f"{{{name}}}") for literal, name in self._parts)

    def __repr__(self) -> str:
        return f"RowTemplate({self.template!r})"


def _check_field(template: str, name: str, spec: str | None, conversion: str | None) -> None:
    if not name:
        raise UsageError(f"Empty field {{}} in prompt template {template!r}: name a column, e.g. {{review}}.")
    if "." in name or "[" in name:
        raise UsageError(
            f"Field {{{name}}} in prompt template {template!r} uses attribute or index access, which "
            "templates do not allow: name a column as it is (escape literal braces as {{ and }})."
        )
    if spec or conversion:
        raise UsageError(
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
    template: RowTemplate | None = None
    """The row template the texts were filled from (None: each item is its own prompt)."""
    values: list[dict[Any, Any]] | None = None
    """With a template, each row's field values by field name (what a packed request lists per row)."""
    failed: dict[int, BaseException] = field(default_factory=dict)
    """Position -> the ``FileInputError`` of a row whose file cannot be sent (it fails without a call)."""
    file_paths: dict[Any, dict[FileKind, FilePath]] = field(default_factory=dict)
    """Each file field -> the path (``native``, ``text``) each kind of file in it took (``core.file_inputs``)."""
    held: list[File] = field(default_factory=list, repr=False)
    """The files the prompts' markers name, held for the batch's life (the registry holds them weakly)."""
    file_names: dict[int, list[str]] = field(default_factory=dict)
    """Position -> the names of its row's files (``receipt.png``), for a message about the row."""


def batch_prompts(
    items: Any, prompt: str | RowTemplate | None = None, *, files: Sequence[Any] = (), route: FileRoute | None = None
) -> BatchPrompts:
    """The prompts of ``items``, ``prompt`` filled from each row; ``UsageError`` before anything runs.

    A file value (``core.files.is_file_value``, or a str in a column of ``files``) fills its field as ``route``
    says (``core.file_inputs``: its marker, or its PDF's text); a file that cannot be sent fails its row alone."""
    template = _template(prompt)
    files = tuple(files)
    if isinstance(items, str):
        raise UsageError("run_batch takes a list of strings (or a pandas Series or DataFrame), not a single string.")
    pd = sys.modules.get("pandas")  # a DataFrame or Series means pandas is loaded already
    if pd is not None and isinstance(items, pd.DataFrame):
        return _frame_prompts(items, template, files, route)
    if pd is not None and isinstance(items, pd.Series):
        names = [VALUE_FIELD, *([items.name] if isinstance(items.name, str) else [])]
        return _value_prompts(items.tolist(), names, template, items.index, files, route)
    if isinstance(items, Mapping):  # iterating it would ask its keys and drop its values without a word
        raise UsageError(
            f"run_batch takes a list of strings, got a {type(items).__name__}: pass list(d.values()), "
            "or a pandas Series to keep the keys as its index."
        )
    try:
        values = list(items)
    except TypeError:
        raise UsageError(f"run_batch takes a list of strings, got {type(items).__name__}.") from None
    return _value_prompts(values, [VALUE_FIELD], template, None, files, route)


def _template(prompt: Any) -> RowTemplate | None:
    if prompt is None or isinstance(prompt, RowTemplate):
        return prompt
    if isinstance(prompt, str):
        return RowTemplate(prompt)
    if isinstance(prompt, type):  # usually the output type where the prompt goes: map(Review) for output=Review
        raise UsageError(
            f"prompt= takes a row template such as 'Classify: {{review}}', got the class {prompt.__name__}: "
            f"pass it as output={prompt.__name__}, after the template."
        )
    raise UsageError(f"prompt= takes a row template such as 'Classify: {{review}}', got {type(prompt).__name__}.")


def _frame_prompts(frame: Any, template: RowTemplate | None, files: tuple[Any, ...], route: Any) -> BatchPrompts:
    columns = list(frame.columns)
    unknown = [name for name in files if name not in columns]
    if unknown:
        raise UsageError(no_such_column("files=", unknown[0], columns))
    if template is None:
        if len(columns) != 1:
            example = columns[0] if columns else "review"
            raise UsageError(
                f"A DataFrame with {len(columns)} columns needs prompt=, the row template that says which to ask "
                f"about, e.g. prompt='Classify: {{{example}}}'; or pass the one column, e.g. df[{example!r}]. "
                f"{_listed(columns)}"
            )
        return _value_prompts(frame.iloc[:, 0].tolist(), [columns[0]], None, frame.index, files, route)
    template.check(columns)
    _check_names_a_field(template)
    values = {name: frame[name].tolist() for name in template.fields}
    rows = [dict(zip(values, row, strict=True)) for row in zip(*values.values(), strict=True)]
    return _row_prompts(rows, template, frame.index, files=files, route=route)


def _value_prompts(
    values: list[Any], names: list[Any], template: RowTemplate | None, index: Any, files: tuple[Any, ...], route: Any
) -> BatchPrompts:
    # Each value is a field of every name it goes by: a Series named in files= is a column of paths.
    files = (VALUE_FIELD, *names) if any(name in files for name in names) else files
    if template is None and any(is_file_cell(value, VALUE_FIELD, files) for value in values):
        template = RowTemplate(f"{{{VALUE_FIELD}}}")  # a column of files asked as they are: each file its prompt
    if template is not None:
        _check_value_fields(template, names, series=index is not None)
        _check_names_a_field(template)
        rows = [dict.fromkeys(names, value) for value in values]
        # A named Series' missing value is reported by its name ("missing value: text"), whichever field asked.
        return _row_prompts(rows, template, index, shown={VALUE_FIELD: names[-1]}, files=files, route=route)
    for i, value in enumerate(values):
        if not (isinstance(value, str) or _is_missing(value)):
            raise UsageError(
                f"run_batch item {i} is {type(value).__name__}, expected str "
                f"(or pass prompt='... {{{VALUE_FIELD}}} ...' to put other values in a prompt)."
            )
    missing = {i: f"missing value: {names[-1]}" for i, value in enumerate(values) if _is_missing(value)}
    return BatchPrompts(["" if i in missing else value for i, value in enumerate(values)], missing, index)


def _check_value_fields(template: RowTemplate, names: list[Any], *, series: bool) -> None:
    """A list's item or a Series' value is ``{value}`` (or the Series' name): a field naming anything else fails."""
    missing = [name for name in template.fields if name not in names]
    if not missing:
        return
    kind = "Series" if series else "list"
    fields = " or ".join(f"{{{name}}}" for name in names)
    close = difflib.get_close_matches(missing[0], [str(n) for n in names], n=1)
    hint = f" Did you mean {{{close[0]}}}?" if close else ""
    raise UsageError(
        f"{{{missing[0]}}}: a {kind} has no columns, so its prompt template can only name {fields}, "
        f"which is each {'value' if series else 'item'}.{hint}"
    )


def _row_prompts(
    rows: list[dict[Any, Any]],
    template: RowTemplate,
    index: Any,
    shown: dict[str, Any] | None = None,
    *,
    files: tuple[Any, ...] = (),
    route: FileRoute | None = None,
) -> BatchPrompts:
    missing = {}
    for i, row in enumerate(rows):
        empty = dict.fromkeys(str((shown or {}).get(name, name)) for name in template.fields if _is_missing(row[name]))
        if empty:
            missing[i] = f"missing value: {', '.join(empty)}"
    for row in rows:  # a text that looks like a marker stays text (core.files.plain_text)
        row.update({k: plain_text(v) for k, v in row.items() if isinstance(v, str) and not is_file_cell(v, k, files)})
    held: list[File] = []
    names: dict[int, list[str]] = {}
    failed, paths = fill_files(rows, template.fields, files, route, skip=missing.keys(), held=held, names=names)
    texts = [template.fill(row) for row in rows]
    return BatchPrompts(texts, missing, index, template, rows, dict(failed), paths, held, names)


def _check_names_a_field(template: RowTemplate) -> None:
    if not template.fields:
        raise UsageError(
            f"The prompt template {template.template!r} names no column, so every row would get the same "
            f"prompt: name the columns to fill in, e.g. {{review}} (or {{{VALUE_FIELD}}} for a list or Series)."
        )
