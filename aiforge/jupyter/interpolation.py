"""``{name}`` in a magic's text: a notebook variable by a reference grammar, never evaluated.

Only names, attribute access and ``[0]``/``['key']`` indexing are substituted; ``{{`` and
``}}`` stand for literal braces. A DataFrame or Series is sent as a compact description
(``core.describe``), or whole with ``{name:full}``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from IPython.core.error import UsageError

from aiforge.core.describe import DEFAULT_MAX_TOKENS, describe, full_table, is_table
from aiforge.core.tokens import estimate_tokens
from aiforge.core.types import TraceRecord

_MISSING = object()

_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_STEP = r"""\.[A-Za-z]\w*|\[\s*-?\d+\s*\]|\[\s*'[^'\\]*'\s*\]|\[\s*"[^"\\]*"\s*\]"""
_REFERENCE = re.compile(rf"\s*([A-Za-z_]\w*)((?:{_STEP})*)\s*")
_STEPS = re.compile(r"""\.([A-Za-z]\w*)|\[\s*(-?\d+)\s*\]|\[\s*'([^'\\]*)'\s*\]|\[\s*"([^"\\]*)"\s*\]""")
_LITERAL_HINT = "write {{ and }} for literal braces"


def resolve_reference(reference: str, namespace: Mapping[str, Any]) -> Any:
    """The value of ``name``, ``name.attr``, ``name[0]`` or ``name['key']`` (chained) in ``namespace``.

    Attributes starting with ``_`` are refused; anything else (calls, operators) is a
    ``UsageError``: the text is parsed, never evaluated.
    """
    match = _REFERENCE.fullmatch(reference)
    if match is None:
        raise UsageError(
            f"{{{reference}}} is not a variable reference: only names, attributes and [index] are "
            f"substituted, nothing is evaluated. Assign the value to a variable first, or {_LITERAL_HINT}."
        )
    name = match.group(1)
    value = namespace.get(name, _MISSING)
    if value is _MISSING:
        raise UsageError(f"{{{reference.strip()}}}: no variable named {name!r} in the notebook ({_LITERAL_HINT}).")
    for step in _STEPS.finditer(match.group(2)):
        attribute, index, single, double = step.groups()
        try:
            if attribute is not None:
                value = getattr(value, attribute)
            else:
                value = value[int(index) if index is not None else (single if single is not None else double)]
        except Exception as exc:  # noqa: BLE001 - any failure of the lookup is the user's to fix
            raise UsageError(
                f"{{{reference.strip()}}}: {step.group(0).strip()} failed ({type(exc).__name__}: {exc})"
            ) from None
    return value


def interpolate(
    text: str,
    namespace: Mapping[str, Any],
    *,
    table_tokens: int = DEFAULT_MAX_TOKENS,
    sent: list[TraceRecord] | None = None,
) -> str:
    """``text`` with every ``{reference}`` replaced by ``str()`` of its value; ``{{``/``}}`` escape.

    A DataFrame or Series becomes its ``describe()`` text (about ``table_tokens`` tokens at most);
    ``{name:full}`` sends the whole table instead. Each table's text is appended to ``sent`` as a
    trace record, so the user can see what the model got.
    """

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        if match.group(1) is None:
            raise UsageError(f"unmatched {token!r} in the message; {_LITERAL_HINT}.")
        reference, _, spec = match.group(1).partition(":")
        if not (spec.strip().isidentifier() and _REFERENCE.fullmatch(reference)):
            reference, spec = match.group(1), ""  # not name:format; refused below as an expression
        value = resolve_reference(reference, namespace)
        if not is_table(value):
            if spec:
                raise UsageError(f"{{{match.group(1)}}}: :{spec} is for DataFrames and Series only")
            return str(value)
        name, spec = reference.strip(), spec.strip()
        if spec not in ("", "full"):
            raise UsageError(f"{{{match.group(1)}}}: unknown format {spec!r}; {{{name}:full}} sends the whole table")
        rendered = full_table(value) if spec == "full" else describe(value, max_tokens=table_tokens, name=name)
        if sent is not None:
            sent.append({
                "step": "context", "node": "%%chat", "name": f"{{{match.group(1).strip()}}}",
                "input": f"{type(value).__name__} {'×'.join(map(str, value.shape))}", "output": rendered,
                "input_tokens": estimate_tokens(rendered),
            })
        return rendered

    return _FIELD.sub(replace, text)
