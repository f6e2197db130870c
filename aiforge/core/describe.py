"""``describe(df)``: a DataFrame or Series as compact text for a prompt, under a token budget.

Sending ``str(df)`` tells a model nothing about dtypes or missing values, and its head and tail
rarely represent the data. The description has the shape, every column with its dtype and null
count, a numeric summary and the rows, as Markdown tables: every row when they fit in the budget,
else rows sampled evenly over the frame, and the text says so. pandas is imported by the caller's
object, never here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from aiforge.core.tokens import CHARS_PER_TOKEN
from aiforge.core.types import UsageError

DEFAULT_MAX_TOKENS = 1000
"""The default of the ``CONTEXT_MAX_TOKENS`` setting."""
_SAMPLE_ROWS = (20, 10, 5, 3, 1)
"""How many rows a sample has, tried in turn, when the whole frame is over the budget."""
_CELL_CHARS = 40
_SUMMARY_STATS = ("mean", "std", "min", "50%", "max")


def is_table(value: Any) -> bool:
    """True for a pandas DataFrame or Series (checked without importing pandas)."""
    return type(value).__module__.split(".")[0] == "pandas" and type(value).__name__ in ("DataFrame", "Series")


def describe(data: Any, *, max_tokens: int = DEFAULT_MAX_TOKENS, name: str | None = None) -> str:
    """A compact Markdown description of a DataFrame or Series, at most about ``max_tokens`` tokens.

    Shape, columns with dtypes and null counts, a numeric summary, and every row when all of that
    fits. When it does not, long cells are cut, then up to 20 rows spread evenly over the frame are
    shown (fewer if need be), then fewer columns; the text says what was left out.
    """
    if not is_table(data):
        raise UsageError(f"describe() takes a pandas DataFrame or Series, got {type(data).__name__}.")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise UsageError(f"describe(): max_tokens must be an integer >= 1, got {max_tokens!r}.")
    frame = data.to_frame(name=data.name if data.name is not None else "value") if data.ndim == 1 else data
    kind = "Series" if data.ndim == 1 else "DataFrame"
    title = f"{kind} `{name}`" if name else kind
    budget = max_tokens * CHARS_PER_TOKEN
    columns = len(frame.columns)
    text = ""
    while True:
        summary = _summary(frame, title, shown_columns=columns)
        for rows in _row_tables(frame.iloc[:, :columns], kind, max_tokens, budget - len(summary)):
            text = f"{summary}\n{rows}" if rows else summary
            if len(text) <= budget:
                return text
        if columns <= 1:
            break
        columns = max(1, columns // 2)
    cut = text[: max(0, budget - 40)].rsplit("\n", 1)[0]
    return f"{cut}\n… (cut at about {max_tokens} tokens)"


def full_table(data: Any) -> str:
    """Every row and column of a DataFrame or Series as one Markdown table (no budget)."""
    if not is_table(data):
        raise UsageError(f"full_table() takes a pandas DataFrame or Series, got {type(data).__name__}.")
    frame = data.to_frame() if data.ndim == 1 else data
    return markdown_table(["", *map(str, frame.columns)], _rows(frame), cell_chars=None)


def _summary(frame: Any, title: str, *, shown_columns: int) -> str:
    """The shape, the columns with dtypes and null counts, and the numeric summary."""
    rows, columns = frame.shape
    part = frame.iloc[:, :shown_columns]
    shape = f"{rows:,} values" if title.startswith("Series") else f"{rows:,} rows × {columns:,} columns"
    lines = [f"{title}: {shape}"]
    nulls = part.isna().sum()
    lines.append(
        markdown_table(
            ["column", "dtype", "nulls"], [[str(c), str(part[c].dtype), int(nulls[c])] for c in part.columns]
        )
    )
    if shown_columns < columns:
        lines.append(f"(… {columns - shown_columns} more columns not shown)")
    numeric = part.select_dtypes(include="number")
    numeric = numeric.loc[:, [c for c in numeric.columns if numeric[c].dtype != bool]]
    if len(numeric.columns) and rows:
        stats = numeric.describe().reindex(list(_SUMMARY_STATS))
        lines.append("Numeric summary:")
        lines.append(
            markdown_table(
                ["column", *_SUMMARY_STATS],
                [[str(c), *(_number(stats.at[s, c]) for s in _SUMMARY_STATS)] for c in numeric.columns],
            )
        )
    return "\n".join(lines)


def _row_tables(part: Any, kind: str, max_tokens: int, room: int) -> Iterator[str]:
    """The rows as tables, most complete first: every row whole, every row with long cells cut, samples."""
    total = len(part)
    if not total:
        return
    unit = "values" if kind == "Series" else "rows"
    header = ["", *map(str, part.columns)]
    # A row's line is at least "|  | … |" with its cells empty: past that many rows, the whole frame cannot fit.
    if total * (3 * len(header) + 2) <= room:
        rows = _rows(part)
        yield f"All {total:,} {unit}:\n" + markdown_table(header, rows, cell_chars=None)
        yield f"All {total:,} {unit} (cells cut at {_CELL_CHARS} characters):\n" + markdown_table(header, rows)
    over = f"the whole {kind} is over the {max_tokens:,}-token limit"
    for count in (c for c in _SAMPLE_ROWS if c < total):
        sample = part.iloc[_spread(total, count)]
        yield (
            f"{count} of {total:,} {unit}, sampled evenly over the {kind} (first and last included; {over}):\n"
            + markdown_table(header, _rows(sample))
        )
    yield f"(No {unit} shown: {over}.)"


def _rows(frame: Any) -> list[list[Any]]:
    """Each row as ``[index, *values]``."""
    return [[str(row[0]), *row[1:]] for row in frame.itertuples(name=None)]


def _spread(total: int, count: int) -> list[int]:
    """``count`` positions evenly spaced over ``total`` rows, first and last included."""
    count = min(count, total)
    if count == 1:
        return [0]
    return sorted({round(i * (total - 1) / (count - 1)) for i in range(count)})


def _number(value: Any) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if number != number:  # NaN: a statistic of an all-null column
        return ""
    return f"{number:.4g}"


def markdown_table(header: list[str], rows: list[list[Any]], *, cell_chars: int | None = _CELL_CHARS) -> str:
    """A Markdown table; cells are shortened to ``cell_chars`` and pipes and newlines escaped."""
    lines = ["| " + " | ".join(_cell(h, cell_chars) for h in header) + " |", "|" + "---|" * len(header)]
    lines.extend("| " + " | ".join(_cell(v, cell_chars) for v in row) + " |" for row in rows)
    return "\n".join(lines)


def _missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN and NaT differ from themselves
    except TypeError:  # pd.NA has no truth value
        return True
    except ValueError:  # an array in a cell
        return False


def _cell(value: Any, limit: int | None) -> str:
    """A missing value is an empty cell (the column table counts them)."""
    text = "" if _missing(value) else str(value)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("|", "\\|").replace("\r", " ").replace("\n", " ")
