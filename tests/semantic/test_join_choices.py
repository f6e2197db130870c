"""join's ``strategy="candidates"``: one multiple-choice question per distinct left row over its nearest right rows,
the depth given or chosen from a sample for ``target_recall``, the answers' numbers read robustly."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd
import pytest

import aiforge  # noqa: F401 - registers the accessor
from aiforge import ChatAgent
from aiforge.providers.scripted import ScriptedProvider
from aiforge.semantic.join.choices import MAX_DEPTH, SAMPLE_ROWS, chosen_depth, wilson
from bench.join_mentions import mention_set
from bench.semantic_join import PROMPT, join_set, scores, scripted_reply, truth_answer
from fakellm import LLMServer, Reply


def knowing(left: pd.DataFrame, right: pd.DataFrame, truth: set[tuple[str, str]], **settings: Any) -> ChatAgent:
    """An agent whose scripted model answers every join question from the planted truth."""
    provider = ScriptedProvider(default=scripted_reply(truth_answer(left, right, truth)))
    return ChatAgent(provider=provider, memory="none", output_retries=0, **settings)


def replying(answer: Callable[[str], Any]) -> ChatAgent:
    def reply(messages: list[dict[str, Any]]) -> str:
        return json.dumps({"value": answer(next(m["content"] for m in reversed(messages) if m["role"] == "user"))})

    return ChatAgent(provider=ScriptedProvider(default=reply), memory="none", output_retries=0)


def listed(question: str) -> list[str]:
    return re.findall(r"^\d+\. name: (.*)$", question, re.M)


def test_auto_asks_one_question_per_left_row_and_finds_the_planted_matches() -> None:
    left, right, truth = join_set(200, 200)
    agent = knowing(left, right, truth)
    joined = left.aiforge.join(right, PROMPT, agent=agent)
    report = joined.attrs["aiforge"]
    assert report.strategy == "candidates" and report.naive_questions == 40_000
    chat = len(agent.provider.calls)
    assert chat == 200 == report.questions == report.chat_requests  # the sample's answers are kept: no extra question
    assert report.sample_questions == SAMPLE_ROWS and report.k_max == MAX_DEPTH and report.requests == chat + 1
    recall, precision = scores(joined, truth)
    assert precision == 1.0 and recall >= 0.95
    assert report.estimated_recall is not None and report.estimated_recall >= 0.95 and 1 <= report.k <= MAX_DEPTH
    assert "sampled rows asked at depth 20" in report.depth_how and report.dropped_numbers == 0
    assert all(call.params.output.output_type == list[int] for call in agent.provider.calls)
    depths = sorted({len(listed(call.last_user_message)) for call in agent.provider.calls})
    assert depths == sorted({report.k, MAX_DEPTH})
    assert f"k={report.k}," in repr(report) and f"estimated_recall={report.estimated_recall:.2f}," in repr(report)


def test_no_more_left_rows_than_the_sample_asks_every_row_at_the_full_depth_in_one_batch() -> None:
    left, right, truth = join_set(SAMPLE_ROWS, 60)
    agent = knowing(left, right, truth)
    joined = left.aiforge.join(right, PROMPT, agent=agent)
    report = joined.attrs["aiforge"]
    assert len(agent.provider.calls) == SAMPLE_ROWS == report.questions == len(report.batch.results)
    assert {len(listed(call.last_user_message)) for call in agent.provider.calls} == {MAX_DEPTH}
    assert (report.k, report.sample_questions, report.sample_batch, report.estimated_recall) == (20, 0, None, None)
    assert scores(joined, truth) == (1.0, 1.0) and report.depth_how.startswith("every left row (40 <= SAMPLE_ROWS)")


def test_a_given_depth_asks_no_sample_and_lists_that_many_candidates() -> None:
    left, right, truth = join_set(60, 60)
    agent = knowing(left, right, truth)
    report = left.aiforge.join(right, PROMPT, agent=agent, candidates=4).attrs["aiforge"]
    assert len(agent.provider.calls) == 60 == report.questions and report.sample_questions == 0
    assert {len(listed(call.last_user_message)) for call in agent.provider.calls} == {4}
    assert (report.k, report.depth_how, report.estimated_recall) == (4, "candidates=4 (given)", None)


def test_a_left_row_about_nothing_answers_none_and_how_left_keeps_it() -> None:
    left, right, truth = join_set(40, 40)
    joined = left.aiforge.join(right, PROMPT, how="left", agent=knowing(left, right, truth), candidates=5)
    unmatched = joined[joined["name"].isna()].index.get_level_values("left")
    assert list(unmatched) == [f"T{t:03d}" for t in range(9, 40, 10)]  # one ticket in ten is about no product
    assert scores(joined.dropna(subset=["name"]), truth) == (1.0, 1.0)


def test_multiple_true_keeps_every_match_and_false_the_first_counting_the_rest() -> None:
    left, right, truth = mention_set(40, 40)
    doubles = {t for t, _ in truth if sum(t == u for u, _ in truth) == 2}
    assert len(doubles) == 2  # mentions 4 and 24 name two products
    joined = left.aiforge.join(right, PROMPT, agent=knowing(left, right, truth), candidates=40)
    assert scores(joined, truth) == (1.0, 1.0)
    answer = truth_answer(left, right, truth)
    every = "Reply with the numbers of all the items"  # a model that gives every match though asked for one
    agent = replying(lambda q: answer(q.replace("Reply with a list holding the number of the one item", every)))
    single = left.aiforge.join(right, PROMPT, agent=agent, candidates=40, multiple=False)
    report = single.attrs["aiforge"]
    assert report.dropped_numbers == 2 and len(single) == len(truth) - 2
    assert all(sum(single.index.get_level_values("left") == t) == 1 for t in doubles)
    assert "Reply with a list holding the number of the one item" in report.batch.inputs[0]


def test_numbers_that_name_no_candidate_are_dropped_and_counted() -> None:
    left, right, truth = join_set(3, 40)
    answer = truth_answer(left, right, truth)
    agent = replying(lambda question: [0, -1, 99, *map(int, answer(question)), 3])
    joined = left.aiforge.join(right, PROMPT, agent=agent, candidates=3)
    report = joined.attrs["aiforge"]
    assert report.dropped_numbers == 3 * 3 and report.failed == []
    # the truth's number kept, and 3 (the third candidate, a wrong product) as the model said it
    assert set(truth) <= set(joined.index) and len(joined) == len(truth) + 3


@pytest.mark.parametrize("side", ["left", "right"])
def test_an_empty_side_asks_nothing(side: str) -> None:
    left, right, truth = join_set(10, 40)
    agent = knowing(left, right, truth)
    left, right = (left.iloc[:0], right) if side == "left" else (left, right.iloc[:0])
    joined = left.aiforge.join(right, PROMPT, agent=agent, strategy="candidates")
    report = joined.attrs["aiforge"]
    assert len(joined) == 0 and agent.provider.calls == [] and agent.provider.embed_calls == []
    assert (report.questions, report.requests, report.k, report.total_cost) == (0, 0, None, 0.0)


def test_a_left_row_whose_question_fails_is_reported_by_its_label_and_warned() -> None:
    left, right, truth = join_set(60, 40)
    answer = truth_answer(left, right, truth)
    agent = replying(lambda q: "three" if q.startswith(f"Does the ticket {left['text'].iloc[5]} ") else answer(q))
    with pytest.warns(UserWarning, match=r"1 question\(s\) got no answer"):
        joined = left.aiforge.join(right, PROMPT, agent=agent)
    report = joined.attrs["aiforge"]
    assert [(f.left, f.right) for f in report.failed] == [("T005", None)]
    # a sampled row whose question failed is asked again with the others, and fails again there
    assert len(agent.provider.calls) == 60 + (5 in _sampled(60))


def _sampled(rows: int) -> set[int]:
    import random

    from aiforge.semantic.join.choices import _SEED

    return set(random.Random(_SEED).sample(range(rows), SAMPLE_ROWS))


def test_the_depth_is_the_smallest_holding_the_target_share_of_the_sampled_matches() -> None:
    assert chosen_depth([1] * 18 + [2, 9], 20, 0.95, 25)[:2] == (2, 0.95)
    assert chosen_depth([1] * 18 + [2, 9], 20, 1.0, 25)[:2] == (9, 1.0)
    depth, recall, interval, how = chosen_depth([], 20, 0.95, 40)
    assert (depth, recall, interval) == (5, None, None) and how.startswith("no match among 40 sampled rows")
    low, high = wilson(19, 20)
    assert 0.75 < low < 0.95 < high <= 1.0


def test_a_lower_target_recall_chooses_a_shallower_depth() -> None:
    left, right, truth = join_set(200, 200)
    deep = left.aiforge.join(right, PROMPT, agent=knowing(left, right, truth), target_recall=1.0).attrs["aiforge"]
    shallow = left.aiforge.join(right, PROMPT, agent=knowing(left, right, truth), target_recall=0.5).attrs["aiforge"]
    assert shallow.k <= deep.k and shallow.k == 1


def test_a_checkpointed_join_keeps_the_sample_in_a_file_of_its_own(tmp_path: Any) -> None:
    left, right, truth = join_set(60, 40)
    agent = knowing(left, right, truth, CACHE=False)
    checkpoint = tmp_path / "join.sqlite"
    first = left.aiforge.join(right, PROMPT, agent=agent, checkpoint=checkpoint)
    assert (tmp_path / "join.sample.sqlite").exists() and checkpoint.exists()
    again = left.aiforge.join(right, PROMPT, agent=agent, checkpoint=checkpoint)
    assert len(agent.provider.calls) == 60 and again.equals(first)


@pytest.fixture
def srv() -> Iterator[LLMServer]:
    with LLMServer(strict=True) as server:
        yield server


def test_candidates_through_the_openai_sdk_ask_for_a_list_of_integers(srv: LLMServer) -> None:
    left, right, truth = join_set(60, 60)
    answer = truth_answer(left, right, truth)
    srv.default = lambda request: Reply(output={"value": [int(n) for n in answer(request.last_user_text)]})
    agent = ChatAgent(
        provider="openai",
        OPENAI_API_KEY="sk-test-key",
        OPENAI_BASE_URL=srv.openai_base_url,
        MAX_RETRIES=0,
        memory="none",
    )
    joined = left.aiforge.join(right, PROMPT, how="left", agent=agent, concurrency=4)
    report = joined.attrs["aiforge"]
    chats = [r for r in srv.requests if r.path == "/v1/chat/completions"]
    assert len(chats) == report.chat_requests == 60 and report.embedding_requests >= 1
    assert all(r.output_schema["properties"]["value"]["items"]["type"] == "integer" for r in chats)
    assert scores(joined.dropna(subset=["name"]), truth)[1] == 1.0 and joined["name"].isna().sum() >= 6


@pytest.mark.embedded
def test_on_minilm_vectors_200_mentions_x_40_products_take_one_request_each_at_recall_over_095() -> None:
    from aiforge.providers.sentence_vectors import EXTRA_HINT, bundled_model_zip, sentence_transformers_installed

    if not sentence_transformers_installed() or bundled_model_zip() is None:
        pytest.skip(f"the [embeddings] extra is not installed: {EXTRA_HINT}")
    left, right, truth = mention_set()
    agent = knowing(left, right, truth, EMBEDDING_PROVIDER="sentence-transformers")
    joined = left.aiforge.join(right, PROMPT, agent=agent)
    report, (recall, precision) = joined.attrs["aiforge"], scores(joined, truth)
    assert report.requests <= 250 and report.chat_requests == len(agent.provider.calls) == 200
    assert precision == 1.0 and recall >= 0.95 and report.k < 10


def test_a_budget_covers_the_sample_and_the_rest_together(srv: LLMServer) -> None:
    from aiforge.core.errors import BudgetExceededError

    left, right, truth = join_set(100, 60)
    answer = truth_answer(left, right, truth)
    srv.default = lambda request: Reply(output={"value": [int(n) for n in answer(request.last_user_text)]})
    agent = ChatAgent(
        provider="openai",
        OPENAI_API_KEY="sk-test-key",
        OPENAI_BASE_URL=srv.openai_base_url,
        MAX_RETRIES=0,
        memory="none",
        MODEL="gpt-4o-mini",
    )
    with pytest.warns(UserWarning, match="got no answer"):
        joined = left.aiforge.join(right, PROMPT, agent=agent, concurrency=1, max_cost=0.0018)
    report = joined.attrs["aiforge"]
    skipped = [f for f in report.failed if isinstance(f.error, BudgetExceededError)]
    assert report.sample_questions == SAMPLE_ROWS and skipped and report.chat_requests < 100
    chats = [r for r in srv.requests if r.path == "/v1/chat/completions"]
    assert len(chats) == report.chat_requests and report.total_cost <= 0.0018
