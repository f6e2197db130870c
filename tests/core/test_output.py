"""OutputSpec: the schema of an output= type, its strict and prompted forms, validation and feedback."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from aiforge.core.errors import OutputRefusedError, OutputValidationError
from aiforge.core.output import STRICT_KEYWORDS, STRICT_STRING_FORMATS, OutputSpec
from aiforge.core.types import AIForgeError


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Address(BaseModel):
    city: str = Field(description="City name")
    zip_code: str | None = None


class Review(BaseModel):
    sentiment: Literal["pos", "neg", "neutral"]
    rating: int = Field(ge=1, le=5)
    topics: list[str] = Field(default_factory=list, max_length=3)
    color: Color = Color.RED
    address: Address | None = None
    note: str = Field("none", min_length=1)


class Node(BaseModel):
    label: str
    children: list[Node] = []


class Person(TypedDict):
    name: str
    age: int


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


class StrictEvent(BaseModel):
    model_config = ConfigDict(strict=True)
    when: datetime.date


def objects_in(schema: Any) -> list[dict[str, Any]]:
    """Every object schema anywhere in ``schema`` (properties, items, anyOf, $defs)."""
    found = []
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            found.append(schema)
        for value in schema.values():
            found += objects_in(value)
    elif isinstance(schema, list):
        for value in schema:
            found += objects_in(value)
    return found


def keywords_in(schema: Any) -> set[str]:
    """Keyword names used by ``schema``, not counting property names or $defs names."""
    words: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            words.add(key)
            if key in ("properties", "$defs"):
                for sub in value.values():
                    words |= keywords_in(sub)
            elif key in ("items", "anyOf"):
                words |= keywords_in(value)
    elif isinstance(schema, list):
        for sub in schema:
            words |= keywords_in(sub)
    return words


# --------------------------------------------------------------------------- building a spec


def test_model_spec_has_its_name_schema_and_is_an_object() -> None:
    spec = OutputSpec.of(Review)
    assert (spec.name, spec.is_object, spec.output_type) == ("Review", True, Review)
    assert set(spec.schema["properties"]) == {"sentiment", "rating", "topics", "color", "address", "note"}


def test_spec_is_built_once_per_type_and_frozen() -> None:
    spec = OutputSpec.of(Review)
    assert OutputSpec.of(Review) is spec
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "Other"


@pytest.mark.parametrize("output", [Person, Point])
def test_typeddict_and_dataclass_are_objects(output: Any) -> None:
    spec = OutputSpec.of(output)
    assert spec.is_object and spec.name == output.__name__
    assert spec.wire_schema["type"] == "object"


@pytest.mark.parametrize("output", [list[str], bool, int, Literal["pos", "neg"], Color, dict[str, int]])
def test_non_object_types_travel_wrapped_in_a_value_property(output: Any) -> None:
    spec = OutputSpec.of(output)
    assert not spec.is_object
    wire = spec.wire_schema
    assert wire["type"] == "object" and wire["required"] == ["value"]
    inner = wire["properties"]["value"]
    assert inner == {k: v for k, v in spec.schema.items() if k != "$defs"}
    assert wire.get("$defs") == spec.schema.get("$defs")


def test_names_are_valid_openai_schema_names() -> None:
    assert OutputSpec.of(list[str]).name == "output"
    assert OutputSpec.of(Literal["a"]).name == "output"
    assert OutputSpec.of(Color).name == "Color"


def test_self_referencing_model_has_its_body_at_the_root() -> None:
    spec = OutputSpec.of(Node)
    assert spec.is_object and "label" in spec.schema["properties"]
    assert spec.validate('{"label": "a", "children": [{"label": "b"}]}').children[0].label == "b"


# --------------------------------------------------------------------------- strict form


@pytest.mark.parametrize("output", [Review, Node, Person, Point, list[str], Literal["x", "y"], Color, StrictEvent])
def test_strict_schema_follows_openai_strict_rules(output: Any) -> None:
    strict = OutputSpec.of(output).strict_schema()
    assert strict["type"] == "object"
    for obj in objects_in(strict):
        assert obj["additionalProperties"] is False
        assert obj["required"] == list(obj["properties"])
    assert keywords_in(strict) <= STRICT_KEYWORDS
    formats = [s["format"] for s in objects_in(strict) for s in s["properties"].values() if "format" in s]
    assert set(formats) <= STRICT_STRING_FORMATS


def test_strict_schema_makes_optional_fields_nullable_and_keeps_required_ones_as_they_are() -> None:
    props = OutputSpec.of(Review).strict_schema()["properties"]
    assert props["rating"] == {"type": "integer", "minimum": 1, "maximum": 5, "title": "Rating"}
    assert {"type": "null"} in props["note"]["anyOf"]
    assert {"type": "null"} in props["address"]["anyOf"]
    assert "anyOf" not in props["sentiment"]


def test_strict_schema_moves_unsupported_keywords_into_the_description() -> None:
    note = OutputSpec.of(Review).strict_schema()["properties"]["note"]["anyOf"][0]
    assert "minLength" not in note and "default" not in note
    assert "minLength: 1" in note["description"] and 'default: "none"' in note["description"]


def test_strict_schema_keeps_and_fixes_defs() -> None:
    strict = OutputSpec.of(Review).strict_schema()
    address = strict["$defs"]["Address"]
    assert address["additionalProperties"] is False and address["required"] == ["city", "zip_code"]
    assert address["properties"]["city"]["description"] == "City name"


def test_strict_schema_inlines_a_ref_with_siblings() -> None:
    color = OutputSpec.of(Review).strict_schema()["properties"]["color"]["anyOf"][0]
    assert "$ref" not in color and color["enum"] == ["red", "green"]


def test_strict_schema_does_not_change_the_spec() -> None:
    spec = OutputSpec.of(Review)
    before = json.dumps(spec.schema, sort_keys=True)
    spec.strict_schema()["properties"].clear()
    spec.wire_schema["properties"].clear()
    assert json.dumps(spec.schema, sort_keys=True) == before


@pytest.mark.parametrize("output", [dict[str, int], dict])
def test_strict_schema_refuses_free_form_mappings(output: Any) -> None:
    with pytest.raises(ValueError, match="free-form keys"):
        OutputSpec.of(output).strict_schema()


# --------------------------------------------------------------------------- validation


def test_validate_returns_an_instance_of_the_model() -> None:
    review = OutputSpec.of(Review).validate('{"sentiment": "pos", "rating": 4, "topics": ["price"]}')
    assert review == Review(sentiment="pos", rating=4, topics=["price"])


def test_validate_reads_json_inside_a_code_fence() -> None:
    text = 'Here it is:\n```json\n{"sentiment": "neg", "rating": 1}\n```\nHope that helps.'
    assert OutputSpec.of(Review).validate(text).sentiment == "neg"


def test_validate_turns_strict_mode_nulls_back_into_defaults() -> None:
    text = '{"sentiment": "pos", "rating": 5, "topics": null, "color": null, "address": null, "note": null}'
    review = OutputSpec.of(Review).validate(text)
    assert (review.topics, review.color, review.address, review.note) == ([], Color.RED, None, "none")


def test_validate_keeps_nulls_of_nullable_nested_fields() -> None:
    text = '{"sentiment": "pos", "rating": 5, "address": {"city": "Lyon", "zip_code": null}}'
    assert OutputSpec.of(Review).validate(text).address == Address(city="Lyon")


def test_validate_reads_json_types_as_from_the_wire() -> None:
    assert OutputSpec.of(StrictEvent).validate('{"when": "2024-05-01"}').when == datetime.date(2024, 5, 1)


@pytest.mark.parametrize(
    ("output", "text", "expected"),
    [
        (list[str], '{"value": ["a", "b"]}', ["a", "b"]),
        (list[str], '["a"]', ["a"]),
        (bool, '{"value": true}', True),
        (int, "7", 7),
        (Literal["pos", "neg"], '{"value": "neg"}', "neg"),
        (Color, '{"value": "green"}', Color.GREEN),
        (Person, '{"name": "Ada", "age": 36}', {"name": "Ada", "age": 36}),
        (Point, '{"x": 1.5, "y": null}', Point(1.5, 0.0)),
    ],
)
def test_validate_unwraps_and_accepts_bare_values(output: Any, text: str, expected: Any) -> None:
    assert OutputSpec.of(output).validate(text) == expected


@pytest.mark.parametrize("text", ["", "not json", '{"sentiment": "pos",', "```json\n{oops}\n```"])
def test_invalid_json_raises_an_output_validation_error_with_the_raw_text(text: str) -> None:
    with pytest.raises(OutputValidationError) as info:
        OutputSpec.of(Review).validate(text)
    assert isinstance(info.value, AIForgeError)
    assert info.value.raw_text == text
    assert [e["type"] for e in info.value.errors] == ["json_invalid"]


def test_schema_mismatch_carries_pydantic_errors_with_their_locations() -> None:
    text = '{"sentiment": "great", "rating": 9, "address": {"zip_code": "1"}}'
    with pytest.raises(OutputValidationError) as info:
        OutputSpec.of(Review).validate(text)
    locs = {e["loc"] for e in info.value.errors}
    assert locs == {("sentiment",), ("rating",), ("address", "city")}
    assert info.value.raw_text == text and "Review" in str(info.value)


def test_wrapped_value_errors_are_located_under_value() -> None:
    with pytest.raises(OutputValidationError) as info:
        OutputSpec.of(list[int]).validate('{"value": [1, "x"]}')
    assert [e["loc"] for e in info.value.errors] == [("value", 1)]


def test_feedback_names_each_wrong_field_and_asks_for_json_only() -> None:
    spec = OutputSpec.of(Review)
    with pytest.raises(OutputValidationError) as info:
        spec.validate('{"sentiment": "great", "rating": 9}')
    message = spec.feedback(info.value)
    assert "sentiment: Input should be 'pos', 'neg' or 'neutral'" in message
    assert "rating: Input should be less than or equal to 5" in message
    assert message.endswith("Answer again with only the corrected JSON.")


def test_feedback_for_invalid_json_says_so() -> None:
    spec = OutputSpec.of(Review)
    with pytest.raises(OutputValidationError) as info:
        spec.validate("Sure! The sentiment is positive.")
    assert "Invalid JSON" in spec.feedback(info.value)


def test_feedback_is_concise_for_many_errors() -> None:
    spec = OutputSpec.of(list[int])
    with pytest.raises(OutputValidationError) as info:
        spec.validate(json.dumps({"value": ["x"] * 30}))
    message = spec.feedback(info.value)
    assert message.count("\n- ") == 11 and "and 20 more" in message


def test_instructions_carry_the_wire_schema_and_ask_for_json_only() -> None:
    spec = OutputSpec.of(list[str])
    text = spec.instructions()
    assert "JSON" in text and "nothing else" in text
    schema = json.loads(text[text.index("{") :])
    assert schema == spec.wire_schema


def test_refusal_is_its_own_error() -> None:
    error = OutputRefusedError("I can't help with that.")
    assert isinstance(error, AIForgeError) and not isinstance(error, OutputValidationError)
    assert error.refusal == "I can't help with that." and "I can't help with that." in str(error)


# --------------------------------------------------------------------------- properties


reviews = st.builds(
    Review,
    sentiment=st.sampled_from(["pos", "neg", "neutral"]),
    rating=st.integers(1, 5),
    topics=st.lists(st.text(max_size=10), max_size=3),
    color=st.sampled_from(list(Color)),
    address=st.none() | st.builds(Address, city=st.text(max_size=10), zip_code=st.none() | st.text(max_size=5)),
    note=st.text(min_size=1, max_size=10),
)


@given(reviews)
def test_any_valid_review_round_trips_through_its_json(review: Review) -> None:
    assert OutputSpec.of(Review).validate(review.model_dump_json()) == review


@given(st.lists(st.text(max_size=8), max_size=5))
def test_any_wrapped_list_round_trips(values: list[str]) -> None:
    assert OutputSpec.of(list[str]).validate(json.dumps({"value": values})) == values


@given(st.text(max_size=40))
def test_validate_never_raises_anything_but_output_validation_error(text: str) -> None:
    try:
        OutputSpec.of(Review).validate(text)
    except OutputValidationError as exc:
        assert exc.raw_text == text and exc.errors


@pytest.mark.parametrize("output", [Review, Node, Person, Point, list[str], Literal["x", "y"], Color, StrictEvent])
def test_strict_schema_is_accepted_by_a_strict_openai_server_and_its_sample_validates(output: Any) -> None:
    openai = pytest.importorskip("openai")
    from fakellm import LLMServer, Reply, sample_output

    spec = OutputSpec.of(output)
    strict = spec.strict_schema()
    with LLMServer(strict=True) as server:
        server.enqueue(Reply(output=sample_output(strict)))
        client = openai.OpenAI(base_url=server.openai_base_url, api_key="sk-test", max_retries=0)
        reply = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "Answer."}],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": spec.name, "strict": True, "schema": strict},
            },
        )
    spec.validate(reply.choices[0].message.content)


# -- what output= may be: one UsageError at the entrance (issue 22 item 8) ---------------------------------


class Unsatisfiable(BaseModel):
    rating: int = Field(ge=5, le=1)


class Forward(BaseModel):
    parent: UndefinedParent  # type: ignore[name-defined]  # noqa: F821 - the mistake under test


@pytest.mark.parametrize(
    ("output", "says"),
    [
        (Unsatisfiable, r"output=Unsatisfiable can never validate: rating: no integer is >= 5 and <= 1"),
        (Forward, r"output=Forward: the annotation 'UndefinedParent' is not defined.*Forward.model_rebuild\(\)"),
        (3, r"output must be a type .*got a int value \(3\)"),
        ("int", r"got the str 'int'"),
        (Review(sentiment="pos", rating=3), r"pass the class Review, not an instance \(output=Review\)"),
        (Address.model_construct(city="x"), r"pass the class Address, not an instance"),
    ],
)
def test_an_unusable_output_is_one_usage_error_naming_the_problem(output: object, says: str) -> None:
    from aiforge.core.types import UsageError

    with pytest.raises(UsageError, match=says) as caught:
        OutputSpec.of(output)
    error = caught.value
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)  # no pydantic chain


@pytest.mark.parametrize(
    ("field", "says"),
    [
        (Field(gt=1, lt=2), "no integer is > 1 and < 2"),
        (Field(ge=3, lt=3), "no integer is >= 3 and < 3"),
        (Field(min_length=4, max_length=2), "no string has at least 4 and at most 2 characters"),
    ],
)
def test_bounds_no_value_meets_are_found_in_any_field(field: Any, says: str) -> None:
    from pydantic import create_model

    from aiforge.core.types import UsageError

    kind = str if "string" in says else int
    inner = create_model("Inner", value=(kind, field))
    outer = create_model("Outer", items=(list[inner], ...))  # type: ignore[valid-type]
    with pytest.raises(UsageError, match=f"Inner.value: {says}"):
        OutputSpec.of(outer)


def test_bounds_a_value_can_meet_are_fine() -> None:
    class Fine(BaseModel):
        score: float = Field(gt=1, lt=2)
        exact: int = Field(ge=3, le=3)
        word: str = Field(min_length=2, max_length=2)

    assert OutputSpec.of(Fine).name == "Fine"
    assert OutputSpec.of(OutputSpec.of(Fine)) is OutputSpec.of(Fine)
