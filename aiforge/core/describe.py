"""``describe(df)``: a DataFrame or Series as compact text for a prompt, under a token budget.

Sending ``str(df)`` tells a model nothing about dtypes or missing values, and its head and tail
rarely represent the data. The description has the shape, every column with its dtype and null
count, a numeric summary and a few rows spread evenly over the frame, as Markdown tables. pandas
is imported by the caller's object, never here.
"""

from __future__ import annotations

from typing import Any

DEFAULT_MAX_TOKENS = 1000
"""The default of the ``CONTEXT_MAX_TOKENS`` setting."""
CHARS_PER_TOKEN = 4
"""The usual estimate for English text and tables; exact counts need the model's tokenizer."""
_SAMPLE_ROWS = (5, 3, 1, 0)
_CELL_CHARS = 40
_SUMMARY_STATS = ("mean", "std", "min", "50%", "max")


def is_table(value: Any) -> bool:
    """True for a pandas DataFrame or Series (checked without importing pandas)."""
    return type(value).__module__.split(".")[0] == "pandas" and type(value).__name__ in ("DataFrame", "Series")


def estimate_tokens(text: str) -> int:
    """Tokens ``text`` will take, estimated as characters / ``CHARS_PER_TOKEN``."""
    return -(-len(text) // CHARS_PER_TOKEN)


def describe(data: Any, *, max_tokens: int = DEFAULT_MAX_TOKENS, name: str | None = None) -> str:
    """A compact Markdown description of a DataFrame or Series, at most about ``max_tokens`` tokens.

    Shape, columns with dtypes and null counts, a numeric summary, and up to five rows spread over
    the frame. When that is too long, fewer sample rows, then fewer columns are shown, and the text
    says what was left out.
    """
    if not is_table(data):
        raise TypeError(f"describe() takes a pandas DataFrame or Series, got {type(data).__name__}")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    frame = data.to_frame(name=data.name if data.name is not None else "value") if data.ndim == 1 else data
    kind = "Series" if data.ndim == 1 else "DataFrame"
    title = f"{kind} `{name}`" if name else kind
    budget = max_tokens * CHARS_PER_TOKEN
    columns = len(frame.columns)
    text = ""
    while True:
        for rows in _SAMPLE_ROWS:
            text = _description(frame, title, shown_columns=columns, sample_rows=rows)
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
        raise TypeError(f"full_table() takes a pandas DataFrame or Series, got {type(data).__name__}")
    frame = data.to_frame() if data.ndim == 1 else data
    return markdown_table(["", *map(str, frame.columns)], _rows(frame), cell_chars=None)


def _description(frame: Any, title: str, *, shown_columns: int, sample_rows: int) -> str:
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
    if sample_rows and rows:
        positions = _spread(rows, sample_rows)
        sample = part.iloc[positions]
        lines.append(f"{len(positions)} of {rows:,} rows, spread over the frame:")
        lines.append(
            markdown_table(["", *map(str, sample.columns)], _rows(sample))
        )
    return "\n".join(lines)


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
