"""RowTemplate: {column} fields filled from a row, checked against the columns, never evaluated."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiforge.core.templates import RowTemplate, batch_prompts


def test_fields_are_the_named_columns_in_order_without_repeats() -> None:
    template = RowTemplate("Review of {product}: {review} (again: {review})")
    assert template.fields == ("product", "review")


def test_fill_replaces_each_field_with_the_row_value() -> None:
    template = RowTemplate("Classify the sentiment of this review: {review} [{stars} stars]")
    assert template.fill({"review": "Great kettle", "stars": 5}) == (
        "Classify the sentiment of this review: Great kettle [5 stars]"
    )


def test_double_braces_are_literal_braces() -> None:
    template = RowTemplate('Answer as {{"label": ...}} for {text}')
    assert template.fields == ("text",)
    assert template.fill({"text": "hi"}) == 'Answer as {"label": ...} for hi'


def test_a_template_without_fields_is_returned_as_is() -> None:
    assert RowTemplate("Say hi").fill({}) == "Say hi"


def test_column_names_with_spaces_are_fields() -> None:
    assert RowTemplate("{review text}").fill({"review text": "ok"}) == "ok"


def test_missing_values_read_as_empty() -> None:
    template = RowTemplate("[{a}|{b}|{c}|{d}]")
    assert template.fill({"a": None, "b": math.nan, "c": pd.NA, "d": pd.NaT}) == "[|||]"


def test_fill_works_on_a_pandas_row() -> None:
    frame = pd.DataFrame({"review": ["good", "bad"], "n": [1, 2]}, index=[10, 20])
    template = RowTemplate("{review}/{n}")
    assert [template.fill(row) for _, row in frame.iterrows()] == ["good/1", "bad/2"]


def test_values_are_inserted_verbatim_never_reinterpreted() -> None:
    template = RowTemplate("{text}")
    assert template.fill({"text": "{__import__('os')} {{x}} {text}"}) == "{__import__('os')} {{x}} {text}"


@pytest.mark.parametrize("field", ["{row.__class__}", "{row[0]}", "{a.b}"])
def test_attribute_and_index_access_is_refused(field: str) -> None:
    with pytest.raises(ValueError, match="attribute or index access") as info:
        RowTemplate(f"x {field}")
    assert field in str(info.value)


@pytest.mark.parametrize("field", ["{n:>10}", "{n!r}", "{n!s:^3}"])
def test_format_specs_and_conversions_are_refused(field: str) -> None:
    with pytest.raises(ValueError, match="format spec or conversion") as info:
        RowTemplate(field)
    assert "{n}" in str(info.value)


def test_positional_fields_are_refused() -> None:
    with pytest.raises(ValueError, match="Empty field"):
        RowTemplate("a {} b")


@pytest.mark.parametrize("text", ["a { b", "a } b", "{unclosed"])
def test_unbalanced_braces_are_a_value_error_naming_the_template(text: str) -> None:
    with pytest.raises(ValueError, match="escape literal braces") as info:
        RowTemplate(text)
    assert repr(text) in str(info.value)


def test_check_names_the_missing_columns_and_the_existing_ones() -> None:
    template = RowTemplate("{review} {stars} {lang}")
    with pytest.raises(ValueError) as info:
        template.check(pd.Index(["review", "rating"]))
    message = str(info.value)
    assert "'stars', 'lang'" in message and "'review', 'rating'" in message


def test_check_passes_when_every_field_is_a_column() -> None:
    RowTemplate("{a} {b}").check(["b", "a", "c"])


def test_fill_of_a_row_without_the_column_names_it() -> None:
    with pytest.raises(ValueError, match="'missing'"):
        RowTemplate("{missing}").fill({"other": 1})


# str.format reads a leading digit as a positional index; a template reads every field as a column name
names = st.text(alphabet=st.characters(exclude_characters="{}[].:!", exclude_categories=("Cs",)), min_size=1).filter(
    lambda name: not name[0].isdigit()
)


@given(st.dictionaries(names, st.text(), min_size=1, max_size=4), st.text(alphabet="ab {}", max_size=6))
def test_fill_equals_str_format_for_plain_fields(row: dict[str, str], literal: str) -> None:
    literal = literal.replace("{", "{{").replace("}", "}}")
    template_text = literal + "".join("{" + name + "}" + literal for name in row)
    assert RowTemplate(template_text).fill(row) == template_text.format_map(row)


def test_a_named_series_reports_its_missing_value_by_its_name() -> None:
    texts = pd.Series(["Ann, 31, Oslo", None], name="text")
    assert batch_prompts(texts, "Extract from: {value}").missing == {1: "missing value: text"}
    assert batch_prompts(texts, "Extract from: {text}").missing == {1: "missing value: text"}
    assert batch_prompts(pd.Series(["a", None]), "x {value}").missing == {1: "missing value: value"}
