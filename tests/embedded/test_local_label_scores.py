"""The embedded model as a classifier: label scores from the real SmolLM2 weights, read without generating."""

from __future__ import annotations

from typing import Any

import pytest

from aiforge.core.settings import load_settings
from aiforge.core.types import BadRequestError, CallParams, Message, UsageError
from aiforge.providers.local import LocalProvider, weights
from aiforge.providers.local.weights import find_default_weights

if not weights.xllamacpp_installed() or find_default_weights() is None:
    pytest.skip(f"the embedded model is not installed: {weights.INSTALL_HINT}", allow_module_level=True)

pytestmark = pytest.mark.embedded

PARAMS = CallParams(model="SmolLM2-135M-Instruct")
SENTIMENTS = ["positive", "negative", "neutral"]


def review(text: str) -> list[Message]:
    return [
        {"role": "system", "content": "Classify the sentiment of the product review."},
        {"role": "user", "content": text},
    ]


@pytest.fixture(scope="module")
def provider() -> LocalProvider:
    return LocalProvider(load_settings(PROVIDER="local"))


async def test_an_obvious_review_is_positive_with_confidence_above_half(provider: LocalProvider) -> None:
    assert provider.scores_labels and provider.classifies_by_scoring
    scores = await provider.score_labels(review("I love it, best purchase ever"), SENTIMENTS, PARAMS)
    assert scores.answer == "positive"
    assert scores.confidence > 0.5
    assert scores.model == "SmolLM2-135M-Instruct"


async def test_probabilities_sum_to_one_in_the_labels_order(provider: LocalProvider) -> None:
    scores = await provider.score_labels(review("It is a mug. It holds coffee."), SENTIMENTS, PARAMS)
    assert list(scores.probabilities) == SENTIMENTS
    assert sum(scores.probabilities.values()) == pytest.approx(1)
    assert all(0 < probability < 1 for probability in scores.probabilities.values())


async def test_labels_of_several_tokens_are_read_token_by_token(provider: LocalProvider) -> None:
    labels = ["Very Positive", "Somewhat Negative"]
    scores = await provider.score_labels(review("Great kettle, boils fast."), labels, PARAMS)
    assert sum(scores.probabilities.values()) == pytest.approx(1)
    tokens = sum(len(provider.engine.tokens_of(label)) for label in labels)
    assert tokens > len(labels)  # the labels are not single tokens
    assert scores.usage.output_tokens == tokens + len(labels)  # each label's tokens and the end of its turn
    assert scores.usage.input_tokens > 0


@pytest.mark.parametrize(
    ("labels", "problem"),
    [([], "at least two labels"), (["positive"], "at least two labels"), (["positive", ""], "non-blank")],
)
async def test_too_few_or_blank_labels_are_usage_errors(provider: LocalProvider, labels: Any, problem: str) -> None:
    with pytest.raises(UsageError, match=problem):
        await provider.score_labels(review("Fine."), labels, PARAMS)


async def test_a_prompt_beyond_the_context_names_the_setting() -> None:
    small = LocalProvider(load_settings(LOCAL_CONTEXT_SIZE=256))
    with pytest.raises(BadRequestError, match="LOCAL_CONTEXT_SIZE"):
        await small.score_labels(review("long review " * 200), SENTIMENTS, PARAMS)
