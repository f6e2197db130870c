"""RowTemplate: {column} fields filled from a row, checked against the columns, never evaluated."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiforge.core.templates import RowTemplate, batch_prompts
from aiforge.core.types import AIForgeError, UsageError


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
    with pytest.raises(UsageError, match="attribute or index access") as info:
        RowTemplate(f"x {field}")
    assert field in str(info.value)


@pytest.mark.parametrize("field", ["{n:>10}", "{n!r}", "{n!s:^3}"])
def test_format_specs_and_conversions_are_refused(field: str) -> None:
    with pytest.raises(UsageError, match="format spec or conversion") as info:
        RowTemplate(field)
    assert "{n}" in str(info.value)


def test_positional_fields_are_refused() -> None:
    with pytest.raises(UsageError, match="Empty field"):
        RowTemplate("a {} b")


@pytest.mark.parametrize("text", ["a { b", "a } b", "{unclosed"])
def test_unbalanced_braces_are_a_usage_error_naming_the_template(text: str) -> None:
    with pytest.raises(UsageError, match="escape literal braces") as info:
        RowTemplate(text)
    assert repr(text) in str(info.value)


def test_a_misspelt_column_is_a_usage_error_saying_which_column_was_meant() -> None:
    frame = pd.DataFrame({"review": ["good"], "stars": [5]})
    with pytest.raises(UsageError) as info:
        batch_prompts(frame, "Review: {reveiw}")
    assert str(info.value) == "{reveiw}: no column 'reveiw' in the frame; did you mean 'review'? Columns: review, stars"
    assert isinstance(info.value, AIForgeError) and isinstance(info.value, ValueError)


def test_check_names_every_missing_column_with_its_suggestion_then_the_columns() -> None:
    template = RowTemplate("{review} {stars} {lang}")
    with pytest.raises(UsageError) as info:
        template.check(pd.Index(["review", "star"]))
    assert str(info.value) == (
        "{stars}: no column 'stars' in the frame; did you mean 'star'? "
        "{lang}: no column 'lang' in the frame. Columns: review, star"
    )


def test_a_wide_frame_lists_its_first_thirty_columns() -> None:
    frame = pd.DataFrame({f"c{i}": [1] for i in range(45)})
    with pytest.raises(UsageError, match=r"Columns: c0, c1, .*, c29 … \(15 more\)$"):
        batch_prompts(frame, "{x}")


def test_a_series_template_naming_another_field_says_what_it_can_name() -> None:
    reviews = pd.Series(["good"], name="review")
    with pytest.raises(UsageError) as info:
        batch_prompts(reviews, "Summarise: {reveiw}")
    assert str(info.value) == (
        "{reveiw}: a Series has no columns, so its prompt template can only name {value} or {review}, "
        "which is each value. Did you mean {review}?"
    )
    with pytest.raises(
        UsageError, match=r"^\{text\}: a list has no columns, .* only name \{value\}, which is each item"
    ):
        batch_prompts(["good"], "{text}")


def test_a_frame_of_several_columns_without_a_template_is_a_usage_error() -> None:
    frame = pd.DataFrame({"review": ["good"], "stars": [5]})
    with pytest.raises(UsageError) as info:
        batch_prompts(frame)
    assert str(info.value) == (
        "A DataFrame with 2 columns needs prompt=, the row template that says which to ask about, "
        "e.g. prompt='Classify: {review}'; or pass the one column, e.g. df['review']. Columns: review, stars"
    )


class Review:
    pass


@pytest.mark.parametrize(
    ("items", "prompt", "message"),
    [
        (["a"], Review, "got the class Review: pass it as output=Review, after the template"),
        (["a"], 3, "prompt= takes a row template such as 'Classify: {review}', got int"),
        ("one string", None, "not a single string"),
        ({"k": "v"}, None, "got a dict: pass list(d.values())"),
        (5, None, "takes a list of strings, got int"),
        (["a", 2], None, "item 1 is int, expected str"),
        (["a"], "Same prompt for all", "names no column"),
    ],
)
def test_bad_items_and_prompts_are_usage_errors(items: object, prompt: object, message: str) -> None:
    with pytest.raises(UsageError) as info:
        batch_prompts(items, prompt)  # type: ignore[arg-type]
    assert message in str(info.value)


def test_check_passes_when_every_field_is_a_column() -> None:
    RowTemplate("{a} {b}").check(["b", "a", "c"])


def test_fill_of_a_row_without_the_column_names_it() -> None:
    with pytest.raises(UsageError, match="no column 'missing' in the row. Columns: other"):
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
