"""``summary_html``: an ``EvalResult.summary`` as notebook HTML, each 95 % interval under its value."""

from __future__ import annotations

import html
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


def summary_html(table: pd.DataFrame) -> str:
    """An ``EvalResult.summary`` as a table narrow enough for a notebook's output area: each 95 % interval under
    its value, tokens and latencies one column each; in a narrower output it scrolls sideways in its own box."""
    import pandas as pd

    interval = "<br><small>95 % CI</small>"
    columns: dict[str, list[str]] = {"n": [str(n) for n in table["n"]]}
    columns["accuracy" + interval] = _with_intervals(table["accuracy"], table["low"], table["high"])
    if "kappa" in table:
        columns["kappa" + interval] = _with_intervals(table["kappa"], table["kappa_low"], table["kappa_high"])
        columns["macro<br>F1"] = [_number(value) for value in table["macro_f1"]]
    columns["errors"] = [str(errors) for errors in table["errors"]]
    tokens = zip(table["input_tokens"], table["output_tokens"], strict=True)
    columns["tokens<br><small>in / out</small>"] = [f"{i} / {o}" for i, o in tokens]
    columns["cost"] = [_number(cost, "${:.5f}") for cost in table["cost"]]
    latencies = zip(table["p50_ms"], table["p95_ms"], strict=True)
    columns["ms<br><small>p50 / p95</small>"] = [
        f"{_number(p50, '{:.0f}')} / {_number(p95, '{:.0f}')}" for p50, p95 in latencies
    ]
    shown = pd.DataFrame(columns, index=[html.escape(str(name)) for name in table.index])
    shown.columns.name = "candidate"
    # Every label and cell is escaped or made here from numbers, so pandas may leave the markup (<br>, <small>) be.
    page = shown.to_html(escape=False, notebook=False)
    return f"<div style='overflow-x: auto; max-width: 100%'>{page}</div>"


def _number(value: Any, form: str = "{:.3f}") -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else form.format(value)


def _with_intervals(values: Iterable[Any], lows: Iterable[Any], highs: Iterable[Any]) -> list[str]:
    """Each value with its interval on a line under it, smaller; an undefined value (no rows, kappa when everyone
    gives one answer) is a dash alone."""
    cells = []
    for value, low, high in zip(values, lows, highs, strict=True):
        shown = _number(value)
        cells.append(shown if shown == "–" else f"{shown}<br><small>{_number(low)}–{_number(high)}</small>")
    return cells
