"""describe(df): a DataFrame or Series as compact Markdown for a prompt, under a token budget."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aiforge.core.describe import describe, full_table
from aiforge.core.tokens import estimate_tokens
from aiforge.core.types import UsageError


@pytest.fixture
def sales() -> pd.DataFrame:
    n = 1000
    return pd.DataFrame(
        {
            "region": pd.Series(["north", "south", None, "east"] * (n // 4), dtype=object),
            "units": np.arange(n),
            "price": np.where(np.arange(n) % 10 == 0, np.nan, 9.5),
            "note": ["a | b\nc"] * n,
        }
    )


def test_shape_columns_dtypes_and_null_counts(sales: pd.DataFrame) -> None:
    text = describe(sales, name="sales")

    assert text.splitlines()[0] == "DataFrame `sales`: 1,000 rows × 4 columns"
    assert "| region | object | 250 |" in text
    assert "| units | int64 | 0 |" in text
    assert "| price | float64 | 100 |" in text


def test_numeric_summary_covers_numeric_columns_only(sales: pd.DataFrame) -> None:
    text = describe(sales)

    summary = text.split("Numeric summary:")[1].split("rows, sampled")[0]
    assert "| units | 499.5 | 288.8 | 0 | 499.5 | 999 |" in summary
    assert "| price | 9.5 | 0 | 9.5 | 9.5 | 9.5 |" in summary
    assert "region" not in summary


def test_sample_rows_are_spread_over_the_frame_first_and_last_included(sales: pd.DataFrame) -> None:
    text = describe(sales)

    note = "20 of 1,000 rows, sampled evenly over the DataFrame (first and last included; "
    rows = text.split(note)[1].splitlines()[3:]
    positions = [int(r.split(" | ")[0].removeprefix("| ")) for r in rows]
    assert positions == [round(i * 999 / 19) for i in range(20)]
    assert "a \\| b c" in rows[0]  # pipes escaped, newlines flattened: the table stays a table


def test_a_frame_that_fits_is_sent_whole_every_row_and_every_cell() -> None:
    reviews = [
        "Great kettle, boils fast and the handle stays cool even when it is full",
        "Broke after a week",
        "Fine",
        "Arrived late but works",
        "Loud",
        "Love it",
    ]
    frame = pd.DataFrame({"review": reviews, "stars": [5, 1, 3, 4, 2, 5]})

    text = describe(frame, name="df")

    assert "All 6 rows:" in text and "sampled" not in text and estimate_tokens(text) <= 1000
    for position, review in enumerate(reviews):
        assert f"| {position} | {review} | {frame['stars'][position]} |" in text


def test_long_cells_are_cut_before_any_row_is_left_out() -> None:
    frame = pd.DataFrame({"text": ["word " * 60] * 8})

    text = describe(frame, max_tokens=300)

    assert "All 8 rows (cells cut at 40 characters):" in text and estimate_tokens(text) <= 300
    assert text.count("| word word") == 8


def test_a_frame_over_the_budget_is_sampled_and_says_so() -> None:
    frame = pd.DataFrame({"review": [f"review number {i} of a long export" for i in range(5000)], "n": range(5000)})

    for budget in (1000, 200):
        text = describe(frame, max_tokens=budget)
        assert estimate_tokens(text) <= budget
        note = (
            "of 5,000 rows, sampled evenly over the DataFrame (first and last included; "
            f"the whole DataFrame is over the {budget:,}-token limit):"
        )
        assert note in text
        assert "| 0 | review number 0 of a long export | 0 |" in text
        assert "| 4999 | review number 4999 of a long export | 4999 |" in text
    assert "20 of 5,000 rows" in describe(frame)


def test_the_text_stays_under_the_token_budget_by_dropping_rows_then_columns() -> None:
    wide = pd.DataFrame({f"column_{i}": range(50) for i in range(60)})

    for budget in (1000, 300, 100):
        text = describe(wide, max_tokens=budget)
        assert estimate_tokens(text) <= budget
    assert "more columns not shown" in describe(wide, max_tokens=300)


def test_a_series_is_described_as_values() -> None:
    text = describe(pd.Series([1.0, None, 3.0], name="score"))

    assert text.splitlines()[0] == "Series: 3 values"
    assert "| score | float64 | 1 |" in text


def test_full_table_has_every_row() -> None:
    frame = pd.DataFrame({"x": range(30)})

    table = full_table(frame)

    assert len(table.splitlines()) == 32 and "| 29 | 29 |" in table


def test_anything_else_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="DataFrame or Series, got list"):
        describe([1, 2])
    with pytest.raises(UsageError, match="DataFrame or Series, got dict"):
        full_table({"a": 1})
    with pytest.raises(UsageError, match="max_tokens must be an integer >= 1, got 0"):
        describe(pd.DataFrame({"a": [1]}), max_tokens=0)


def test_describe_is_importable_from_aiforge(sales: pd.DataFrame) -> None:
    import aiforge

    assert aiforge.describe(sales) == describe(sales)
