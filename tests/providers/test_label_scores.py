"""Label scoring over Chat Completions: the real ``openai`` SDK against the fake server's ``logprobs``."""

from __future__ import annotations

import math
from typing import Any

import pytest

from aiforge.core.settings import load_settings
from aiforge.core.types import BadRequestError, CallParams, Message, ProviderError, UsageError
from aiforge.providers.local_servers import VLLMProvider
from fakellm import Fault, LLMServer, Reply
from tests.providers.conftest import GATEWAY, OPENAI, WireProtocol

PARAMS = CallParams(model="gpt-4o-mini")
REVIEW: list[Message] = [
    {"role": "system", "content": "Classify the sentiment of the review."},
    {"role": "user", "content": "Arrived broken, and support never answered."},
]
SENTIMENTS = ["positive", "negative", "neutral"]


@pytest.fixture
def protocol() -> WireProtocol:
    """Pins conftest's ``make_provider`` to the openai provider."""
    return OPENAI


def first_token(**logprobs: float) -> list[dict[str, float]]:
    """A reply's ``logprobs``: one answer token, the first name the token sent."""
    return [logprobs]


async def test_the_request_asks_for_the_top_logprobs_of_one_answer_token(
    llm_server: LLMServer, make_provider: Any
) -> None:
    llm_server.strict = True
    llm_server.enqueue(Reply(text="negative", logprobs=first_token(negative=-0.1, positive=-3.0)))
    await make_provider(llm_server.openai_base_url).score_labels(REVIEW, SENTIMENTS, PARAMS)
    (request,) = llm_server.requests
    assert (request.body["logprobs"], request.body["top_logprobs"]) == (True, 20)
    assert request.body["max_completion_tokens"] == 1
    assert "response_format" not in request.body
    system = request.messages[0]["content"]
    assert system.startswith("Classify the sentiment of the review.")
    assert "exactly one of these labels and nothing else: positive, negative, neutral." in system


async def test_probabilities_are_the_listed_first_token_probabilities_normalised_over_the_labels(
    llm_server: LLMServer, make_provider: Any
) -> None:
    listed = first_token(negative=math.log(0.6), positive=math.log(0.2), neutral=math.log(0.1), The=math.log(0.05))
    llm_server.enqueue(Reply(text="negative", logprobs=listed, usage={"prompt_tokens": 40, "completion_tokens": 1}))
    scores = await make_provider(llm_server.openai_base_url).score_labels(REVIEW, SENTIMENTS, PARAMS)
    assert list(scores.probabilities) == SENTIMENTS
    assert scores.probabilities == pytest.approx({"positive": 2 / 9, "negative": 6 / 9, "neutral": 1 / 9})
    assert (scores.answer, scores.confidence) == ("negative", pytest.approx(6 / 9))
    assert (scores.usage.input_tokens, scores.usage.output_tokens) == (40, 1)
    assert scores.model == "gpt-4o-mini"


async def test_tokens_that_begin_a_label_in_another_case_or_after_a_space_count_for_it(
    llm_server: LLMServer, make_provider: Any
) -> None:
    listed = {"Pos": math.log(0.3), " positive": math.log(0.3), "negative": math.log(0.2), "neutral": math.log(0.2)}
    llm_server.enqueue(Reply(text="Pos", logprobs=[listed]))
    scores = await make_provider(llm_server.openai_base_url).score_labels(REVIEW, SENTIMENTS, PARAMS)
    assert scores.probabilities == pytest.approx({"positive": 0.6, "negative": 0.2, "neutral": 0.2})


async def test_a_label_no_listed_token_begins_gets_a_floor_below_the_least_likely_listed(
    llm_server: LLMServer, make_provider: Any
) -> None:
    listed = first_token(yes=math.log(0.7), no=math.log(0.2), The=math.log(0.06))
    llm_server.enqueue(Reply(text="yes", logprobs=listed))
    scores = await make_provider(llm_server.openai_base_url).score_labels(REVIEW, ["yes", "no", "maybe"], PARAMS)
    floor = scores.probabilities["maybe"]
    assert 0 < floor < scores.probabilities["no"] < scores.probabilities["yes"]
    assert floor == pytest.approx(0.04 / 0.94)  # the 4% no listed token holds, below the 6% of "The"
    assert sum(scores.probabilities.values()) == pytest.approx(1)


async def test_first_tokens_that_begin_several_labels_fall_back_to_an_enum_answer(
    llm_server: LLMServer, make_provider: Any
) -> None:
    llm_server.strict = True
    spelled = [{'{"': 0.0}, {"label": 0.0}, {'":"': 0.0}, {"neut": math.log(0.8)}, {"ral": math.log(0.9)}, {'"}': 0.0}]
    llm_server.enqueue(
        Reply(text="ne", logprobs=first_token(ne=math.log(0.7), positive=math.log(0.2))),
        Reply(text='{"label":"neutral"}', logprobs=spelled),
    )
    scores = await make_provider(llm_server.openai_base_url).score_labels(REVIEW, SENTIMENTS, PARAMS)
    first, second = llm_server.requests
    assert second.body["logprobs"] is True
    schema = second.body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["label"]["enum"] == SENTIMENTS
    assert (scores.answer, scores.confidence) == ("neutral", pytest.approx(0.72))
    assert scores.probabilities["positive"] == pytest.approx(0.14)


async def test_a_label_that_begins_another_is_generated_at_once(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Reply(text='{"label":"none"}', logprobs=[{'{"label":"': 0.0}, {"none": math.log(0.6)}]))
    scores = await make_provider(llm_server.openai_base_url).score_labels(REVIEW, ["no", "none"], PARAMS)
    (request,) = llm_server.requests
    assert request.body["response_format"]["type"] == "json_schema"
    assert scores.probabilities == pytest.approx({"no": 0.4, "none": 0.6})


async def test_a_server_that_returns_no_logprobs_is_a_provider_error(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Reply(text="negative"))
    with pytest.raises(ProviderError, match="returned no logprobs"):
        await make_provider(llm_server.openai_base_url).score_labels(REVIEW, SENTIMENTS, PARAMS)


async def test_a_rejected_request_is_the_mapped_error(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Fault(400, message="logprobs are not supported with this model"))
    with pytest.raises(BadRequestError, match="logprobs are not supported"):
        await make_provider(llm_server.openai_base_url).score_labels(REVIEW, SENTIMENTS, PARAMS)


@pytest.mark.parametrize(
    ("labels", "problem"),
    [
        ([], "at least two labels"),
        (["positive"], "at least two labels"),
        (["positive", " "], "non-blank"),
        (["positive", "Positive"], "same answer"),
        ("positive", "list of strings"),
    ],
)
async def test_bad_labels_are_usage_errors_before_any_request(
    llm_server: LLMServer, make_provider: Any, labels: Any, problem: str
) -> None:
    with pytest.raises(UsageError, match=problem):
        await make_provider(llm_server.openai_base_url).score_labels(REVIEW, labels, PARAMS)
    assert llm_server.requests == []


async def test_the_gateway_scores_labels_with_its_max_tokens_field(
    llm_server: LLMServer, provider_cleanup: list[Any]
) -> None:
    provider = GATEWAY.provider_class(GATEWAY.settings(llm_server.openai_base_url))
    provider_cleanup.append(provider)
    llm_server.enqueue(Reply(text="yes", logprobs=first_token(yes=math.log(0.9), no=math.log(0.05))))
    scores = await provider.score_labels(REVIEW, ["yes", "no"], GATEWAY.params)
    assert provider.scores_labels
    assert llm_server.requests[0].body["max_tokens"] == 1
    assert scores.probabilities == pytest.approx({"yes": 0.9 / 0.95, "no": 0.05 / 0.95})


async def test_a_local_server_scores_labels_too(llm_server: LLMServer, provider_cleanup: list[Any]) -> None:
    provider = VLLMProvider(load_settings(PROVIDER="vllm", VLLM_BASE_URL=llm_server.openai_base_url))
    provider_cleanup.append(provider)
    llm_server.enqueue(Reply(text="no", logprobs=first_token(no=math.log(0.5), yes=math.log(0.25))))
    scores = await provider.score_labels(REVIEW, ["yes", "no"], CallParams(model="default"))
    assert scores.probabilities == pytest.approx({"yes": 1 / 3, "no": 2 / 3})
