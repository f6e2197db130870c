"""left.aiforge.join(right, prompt): pairs the model confirms, merged as pandas does, never n x m questions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import aiforge  # noqa: F401 - registers the accessor
from aiforge import ChatAgent
from aiforge.core.types import UsageError
from aiforge.providers.scripted import ScriptedProvider
from aiforge.semantic.join import CLASSIFY_MAX_RIGHT, JoinReport
from aiforge.semantic.join.candidates import nearest
from bench.semantic_join import PROMPT, join_set, scores, scripted_reply, truth_answer
from fakellm import LLMServer, Reply


def knowing(left: pd.DataFrame, right: pd.DataFrame, truth: set[tuple[str, str]]) -> ChatAgent:
    """An agent whose scripted model answers every join question from the known truth."""
    provider = ScriptedProvider(default=scripted_reply(truth_answer(left, right, truth)))
    return ChatAgent(provider=provider, memory="none", output_retries=0)


def user_texts(agent: ChatAgent) -> list[str]:
    return [call.last_user_message for call in agent.provider.calls]


@pytest.fixture
def srv() -> Iterator[LLMServer]:
    with LLMServer(strict=True) as server:
        yield server


def openai_agent(server: LLMServer) -> ChatAgent:
    return ChatAgent(
        provider="openai",
        OPENAI_API_KEY="sk-test-key",
        OPENAI_BASE_URL=server.openai_base_url,
        MAX_RETRIES=0,
        memory="none",
    )


TICKETS = pd.DataFrame(
    {"text": ["the velora kettle leaks", "my quibbix toaster burns", "where is my invoice?"], "id": [1, 2, 3]},
    index=pd.Index(["a", "b", "c"], name="ticket"),
)
PRODUCTS = pd.DataFrame(
    {"name": ["Velora kettle", "Quibbix toaster", "Torvane lamp"], "id": [10, 20, 30]},
    index=pd.Index(["k", "t", "l"], name="sku"),
)
SMALL_TRUTH = {("a", "k"), ("b", "t")}


# --- the classify rewrite (a small right side) -----------------------------------------------------------------------


def test_small_right_side_is_one_classification_per_distinct_left_row() -> None:
    left, right, truth = join_set(200, 20)
    left = pd.concat([left, left.iloc[:30].set_axis([f"D{i}" for i in range(30)])])  # 30 repeated tickets
    truth |= {(f"D{i}", p) for i in range(30) for t, p in truth if t == left.index[i]}
    agent = knowing(left, right, truth)
    joined = left.aiforge.join(right, PROMPT, agent=agent)
    report = joined.attrs["aiforge"]
    assert isinstance(report, JoinReport) and report.strategy == "classify"
    assert len(agent.provider.calls) == left["text"].nunique() == 200 == report.chat_requests == report.questions
    assert report.naive_questions == 200 * 20 and report.embedding_requests == 0
    assert scores(joined, truth) == (1.0, 1.0) and report.matches == len(truth) == len(joined)


def test_classification_lists_the_right_rows_and_answers_with_their_numbers() -> None:
    agent = knowing(TICKETS, PRODUCTS, SMALL_TRUTH)
    joined = TICKETS.aiforge.join(PRODUCTS, PROMPT, agent=agent)
    first = user_texts(agent)[0]
    assert first.startswith("Does the ticket the velora kettle leaks concern the product <the item's name>?")
    assert first.endswith("Items:\n1. name: Velora kettle\n2. name: Quibbix toaster\n3. name: Torvane lamp")
    schema = agent.provider.calls[0].params.output.schema
    assert schema["type"] == "array" and schema["items"]["enum"] == ["1", "2", "3"]
    assert list(joined.index) == [("a", "k"), ("b", "t")]


def test_one_left_row_may_match_several_right_rows() -> None:
    agent = ChatAgent(provider=ScriptedProvider(default=json.dumps({"value": ["1", "3"]})), memory="none")
    joined = TICKETS.head(1).aiforge.join(PRODUCTS, PROMPT, agent=agent)
    assert list(joined.index) == [("a", "k"), ("a", "l")]


def test_multiple_false_asks_for_one_number_or_none() -> None:
    agent = knowing(TICKETS, PRODUCTS, SMALL_TRUTH)
    joined = TICKETS.aiforge.join(PRODUCTS, PROMPT, agent=agent, multiple=False)
    assert agent.provider.calls[0].params.output.schema["enum"] == ["1", "2", "3", "none"]
    assert list(joined.index) == [("a", "k"), ("b", "t")]


def test_identical_right_rows_are_one_item_and_both_match() -> None:
    products = pd.concat([PRODUCTS, PRODUCTS.iloc[[0]].set_axis(["k2"])])
    agent = knowing(TICKETS, products, SMALL_TRUTH | {("a", "k2")})
    joined = TICKETS.aiforge.join(products, PROMPT, agent=agent)
    assert user_texts(agent)[0].count("Velora kettle") == 1
    assert list(joined.index) == [("a", "k"), ("a", "k2"), ("b", "t")]


def test_auto_classifies_up_to_the_threshold_and_blocks_by_embedding_above() -> None:
    left, right, truth = join_set(3, CLASSIFY_MAX_RIGHT)
    joined = left.aiforge.join(right, PROMPT, agent=knowing(left, right, truth))
    assert joined.attrs["aiforge"].strategy == "classify"
    left, right, truth = join_set(3, CLASSIFY_MAX_RIGHT + 1)
    joined = left.aiforge.join(right, PROMPT, agent=knowing(left, right, truth))
    assert joined.attrs["aiforge"].strategy == "candidates"


# --- strategy="pairs": candidates by embedding, then a yes/no per pair ------------------------------------------------


@pytest.mark.parametrize("k", [5, 10])
def test_pairs_find_the_known_matches_with_far_fewer_than_n_x_m_requests(k: int) -> None:
    left, right, truth = join_set(200, 200)
    agent = knowing(left, right, truth)
    joined = left.aiforge.join(right, PROMPT, agent=agent, strategy="pairs", candidates=k)
    report = joined.attrs["aiforge"]
    assert report.strategy == "pairs" and report.naive_questions == 40_000 and report.k == k
    assert scores(joined, truth) == (1.0, 1.0) and len(joined) == len(truth) == 180
    chat, embedding = len(agent.provider.calls), len(agent.provider.embed_calls)
    assert (chat, embedding) == (report.chat_requests, report.embedding_requests)
    assert chat <= 200 * k and 1 <= embedding <= 2 and report.requests <= 200 * k + 2
    assert all(call.params.output.output_type is bool for call in agent.provider.calls)
    first = agent.provider.calls[0].last_user_message
    assert first == f"Does the ticket {left['text'].iloc[0]} concern the product {right.loc['P000', 'name']}?"


def test_pairs_embed_each_distinct_text_once_and_ask_each_distinct_pair_once() -> None:
    left, right, truth = join_set(20, 40)
    doubled = pd.concat([left, left.set_axis([f"D{i}" for i in range(20)])])
    truth |= {(f"D{int(t[1:])}", p) for t, p in truth}  # D7 is T007 again
    agent = knowing(doubled, right, truth)
    joined = doubled.aiforge.join(right, PROMPT, agent=agent, strategy="pairs", candidates=3)
    assert len(agent.provider.calls) == 20 * 3 == joined.attrs["aiforge"].questions
    assert sorted(text for call in agent.provider.embed_calls for text in call) == sorted(
        [*left["text"], *right["name"]]
    )
    assert scores(joined, truth) == (1.0, 1.0) and len(joined) == 2 * 18


def test_a_pair_the_embeddings_do_not_propose_is_never_asked() -> None:
    left, right, truth = join_set(200, 200)
    agent = knowing(left, right, truth)
    joined = left.aiforge.join(right, PROMPT, agent=agent, strategy="pairs", candidates=1)
    recall, precision = scores(joined, truth)
    assert len(agent.provider.calls) == 200 and precision == 1.0 and 0.8 < recall < 1.0


def test_a_failed_pair_decision_is_reported_with_both_labels_and_warned() -> None:
    answer = truth_answer(TICKETS, PRODUCTS, SMALL_TRUTH)

    def reply(messages: list[dict[str, Any]]) -> str:
        question = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        return "maybe" if "Velora kettle" in question else json.dumps({"value": answer(question)})

    agent = ChatAgent(provider=ScriptedProvider(default=reply), memory="none", output_retries=0)
    with pytest.warns(UserWarning, match=r"3 question\(s\) got no answer"):
        joined = TICKETS.aiforge.join(PRODUCTS, PROMPT, agent=agent, strategy="pairs", candidates=3)
    report = joined.attrs["aiforge"]
    assert sorted((f.left, f.right) for f in report.failed) == [("a", "k"), ("b", "k"), ("c", "k")]
    assert list(joined.index) == [("b", "t")]


def test_pairs_through_the_openai_sdk_use_the_embeddings_and_chat_endpoints(srv: LLMServer) -> None:
    left, right, truth = join_set(60, 60)
    answer = truth_answer(left, right, truth)
    srv.default = lambda request: Reply(output={"value": answer(request.last_user_text)})
    agent = openai_agent(srv)
    joined = left.aiforge.join(right, PROMPT, how="left", agent=agent, strategy="pairs", candidates=5, concurrency=4)
    report = joined.attrs["aiforge"]
    paths = [request.path for request in srv.requests]
    embeddings = [request for request in srv.requests if request.path.endswith("/embeddings")]
    assert len(embeddings) == report.embedding_requests >= 1
    assert paths.count("/v1/chat/completions") == report.chat_requests == 60 * 5
    assert all(r.output_schema["properties"]["value"]["type"] == "boolean" for r in srv.requests if r not in embeddings)
    assert scores(joined.dropna(subset=["name"]), truth) == (1.0, 1.0) and joined["name"].isna().sum() == 6
    assert report.embedding_tokens > 0


# --- pandas merge conventions ---------------------------------------------------------------------------------------


def test_how_left_keeps_unmatched_left_rows_with_null_right_columns() -> None:
    joined = TICKETS.aiforge.join(PRODUCTS, PROMPT, how="left", agent=knowing(TICKETS, PRODUCTS, SMALL_TRUTH))
    assert list(joined.index.get_level_values("left")) == ["a", "b", "c"]
    assert list(joined.index.get_level_values("right")[:2]) == ["k", "t"] and pd.isna(joined.index[2][1])
    assert joined.index.names == ["left", "right"]
    assert joined.loc["c"][["name", "id_y"]].isna().all(axis=None)
    assert joined["text"].tolist() == TICKETS["text"].tolist()


def test_how_right_and_outer_keep_unmatched_right_rows() -> None:
    agent = knowing(TICKETS, PRODUCTS, SMALL_TRUTH)
    right = TICKETS.aiforge.join(PRODUCTS, PROMPT, how="right", agent=agent)
    assert [pair[1] for pair in right.index] == ["k", "t", "l"] and right.loc[(slice(None), "l"), "text"].isna().all()
    outer = TICKETS.aiforge.join(PRODUCTS, PROMPT, how="outer", agent=agent)
    assert len(outer) == 4 and outer["name"].tolist()[:2] == ["Velora kettle", "Quibbix toaster"]
    assert pd.isna(outer["name"].iloc[2]) and outer["name"].iloc[3] == "Torvane lamp"


def test_clashing_column_names_get_the_suffixes() -> None:
    agent = knowing(TICKETS, PRODUCTS, SMALL_TRUTH)
    joined = TICKETS.aiforge.join(PRODUCTS, PROMPT, agent=agent)
    assert list(joined.columns) == ["text", "id_x", "name", "id_y"]
    assert joined["id_x"].tolist() == [1, 2] and joined["id_y"].tolist() == [10, 20]
    custom = TICKETS.aiforge.join(PRODUCTS, PROMPT, agent=agent, suffixes=("", "_product"))
    assert list(custom.columns) == ["text", "id", "name", "id_product"]


def test_suffixes_that_leave_a_clash_are_a_usage_error() -> None:
    agent = knowing(TICKETS, PRODUCTS, SMALL_TRUTH)
    with pytest.raises(UsageError, match="give suffixes"):
        TICKETS.aiforge.join(PRODUCTS, PROMPT, agent=agent, suffixes=(None, None))
    with pytest.raises(UsageError, match="suffixes= is a pair"):
        TICKETS.aiforge.join(PRODUCTS, PROMPT, agent=agent, suffixes="_x")
    assert agent.provider.calls == []


# --- the prompt and the arguments -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prompt", "message"),
    [
        ("Is {left.txt} about {right.name}?", "{left.txt}: no column 'txt' in the left frame; did you mean 'text'?"),
        ("Is {left.text} about {right.nme}?", "{right.nme}: no column 'nme' in the right frame; did you mean 'name'"),
        ("Does {text} concern {right.name}?", "names no side: write {left.<column>} or {right.<column>}"),
        ("Is {left.text} about kettles?", "names no column of the right frame"),
        ("Does {left.text!r} concern {right.name}?", "format spec or conversion"),
    ],
)
def test_a_prompt_naming_unknown_columns_or_no_side_is_a_usage_error(prompt: str, message: str) -> None:
    agent = knowing(TICKETS, PRODUCTS, SMALL_TRUTH)
    with pytest.raises(UsageError) as info:
        TICKETS.aiforge.join(PRODUCTS, prompt, agent=agent)
    assert message in str(info.value) and agent.provider.calls == []


def test_both_unknown_columns_are_named_in_one_error() -> None:
    with pytest.raises(UsageError) as info:
        TICKETS.aiforge.join(PRODUCTS, "{left.body} / {right.title}", agent=knowing(TICKETS, PRODUCTS, SMALL_TRUTH))
    assert "no column 'body' in the left frame" in str(info.value)
    assert "no column 'title' in the right frame" in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"how": "cross"}, "how= is one of 'inner', 'left', 'right', 'outer'"),
        ({"strategy": "pair"}, "strategy= is one of 'auto', 'classify', 'candidates', 'pairs'"),
        ({"multiple": "yes"}, "multiple= is True"),
        ({"candidates": 0}, "candidates= .* must be 'auto' or an integer >= 1, got 0"),
        ({"candidates": "deep"}, "candidates= .* must be 'auto' or an integer >= 1, got 'deep'"),
        ({"target_recall": 1.5}, r"target_recall= is a share of the matches in \(0, 1\]"),
    ],
)
def test_bad_arguments_are_usage_errors_before_any_request(kwargs: dict[str, Any], message: str) -> None:
    agent = knowing(TICKETS, PRODUCTS, SMALL_TRUTH)
    with pytest.raises(UsageError, match=message):
        TICKETS.aiforge.join(PRODUCTS, PROMPT, agent=agent, **kwargs)
    assert agent.provider.calls == []


def test_the_right_side_must_be_a_dataframe() -> None:
    with pytest.raises(UsageError, match=r"a Series: right.to_frame\(\)"):
        TICKETS.aiforge.join(PRODUCTS["name"], PROMPT)


# --- failures are said, never read as "no match" --------------------------------------------------------------------


def test_a_failed_classification_is_reported_and_warned_not_taken_as_no_match() -> None:
    answer = truth_answer(TICKETS, PRODUCTS, SMALL_TRUTH)

    def reply(messages: list[dict[str, Any]]) -> str:
        question = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        return "not json" if "quibbix" in question.split("\n")[0] else json.dumps({"value": answer(question)})

    agent = ChatAgent(provider=ScriptedProvider(default=reply), memory="none", output_retries=0)
    with pytest.warns(UserWarning, match=r"1 question\(s\) got no answer.*not decided as no match"):
        joined = TICKETS.aiforge.join(PRODUCTS, PROMPT, agent=agent, how="left")
    report = joined.attrs["aiforge"]
    assert [(f.left, f.right) for f in report.failed] == [("b", None)]
    assert "not valid JSON" in str(report.failed[0].error)
    assert list(joined.index.get_level_values("left")) == ["a", "b", "c"]


def test_a_row_with_a_missing_value_is_not_asked_and_is_reported() -> None:
    tickets = TICKETS.copy()
    tickets.loc["c", "text"] = None
    agent = knowing(TICKETS, PRODUCTS, SMALL_TRUTH)
    with pytest.warns(UserWarning, match=r"1 row\(s\) with a missing value were not asked"):
        joined = tickets.aiforge.join(PRODUCTS, PROMPT, agent=agent)
    assert len(agent.provider.calls) == 2 and len(joined) == 2
    [failure] = joined.attrs["aiforge"].failed
    assert (failure.left, failure.right, str(failure.error)) == ("c", None, "missing value: left.text")


# --- the candidates' blocking step -----------------------------------------------------------------------------------


def test_nearest_gives_the_k_most_similar_right_rows_by_cosine_most_similar_first() -> None:
    left = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 2.0]], dtype=np.float32)
    right = np.array([[0.0, 0.0, 5.0], [3.0, 0.1, 0.0], [0.0, 1.0, 1.0], [-1.0, 0.0, 0.0]], dtype=np.float32)
    assert nearest(left, right, 2).tolist() == [[1, 0], [2, 0]]
    assert nearest(left, right, 10).shape == (2, 4)  # k above m: every right row


def test_nearest_breaks_ties_by_right_position_and_ignores_zero_vectors() -> None:
    left = np.array([[1.0, 1.0]], dtype=np.float32)
    right = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [2.0, 2.0]], dtype=np.float32)
    assert nearest(left, right, 4).tolist() == [[3, 1, 2, 0]]


@pytest.mark.parametrize(
    ("left", "right", "k", "message"),
    [
        (np.ones((2, 3)), np.ones((2, 4)), 1, "left vectors have 3 dimensions, right vectors 4"),
        (np.ones((2, 3)), np.ones((2, 3)), 0, r"candidates= \(right rows per left row\) must be 'auto' or an int"),
        (np.ones(3), np.ones((2, 3)), 1, "must be a 2-d array"),
        (np.full((1, 2), np.nan), np.ones((2, 2)), 1, "NaN or infinite"),
    ],
)
def test_nearest_refuses_vectors_it_cannot_compare(left: Any, right: Any, k: int, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        nearest(left, right, k)


# --- the batch options, and through the real openai SDK ---------------------------------------------------------------


def test_a_cached_join_asks_nothing_the_second_time() -> None:
    agent = knowing(TICKETS, PRODUCTS, SMALL_TRUTH)
    first = TICKETS.aiforge.join(PRODUCTS, PROMPT, agent=agent, cache="memory")
    again = TICKETS.aiforge.join(PRODUCTS, PROMPT, agent=agent, cache="memory")
    assert len(agent.provider.calls) == 3 and again.equals(first)
    assert (first.attrs["aiforge"].chat_requests, again.attrs["aiforge"].chat_requests) == (3, 0)


def test_a_checkpointed_join_run_again_asks_only_the_question_that_failed(tmp_path: Path) -> None:
    answer, broken = truth_answer(TICKETS, PRODUCTS, SMALL_TRUTH), [True]

    def reply(messages: list[dict[str, Any]]) -> str:
        question = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        broken_now = broken[0] and "quibbix" in question.split("\n")[0]
        return "not json" if broken_now else json.dumps({"value": answer(question)})

    agent = ChatAgent(provider=ScriptedProvider(default=reply), memory="none", output_retries=0, CACHE=False)
    checkpoint = tmp_path / "join.checkpoint"
    with pytest.warns(UserWarning, match="1 question"):
        first = TICKETS.aiforge.join(PRODUCTS, PROMPT, agent=agent, checkpoint=checkpoint)
    assert list(first.index) == [("a", "k")] and len(agent.provider.calls) == 3
    broken[0] = False
    again = TICKETS.aiforge.join(PRODUCTS, PROMPT, agent=agent, checkpoint=checkpoint)
    assert list(again.index) == [("a", "k"), ("b", "t")] and len(agent.provider.calls) == 4
    assert again.attrs["aiforge"].failed == []


def test_output_is_the_joins_own() -> None:
    with pytest.raises(UsageError, match="join does not take output=; of the batch options it takes cache="):
        TICKETS.aiforge.join(PRODUCTS, PROMPT, agent=knowing(TICKETS, PRODUCTS, SMALL_TRUTH), output=bool)


def test_classify_join_through_the_openai_sdk(srv: LLMServer) -> None:
    left, right, truth = join_set(40, 12)
    answer = truth_answer(left, right, truth)
    srv.default = lambda request: Reply(output={"value": answer(request.last_user_text)})
    joined = left.aiforge.join(right, PROMPT, how="left", agent=openai_agent(srv), concurrency=4)
    assert srv.request_count == 40 and joined.attrs["aiforge"].chat_requests == 40
    assert srv.requests[0].output_schema["properties"]["value"]["items"]["enum"] == [str(n) for n in range(1, 13)]
    assert scores(joined.dropna(subset=["name"]), truth) == (1.0, 1.0)
    assert len(joined) == 40 and joined["name"].isna().sum() == 4  # the four tickets about no product
