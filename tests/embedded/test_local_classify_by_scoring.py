"""The embedded model classifies by scoring (issue 24): ``df.aiforge.classify`` and ``filter`` read each label's
likelihood instead of generating, with the generated path's typed columns and a confidence per row."""

from __future__ import annotations

import pandas as pd
import pytest

import aiforge  # noqa: F401 - registers the .aiforge accessor
from aiforge import ChatAgent
from aiforge.providers.local import weights
from aiforge.providers.local.weights import find_default_weights

if not weights.xllamacpp_installed() or find_default_weights() is None:
    pytest.skip(f"the embedded model is not installed: {weights.INSTALL_HINT}", allow_module_level=True)

pytestmark = [pytest.mark.embedded, pytest.mark.filterwarnings("ignore::aiforge.batch.embedded.EmbeddedModelWarning")]

REVIEWS = pd.DataFrame(
    {"review": ["I love it, best purchase ever!", "Terrible, it broke on the first day.", "Absolutely wonderful."]},
    index=["a", "b", "c"],
)
PROMPT = "What is the sentiment of this product review?\n\nReview: {review}"
SENTIMENTS = ["positive", "negative", "neutral"]


@pytest.fixture(scope="module")
def agent() -> ChatAgent:
    return ChatAgent(provider="local", memory="none", PROGRESS_BAR=False)


def test_classify_scores_each_row_with_a_confidence_between_zero_and_one(agent: ChatAgent) -> None:
    labels = REVIEWS.aiforge.classify(PROMPT, SENTIMENTS, agent=agent, concurrency=1)
    batch = labels.attrs["aiforge"]
    assert not batch.failed
    assert labels["a"] == "positive"
    for response in batch.results:
        # One request, scored: nothing generated (a row may have waited for the worker first).
        [record] = [r for r in response.trace if r["step"] != "wait"]
        assert (record["step"], record["name"]) == ("model", "score_labels")
        assert set(record["probabilities"]) == set(SENTIMENTS)
        assert response.cost == 0.0 and response.input_tokens > 0 and response.output_tokens > 0
    confidence = batch.to_dataframe()["confidence"]
    assert str(confidence.dtype) == "Float64"
    assert ((confidence > 0) & (confidence <= 1)).all()


def test_scored_columns_have_the_generated_columns_dtypes(agent: ChatAgent) -> None:
    generating = ChatAgent(provider="local", memory="none", PROGRESS_BAR=False, LABELS_BY="generation")
    rows = REVIEWS.iloc[:1]
    generated = rows.aiforge.classify(PROMPT, SENTIMENTS, agent=generating, concurrency=1)
    scored = rows.aiforge.classify(PROMPT, SENTIMENTS, agent=agent, concurrency=1)
    assert scored.dtype == generated.dtype and list(scored.cat.categories) == SENTIMENTS
    generated_frame, scored_frame = (s.attrs["aiforge"].to_dataframe() for s in (generated, scored))
    assert scored_frame.dtypes.equals(generated_frame.dtypes)
    assert generated_frame["confidence"].isna().all() and scored_frame["confidence"].notna().all()
    steps = generated.attrs["aiforge"].results[0].trace
    assert [r["name"] for r in steps if r["step"] != "wait"] == ["chat", "output"]  # a busy engine: a wait first


def test_filter_scores_true_or_false(agent: ChatAgent) -> None:
    happy = REVIEWS.aiforge.filter("Is the reviewer happy with the product?\n\n{review}", agent=agent, concurrency=1)
    batch = happy.attrs["aiforge"]
    assert set(happy.index) <= set(REVIEWS.index) and not batch.failed
    scored = [next(x for x in r.trace if x["step"] == "model") for r in batch.results]  # after a wait for a worker
    assert all(x["name"] == "score_labels" for x in scored) and all(r.output in (True, False) for r in batch.results)
    assert str(batch.to_dataframe()["output"].dtype) == "boolean"
