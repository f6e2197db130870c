"""output_columns: one typed, nullable column per output field, aligned on the given index."""

from __future__ import annotations

import dataclasses
import enum
import subprocess
import sys
from typing import Any, Literal

import pandas as pd
import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from aiforge.core.columns import OUTPUT_COLUMN, output_columns
from aiforge.core.output import OutputSpec


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Address(BaseModel):
    city: str
    zip_code: str | None = None


class Review(BaseModel):
    sentiment: Literal["pos", "neg", "neutral"]
    rating: int
    score: float
    recommended: bool
    summary: str
    color: Color
    address: Address
    topics: list[str]
    votes: int | None = None


class Person(TypedDict):
    name: str
    age: int


@dataclasses.dataclass
class Point:
    x: float
    y: float


REVIEW = Review(
    sentiment="pos",
    rating=4,
    score=0.75,
    recommended=True,
    summary="Good value",
    color=Color.GREEN,
    address=Address(city="Lyon"),
    topics=["price", "size"],
)


@pytest.fixture
def frame() -> pd.DataFrame:
    return output_columns([REVIEW, None], OutputSpec.of(Review), pd.Index([7, 3], name="row"))


def test_one_column_per_field_in_model_order(frame: pd.DataFrame) -> None:
    assert list(frame.columns) == list(Review.model_fields)


def test_the_given_index_is_kept(frame: pd.DataFrame) -> None:
    assert frame.index.equals(pd.Index([7, 3], name="row"))


def test_dtypes_follow_the_field_types(frame: pd.DataFrame) -> None:
    assert frame.dtypes.astype(str).to_dict() == {
        "sentiment": "category",
        "rating": "Int64",
        "score": "Float64",
        "recommended": "boolean",
        "summary": "string",
        "color": "category",
        "address": "object",
        "topics": "object",
        "votes": "Int64",
    }


def test_literal_and_enum_columns_have_exactly_their_categories(frame: pd.DataFrame) -> None:
    assert frame["sentiment"].cat.categories.tolist() == ["pos", "neg", "neutral"]
    assert frame["color"].cat.categories.tolist() == ["red", "green"]
    assert frame.loc[7, "color"] == "green"


def test_nested_models_are_dicts_and_lists_stay_lists(frame: pd.DataFrame) -> None:
    assert frame.loc[7, "address"] == {"city": "Lyon", "zip_code": None}
    assert frame.loc[7, "topics"] == ["price", "size"]


def test_values_of_a_valid_row(frame: pd.DataFrame) -> None:
    row = frame.loc[7]
    assert (row["rating"], row["score"], row["recommended"], row["summary"]) == (4, 0.75, True, "Good value")
    assert pd.isna(row["votes"])


def test_a_failed_row_is_null_in_every_column(frame: pd.DataFrame) -> None:
    assert frame.loc[3].isna().all()


def test_typeddict_and_dataclass_outputs_give_columns() -> None:
    people = output_columns([{"name": "Ada", "age": 36}], OutputSpec.of(Person), pd.RangeIndex(1))
    assert people.dtypes.astype(str).to_dict() == {"name": "string", "age": "Int64"}
    points = output_columns([Point(1.0, 2.5), None], OutputSpec.of(Point), pd.Index(["a", "b"]))
    assert points.loc["a"].tolist() == [1.0, 2.5] and points.loc["b"].isna().all()


@pytest.mark.parametrize(
    ("output", "values", "dtype"),
    [
        (bool, [True, None, False], "boolean"),
        (int, [1, None, 3], "Int64"),
        (float, [1.5, None, 2.0], "Float64"),
        (str, ["a", None, "c"], "string"),
        (Literal["yes", "no"], ["yes", None, "no"], "category"),
        (Color, [Color.RED, None, Color.GREEN], "category"),
        (list[str], [["a"], None, []], "object"),
    ],
)
def test_a_scalar_output_type_gives_one_output_column(output: Any, values: list[Any], dtype: str) -> None:
    frame = output_columns(values, OutputSpec.of(output), pd.Index([5, 6, 7]))
    assert list(frame.columns) == [OUTPUT_COLUMN] and str(frame[OUTPUT_COLUMN].dtype) == dtype
    assert pd.isna(frame.loc[6, OUTPUT_COLUMN])
    first = values[0].value if isinstance(values[0], Color) else values[0]
    assert frame.loc[5, OUTPUT_COLUMN] == first


def test_literal_categories_keep_unused_labels() -> None:
    frame = output_columns(["no"], OutputSpec.of(Literal["yes", "no", "maybe"]), pd.RangeIndex(1))
    assert frame[OUTPUT_COLUMN].cat.categories.tolist() == ["yes", "no", "maybe"]


def test_columns_join_back_onto_a_filtered_frame() -> None:
    source = pd.DataFrame({"text": ["a", "b", "c"]}, index=[10, 11, 12]).iloc[[0, 2]]
    columns = output_columns([True, False], OutputSpec.of(bool), source.index)
    assert source.join(columns)[OUTPUT_COLUMN].tolist() == [True, False]


def test_values_and_index_of_different_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="2 values for an index of 3 rows"):
        output_columns([True, False], OutputSpec.of(bool), pd.RangeIndex(3))


def test_importing_the_module_does_not_import_pandas() -> None:
    probe = "import sys, aiforge.core.columns; print('pandas' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout == "False\n"
