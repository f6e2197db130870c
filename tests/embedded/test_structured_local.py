"""Structured output from the real embedded model: constrained decoding makes every reply validate."""

from __future__ import annotations

import asyncio
import csv
import dataclasses
import json
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from aiforge.core.output import OutputSpec
from aiforge.core.settings import load_settings
from aiforge.core.types import CallParams, Completion, Message, ToolSpec
from aiforge.providers.local import LocalProvider, weights
from aiforge.providers.local.weights import find_default_weights

if not weights.xllamacpp_installed() or find_default_weights() is None:
    pytest.skip(f"the embedded model is not installed: {weights.INSTALL_HINT}", allow_module_level=True)

pytestmark = pytest.mark.embedded

REVIEWS = list(csv.DictReader((Path(__file__).parents[1] / "data" / "reviews.csv").read_text().splitlines()))[:10]
GREEDY = CallParams(model="SmolLM2-135M-Instruct", temperature=0, max_tokens=256)
WEATHER: ToolSpec = {
    "name": "weather",
    "description": "The current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


class Author(BaseModel):
    name: str
    country: str | None = None


class Review(BaseModel):
    sentiment: Literal["pos", "neg", "neutral"]
    rating: int = Field(ge=1, le=5)
    topics: list[str]


class DetailedReview(Review):
    summary: str | None = None
    author: Author | None = None


@pytest.fixture(scope="module")
def provider() -> LocalProvider:
    return LocalProvider(load_settings(PROVIDER="local"))


def ask(text: str) -> list[Message]:
    return [{"role": "system", "content": "You label product reviews."}, {"role": "user", "content": text}]


def events(provider: LocalProvider, messages: list[Message], output: Any, tools: list[ToolSpec] | None = None):
    params = dataclasses.replace(GREEDY, output=OutputSpec.of(output))

    async def run() -> list[Any]:
        return [event async for event in provider.stream(messages, tools, params)]

    *chunks, final = asyncio.run(run())
    assert isinstance(final, Completion)
    return chunks, final


def test_every_review_validates_as_a_model_with_a_literal_an_int_and_a_list(provider: LocalProvider) -> None:
    results = [
        OutputSpec.of(Review).validate(events(provider, ask(f"Label this review: {row['review']}"), Review)[1].text)
        for row in REVIEWS
    ]

    assert len(results) == len(REVIEWS)  # validate raised for none of them
    right = sum(result.sentiment == row["sentiment"] for result, row in zip(results, REVIEWS, strict=True))
    print(f"sentiment accuracy {right}/{len(REVIEWS)}")


def test_the_stream_is_the_answer_json_and_adds_up_to_the_text(provider: LocalProvider) -> None:
    chunks, final = events(provider, ask(f"Label this review: {REVIEWS[0]['review']}"), Review)

    assert len(chunks) > 3
    assert "".join(chunks) == final.text
    assert set(json.loads(final.text)) == {"sentiment", "rating", "topics"}
    assert '"answer"' not in final.text


def test_optional_fields_and_a_nested_model_validate(provider: LocalProvider) -> None:
    for row in REVIEWS[:3]:
        _, final = events(provider, ask(f"Label this review: {row['review']}"), DetailedReview)

        assert isinstance(OutputSpec.of(DetailedReview).validate(final.text), DetailedReview)


def test_a_bool_answer_validates(provider: LocalProvider) -> None:
    answers = [
        OutputSpec.of(bool).validate(events(provider, ask(f"Is this review positive? {row['review']}"), bool)[1].text)
        for row in REVIEWS
    ]

    assert all(isinstance(answer, bool) for answer in answers)


def test_literal_labels_are_always_one_of_the_labels(provider: LocalProvider) -> None:
    labels = Literal["pos", "neg", "neutral"]

    answers = [
        OutputSpec.of(labels).validate(events(provider, ask(f"Sentiment of: {row['review']}"), labels)[1].text)
        for row in REVIEWS
    ]

    assert set(answers) <= {"pos", "neg", "neutral"}
    right = sum(answer == row["sentiment"] for answer, row in zip(answers, REVIEWS, strict=True))
    print(f"label accuracy {right}/{len(REVIEWS)}")


def test_with_a_tool_offered_the_reply_is_a_tool_call_or_a_valid_answer(provider: LocalProvider) -> None:
    for row in REVIEWS[:5]:
        chunks, final = events(provider, ask(f"Label this review: {row['review']}"), Review, [WEATHER])

        if final.tool_calls:
            assert final.text == "" and not chunks
        else:
            assert isinstance(OutputSpec.of(Review).validate(final.text), Review)
            assert "".join(chunks) == final.text


def test_after_a_tool_result_the_answer_is_structured(provider: LocalProvider) -> None:
    call = {"id": "call_1", "name": "weather", "arguments": {"city": "Paris"}}
    messages: list[Message] = [
        {"role": "user", "content": "Is the weather in Paris good for a walk?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 22 C"},
    ]

    _, final = events(provider, messages, bool, [WEATHER])

    assert not final.tool_calls
    assert isinstance(OutputSpec.of(bool).validate(final.text), bool)
