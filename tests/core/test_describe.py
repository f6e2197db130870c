"""describe(df): a DataFrame or Series as compact Markdown for a prompt, under a token budget."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aiforge.core.describe import describe, estimate_tokens, full_table


@pytest.fixture
def sales() -> pd.DataFrame:
    n = 1000
    return pd.DataFrame({
        "region": pd.Series(["north", "south", None, "east"] * (n // 4), dtype=object),
        "units": np.arange(n),
        "price": np.where(np.arange(n) % 10 == 0, np.nan, 9.5),
        "note": ["a | b\nc"] * n,
    })


def test_shape_columns_dtypes_and_null_counts(sales: pd.DataFrame) -> None:
    text = describe(sales, name="sales")

    assert text.splitlines()[0] == "DataFrame `sales`: 1,000 rows × 4 columns"
    assert "| region | object | 250 |" in text
    assert "| units | int64 | 0 |" in text
    assert "| price | float64 | 100 |" in text


def test_numeric_summary_covers_numeric_columns_only(sales: pd.DataFrame) -> None:
    text = describe(sales)

    summary = text.split("Numeric summary:")[1].split("rows, spread")[0]
    assert "| units | 499.5 | 288.8 | 0 | 499.5 | 999 |" in summary
    assert "| price | 9.5 | 0 | 9.5 | 9.5 | 9.5 |" in summary
    assert "region" not in summary


def test_sample_rows_are_spread_over_the_frame_first_and_last_included(sales: pd.DataFrame) -> None:
    text = describe(sales)

    rows = text.split("5 of 1,000 rows, spread over the frame:\n")[1].splitlines()[2:]
    assert [r.split(" | ")[0] for r in rows] == ["| 0", "| 250", "| 500", "| 749", "| 999"]
    assert "a \\| b c" in rows[0]  # pipes escaped, newlines flattened: the table stays a table


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


def test_anything_else_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="DataFrame or Series, got list"):
        describe([1, 2])


def test_describe_is_importable_from_aiforge(sales: pd.DataFrame) -> None:
    import aiforge

    assert aiforge.describe(sales) == describe(sales)
