"""dedup's grouping from embeddings: the threshold, groups that never chain, first-row ids, the confirmation band
asked through a real ``run_batch`` on the scripted provider (requests counted, answers respected), argument errors."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from aiforge import ChatAgent
from aiforge.core.types import UsageError
from aiforge.providers.scripted import ScriptedProvider
from aiforge.semantic.distinct import DistinctTexts
from aiforge.semantic.near_duplicates import (
    CONFIRM_PROMPT,
    Band,
    DedupRequest,
    check_unique_index,
    confirm_template,
    ids_from_vectors,
    similarity_band,
)


def turned(similarity: float, base: int, towards: int, dims: int = 8) -> np.ndarray:
    """A unit vector at cosine ``similarity`` from basis vector ``base``, turned towards basis vector ``towards``."""
    vector = np.zeros(dims)
    vector[base], vector[towards] = similarity, math.sqrt(1 - similarity**2)
    return vector


def basis(axis: int, dims: int = 8) -> np.ndarray:
    return np.eye(dims)[axis]


# t0~t1 at 0.95 (duplicates at 0.9); t2~t3 at 0.85 (borderline in [0.8, 0.9)); t4~t5 at 0.7 (never); no other pair.
TEXTS = ["t0", "t1", "t2", "t3", "t4", "t5"]
VECTORS = np.array([basis(0), turned(0.95, 0, 1), turned(0.85, 2, 3), basis(2), basis(4), turned(0.7, 4, 5)])


def dedup(
    texts: list[str | None],
    vectors: np.ndarray,
    band: Band,
    agent: ChatAgent | None = None,
    prompt: str = CONFIRM_PROMPT,
    index: list[Any] | None = None,
) -> tuple[list[Any], Any]:
    values = pd.Series(texts, index=index if index is not None else [f"r{i}" for i in range(len(texts))])
    ids, report = ids_from_vectors(values.index, DistinctTexts.of(values), vectors, DedupRequest(band, prompt), agent)
    assert ids.name == "duplicate_of" and ids.index.equals(values.index)
    return ids.tolist(), report


def judge(says: bool | str) -> ChatAgent:
    return ChatAgent(provider=ScriptedProvider(default=str(says).lower()), output_retries=0)


def test_pairs_at_the_threshold_share_the_label_of_their_first_row() -> None:
    ids, report = dedup(TEXTS, VECTORS, similarity_band(0.9, False))
    assert ids == ["r0", "r0", "r2", "r3", "r4", "r5"]
    assert (report.similar, report.borderline, report.asked, report.groups) == (1, 0, 0, 5)
    ids, _ = dedup(TEXTS, VECTORS, similarity_band(0.8, False))
    assert ids == ["r0", "r0", "r2", "r2", "r4", "r5"]


def chain(count: int, similarity: float = 0.95) -> np.ndarray:
    """``count`` 2-d unit vectors, each at ``similarity`` from the one before: neighbours close, ends apart."""
    step = math.acos(similarity)
    return np.array([[math.cos(k * step), math.sin(k * step)] for k in range(count)])


def test_groups_never_chain_through_a_middle_text() -> None:
    # a~b and b~c at 0.95; a and c only 0.805 apart: c is no duplicate of a, so it is not in a's group.
    ids, report = dedup(["a", "b", "c"], chain(3), similarity_band(0.9, False))
    assert ids == ["r0", "r0", "r2"] and (report.similar, report.groups) == (1, 2)


def test_a_long_chain_of_close_texts_is_cut_where_a_text_leaves_its_first_texts_reach() -> None:
    # Ten texts, each 0.95 from the one before: union-find made one group of them; every row here is within the
    # threshold of the row it names.
    vectors = chain(10)
    ids, report = dedup([f"t{n}" for n in range(10)], vectors, similarity_band(0.9, False))
    assert ids == ["r0", "r0", "r2", "r2", "r4", "r4", "r6", "r6", "r8", "r8"] and report.groups == 5
    named = [int(label[1:]) for label in ids]
    assert all(vectors[row] @ vectors[first] >= 0.9 for row, first in enumerate(named))


def test_a_middle_text_first_names_a_group_of_both_its_neighbours() -> None:
    # b comes first: a and c are each its duplicate (0.95), so all three are one group named by b.
    vectors = chain(3)[[1, 0, 2]]
    ids, _ = dedup(["b", "a", "c"], vectors, similarity_band(0.9, False))
    assert ids == ["r0", "r0", "r0"]


def test_a_text_joins_the_group_whose_first_text_it_is_most_similar_to() -> None:
    # a and b are 0.81 apart (two groups); c is 0.95 from a and 0.99 from b: b's group, not the earlier one.
    angle_b = math.acos(0.95) + math.acos(0.99)
    vectors = np.array([[1.0, 0.0], [math.cos(angle_b), math.sin(angle_b)], chain(2)[1]])
    ids, report = dedup(["a", "b", "c"], vectors, similarity_band(0.9, False))
    assert ids == ["r0", "r1", "r1"] and report.similar == 1


def test_exact_duplicates_share_an_id_at_any_threshold_and_are_embedded_once() -> None:
    values = ["same", "other", "same", "same"]
    distinct = DistinctTexts.of(pd.Series(values))
    assert distinct.texts == ["same", "other"] and distinct.of_row.tolist() == [0, 1, 0, 0]
    ids, report = dedup(values, np.array([basis(0), basis(1)]), similarity_band(1.0, False), index=[10, 20, 30, 40])
    assert ids == [10, 20, 10, 10] and report.distinct == 2 and report.groups == 2


def test_a_missing_value_is_a_group_of_its_own() -> None:
    ids, _ = dedup(["a", None, "a", float("nan")], np.array([basis(0)]), similarity_band(0.9, False))
    assert ids == ["r0", "r1", "r0", "r3"]


def test_confirm_asks_the_model_only_about_pairs_in_the_band_and_joins_those_it_accepts() -> None:
    agent = judge(True)
    ids, report = dedup(TEXTS, VECTORS, similarity_band(0.9, True), agent)
    calls = agent.provider.calls
    assert len(calls) == 1  # t2/t3 only: t0/t1 is above the band, t4/t5 below it
    asked = calls[0].last_user_message
    assert "First text:\nt2" in asked and "Second text:\nt3" in asked and "duplicates" in asked
    assert ids == ["r0", "r0", "r2", "r2", "r4", "r5"]
    assert (report.borderline, report.asked, report.confirmed) == (1, 1, 1)
    assert report.pairs == [(2, 3)] and report.confirmation is not None and len(report.confirmation) == 1


def test_confirm_keeps_apart_a_pair_the_model_rejects_or_fails_on() -> None:
    for agent in (judge(False), judge("not json")):
        ids, report = dedup(TEXTS, VECTORS, similarity_band(0.9, True), agent)
        assert ids == ["r0", "r0", "r2", "r3", "r4", "r5"] and report.confirmed == 0
    assert len(report.confirmation.failed) == 1  # the last one: "not json" is no bool


def test_confirm_asks_a_text_left_alone_against_a_groups_first_text_not_a_member() -> None:
    # a~b, b~c at 0.95; a/c at 0.805 is in the band: c is asked against a, never grouped through b.
    for says, expected in ((False, ["r0", "r0", "r2"]), (True, ["r0", "r0", "r0"])):
        agent = judge(says)
        ids, report = dedup(["a", "b", "c"], chain(3), Band(0.8, 0.9), agent)
        assert ids == expected and (report.borderline, report.asked) == (1, 1) and report.pairs == [(0, 2)]
        [asked] = [call.last_user_message for call in agent.provider.calls]
        assert "First text:\na\n" in asked and asked.endswith("Second text:\nc")


def test_confirmed_pairs_never_chain_either() -> None:
    # a/b and b/c at 0.85 (in the band), a/c at 0.445 (below it): the model says yes to both. b joins a; c's
    # confirmed pair names b, which is now a member, so c stays alone.
    ids, report = dedup(["a", "b", "c"], chain(3, 0.85), Band(0.8, 0.9), judge(True))
    assert ids == ["r0", "r0", "r2"]
    assert (report.borderline, report.asked, report.confirmed) == (2, 2, 2) and report.pairs == [(0, 1), (1, 2)]


def test_a_group_with_members_is_not_asked_to_join_another() -> None:
    # t0~t1 and t2~t3 at 0.95 (two groups); t0/t2 at 0.85 in the band: merging would put t3 with t0 unasked.
    vectors = np.array([basis(0), turned(0.95, 0, 1), turned(0.85, 0, 2), turned(0.85, 0, 2) + 0.3 * basis(3)])
    agent = judge(True)
    ids, report = dedup(["t0", "t1", "t2", "t3"], vectors, Band(0.8, 0.9), agent)
    assert ids == ["r0", "r0", "r2", "r2"] and (report.borderline, report.asked) == (1, 0)
    assert not agent.provider.calls


def test_a_band_widens_what_is_asked_and_a_custom_prompt_is_used() -> None:
    agent = judge(True)
    ids, report = dedup(TEXTS, VECTORS, similarity_band(None, (0.6, 0.9)), agent, "Same? {left} | {right}")
    assert sorted(call.last_user_message for call in agent.provider.calls) == ["Same? t2 | t3", "Same? t4 | t5"]
    assert ids == ["r0", "r0", "r2", "r2", "r4", "r4"] and report.asked == 2


def test_band_defaults_and_confirm_true() -> None:
    assert similarity_band(None, False) == Band(0.9, 0.9)
    assert similarity_band(0.95, True) == Band(0.85, 0.95)
    assert similarity_band(0.9, (0.7, 0.9)) == Band(0.7, 0.9)


@pytest.mark.parametrize(
    ("threshold", "confirm", "message"),
    [
        (1.5, False, "threshold=1.5 is outside \\(0, 1\\]"),
        (0, False, "threshold=0 is outside"),
        ("0.9", False, "threshold is a cosine similarity in \\(0, 1\\], got '0.9'"),
        (None, (0.9, 0.8), "must go from low to high"),
        (None, (0.8,), "confirm= is True, False or a band"),
        (None, "yes", "confirm= is True, False or a band"),
        (0.95, (0.8, 0.9), "threshold=0.95 and confirm=\\(0.8, 0.9\\) disagree"),
    ],
)
def test_bad_thresholds_and_bands_are_usage_errors_naming_them(threshold: Any, confirm: Any, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        similarity_band(threshold, confirm)


def test_a_pair_prompt_must_name_left_and_right_only() -> None:
    assert confirm_template(None) == CONFIRM_PROMPT
    assert confirm_template("{left} vs {right}?") == "{left} vs {right}?"
    with pytest.raises(UsageError, match="must name both \\{left\\} and \\{right\\}"):
        confirm_template("Is {left} a duplicate?")
    with pytest.raises(UsageError, match="it names \\{ticket\\}"):
        confirm_template("{left} {right} {ticket}")


def test_a_repeated_index_label_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="index repeats 'a'.*reset_index"):
        check_unique_index(pd.Index(["a", "b", "a"]))


def test_a_band_holding_too_many_pairs_is_a_usage_error_before_any_request() -> None:
    # 640 texts all at cosine 0.85 from each other: 204 480 pairs in the band [0.8, 0.9), over MAX_BORDERLINE.
    count = 640
    vectors = math.sqrt(0.85) * np.eye(count + 1)[0] + math.sqrt(0.15) * np.eye(count + 1)[1:]
    agent = judge(True)
    with pytest.raises(UsageError, match="more than 200000 pairs .* confirmation band \\[0.8, 0.9\\)"):
        dedup([f"t{n}" for n in range(count)], vectors, Band(0.8, 0.9), agent)
    assert not agent.provider.calls
    ids, report = dedup([f"t{n}" for n in range(count)], vectors, Band(0.8, 0.8))  # no band: one group
    assert set(ids) == {"r0"} and report.similar == count - 1
