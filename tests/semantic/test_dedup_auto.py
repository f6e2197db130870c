"""``dedup(threshold="auto")``: the scripted provider plants the vectors and judges pairs from a planted truth, so the
right threshold is known; the sample, the estimates, the band, the requests and the cache are checked against it."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from aiforge import ChatAgent
from aiforge.core.failed_rows import FailedRowsWarning
from aiforge.core.types import UsageError
from aiforge.providers.scripted import ScriptedProvider
from aiforge.semantic.dedup_auto import FLOOR, bins_of, candidate_pairs, stratified_sample
from aiforge.semantic.near_duplicates import Band, dedup_request

# 60 planted duplicate pairs at 0.60-0.98 and 40 look-alike pairs (not duplicates) at 0.42-0.72, each pair in its own
# two dimensions: every other pair of texts is at 0, below the floor, so the candidates are exactly these 100 pairs.
DUPLICATES = np.linspace(0.60, 0.98, 60)
LOOKALIKES = np.linspace(0.42, 0.72, 40)
SIMILARITY = {f"dup{k}": s for k, s in enumerate(DUPLICATES)} | {f"alike{k}": s for k, s in enumerate(LOOKALIKES)}
NAMES = list(SIMILARITY)
DIMS = 2 * len(NAMES)
TEXTS = [f"{name} {side}" for name in NAMES for side in ("first", "second")]


def planted_vector(text: str) -> list[float]:
    name, side = text.split()
    axis = 2 * NAMES.index(name)
    vector = [0.0] * DIMS
    similarity = SIMILARITY[name]
    if side == "first":
        vector[axis] = 1.0
    else:
        vector[axis], vector[axis + 1] = similarity, math.sqrt(1 - similarity**2)
    return vector


def planted_truth(messages: list[Any]) -> str:
    """A judge that is always right: the two texts of the pair are duplicates when they are one planted ``dup``."""
    prompt = messages[-1]["content"]
    names = re.findall(r"\b((?:dup|alike)\d+) (?:first|second)\b", prompt)
    return "true" if len(names) == 2 and names[0] == names[1] and names[0].startswith("dup") else "false"


def planted_agent(**settings: Any) -> ChatAgent:
    provider = ScriptedProvider(default=planted_truth, embeddings=planted_vector, embedding_dim=DIMS)
    return ChatAgent(provider=provider, output_retries=0, PROGRESS_BAR=False, **settings)


def found_pairs(ids: pd.Series) -> tuple[int, int]:
    """Planted duplicate pairs in one group, and look-alike pairs in one group."""
    same = {name: ids.iloc[2 * k] == ids.iloc[2 * k + 1] for k, name in enumerate(NAMES)}
    return sum(same[n] for n in NAMES if n.startswith("dup")), sum(same[n] for n in NAMES if n.startswith("alike"))


def test_candidates_are_the_pairs_above_the_floor_and_the_sample_spreads_over_the_bins() -> None:
    vectors = np.array([planted_vector(text) for text in TEXTS], dtype=np.float32)
    pairs, similarity = candidate_pairs(vectors)
    assert len(pairs) == 100 and (pairs[:, 1] == pairs[:, 0] + 1).all() and (similarity >= FLOOR).all()
    bins = bins_of(similarity)
    drawn = stratified_sample(bins, 24)
    assert len(drawn) == 24 and len(set(drawn.tolist())) == 24
    held, taken = np.bincount(bins, minlength=12), np.bincount(bins[drawn], minlength=12)
    assert ((taken >= 1) == (held >= 1)).all() and taken.max() - taken[held > 0].min() <= 1  # as even as they hold
    assert stratified_sample(bins, 24).tolist() == drawn.tolist()  # seeded: the same draw again


def test_auto_reaches_the_target_recall_on_the_planted_pairs_and_reports_it_exactly() -> None:
    frame = pd.DataFrame({"text": TEXTS})
    ids = frame.aiforge.dedup("text", threshold="auto", agent=planted_agent())
    report = ids.attrs["aiforge"]
    auto = report.auto
    # All 100 candidates sampled (weight 1 each): the 57th most similar duplicate pair sets the threshold for 95 %.
    assert (auto.candidates, auto.sample, auto.labelled, auto.positives) == (100, 100, 100, 60)
    assert report.how == "auto" and report.threshold == pytest.approx(DUPLICATES[3], abs=1e-5)
    assert auto.threshold <= DUPLICATES[3] and auto.bound == pytest.approx(LOOKALIKES[-1], abs=2e-6)
    assert auto.bound > LOOKALIKES[-1]  # the most similar look-alike is below it: asked, never accepted unasked
    assert auto.recall == pytest.approx(57 / 60) and auto.precision == 1.0
    assert auto.recall_interval[0] <= auto.recall <= auto.recall_interval[1] <= 1.0
    assert auto.precision_interval == (1.0, 1.0)
    found, wrong = found_pairs(ids)
    assert found / 60 >= 0.95 and found == 57 and wrong == 0
    # The band's pairs were all in the sample: answered from it, not asked again.
    in_band = int(((DUPLICATES >= auto.threshold) & (DUPLICATES < auto.bound)).sum())
    in_band += int(((LOOKALIKES >= auto.threshold) & (LOOKALIKES < auto.bound)).sum())
    assert auto.reused == in_band > 0 and report.asked == 0 and report.confirmation is None
    assert (report.sampling_requests, report.confirmation_requests) == (100, 0)
    assert report.requests == report.embedding.requests + 100 and report.failed == []


def test_a_smaller_sample_estimates_within_its_interval_and_confirms_the_band() -> None:
    ids = pd.Series(TEXTS).aiforge.dedup("auto", sample=40, target_recall=0.9, agent=planted_agent())
    report = ids.attrs["aiforge"]
    auto = report.auto
    assert (auto.sample, auto.labelled) == (40, 40) and 0 < auto.positives < 40
    found, wrong = found_pairs(ids)
    assert wrong == 0  # look-alikes at or above the threshold are asked, and the judge says no
    assert auto.recall_interval[0] <= found / 60 <= auto.recall_interval[1]
    assert report.confirmation is not None and report.asked == len(report.pairs) > 0
    assert report.sampling_requests == 40 and report.confirmation_requests == report.asked
    assert report.requests == report.embedding.requests + 40 + report.asked


def test_confirm_without_a_threshold_is_auto_and_a_cache_makes_the_second_run_free(tmp_path: Path) -> None:
    cache = str(tmp_path / "answers.sqlite")
    values = pd.Series(TEXTS)
    first = values.aiforge.dedup(confirm=True, sample=40, agent=planted_agent(), cache=cache)
    second = values.aiforge.dedup(confirm=True, sample=40, agent=planted_agent(), cache=cache)
    assert first.attrs["aiforge"].how == "auto" and first.attrs["aiforge"].sampling_requests == 40
    assert second.tolist() == first.tolist()
    assert (second.attrs["aiforge"].sampling_requests, second.attrs["aiforge"].confirmation_requests) == (0, 0)
    assert second.attrs["aiforge"].requests == 0  # the vectors are cached too


def test_without_confirm_the_threshold_comes_from_the_table_and_nothing_is_asked() -> None:
    ids = pd.Series(TEXTS).aiforge.dedup(agent=planted_agent())
    report = ids.attrs["aiforge"]
    assert (report.how, report.threshold, report.auto, report.confirmation) == ("table", 0.9, None, None)
    assert found_pairs(ids) == (int((DUPLICATES >= 0.9).sum()), 0)
    user = pd.Series(TEXTS).aiforge.dedup(0.8, agent=planted_agent()).attrs["aiforge"]
    assert (user.how, user.threshold) == ("user", 0.8)


def test_no_duplicate_in_the_sample_merges_nothing_and_estimates_nothing() -> None:
    agent = ChatAgent(
        provider=ScriptedProvider(default="false", embeddings=planted_vector, embedding_dim=DIMS), PROGRESS_BAR=False
    )
    ids = pd.Series(TEXTS).aiforge.dedup("auto", sample=30, agent=agent)
    report = ids.attrs["aiforge"]
    assert report.auto.positives == 0 and report.auto.recall is None and report.threshold == 1.0
    assert ids.nunique() == len(TEXTS)


def test_failed_sample_rows_are_counted_and_left_out_of_the_estimate() -> None:
    def flaky(messages: list[Any]) -> str:
        return "maybe" if "dup1 " in messages[-1]["content"] else planted_truth(messages)

    provider = ScriptedProvider(default=flaky, embeddings=planted_vector, embedding_dim=DIMS)
    agent = ChatAgent(provider=provider, output_retries=0, PROGRESS_BAR=False)
    with pytest.warns(FailedRowsWarning, match=r"^1 of 100 pairs asked failed"):
        ids = pd.Series(TEXTS).aiforge.dedup("auto", agent=agent)
    auto = ids.attrs["aiforge"].auto
    assert (auto.sample, auto.labelled, auto.positives) == (100, 99, 59)
    assert len(ids.attrs["aiforge"].failed) == 1


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"threshold": "auto", "confirm": False}, r"threshold='auto' .* drop confirm=False"),
        ({"threshold": "auto", "confirm": (0.7, 0.8)}, r"drop confirm=\(0.7, 0.8\)"),
        ({"threshold": "auto", "target_recall": 0.0}, r"target_recall=0.0 is outside \(0, 1\]"),
        ({"threshold": "auto", "target_recall": 1.5}, r"target_recall=1.5 is outside"),
        ({"threshold": "auto", "sample": 0}, r"sample=0"),
        ({"threshold": "high"}, r"'auto', got 'high'"),
    ],
)
def test_bad_auto_arguments_are_one_line_usage_errors(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message) as error:
        pd.Series(TEXTS).aiforge.dedup(agent=planted_agent(), **arguments)
    assert "\n" not in str(error.value)


def test_which_threshold_each_call_takes() -> None:
    def how(threshold: Any, confirm: Any) -> str:
        return dedup_request(threshold, confirm, None, 10, {}).how

    defaults = (how(None, None), how(None, False), how(None, True), how("auto", None), how("auto", True))
    assert defaults == ("table", "table", "auto", "auto", "auto")
    assert (how(0.8, None), how(0.8, True), how(None, (0.7, 0.8))) == ("user", "user", "user")
    assert dedup_request(None, True, None, 10, {}, target_recall=0.8, sample=50).auto.target_recall == 0.8


def test_a_thin_sample_asks_every_pair_above_the_threshold_and_says_how_unsure_it_is() -> None:
    ids = pd.Series(TEXTS).aiforge.dedup("auto", sample=12, agent=planted_agent())
    report = ids.attrs["aiforge"]
    auto = report.auto
    assert auto.positives < 20 and auto.bound == 1.0  # too few answers to accept any range unasked
    assert auto.weighted_recall is not None and auto.weighted_recall >= 0.95
    found, wrong = found_pairs(ids)
    assert wrong == 0 and auto.recall_interval[0] <= found / 60 <= auto.recall_interval[1]
    assert auto.recall_interval[1] - auto.recall_interval[0] > 0.2  # 12 answers for 100 pairs: a wide interval
    assert report.confirmation_requests == report.asked > 0


def test_a_checkpoint_keeps_the_sample_beside_the_confirmation_and_a_second_run_asks_nothing(tmp_path: Path) -> None:
    asked: list[str] = []

    def counted(messages: list[Any]) -> str:
        asked.append(messages[-1]["content"])
        return planted_truth(messages)

    provider = ScriptedProvider(default=counted, embeddings=planted_vector, embedding_dim=DIMS)
    checkpoint = tmp_path / "pairs.sqlite"
    values = pd.Series(TEXTS)
    first = values.aiforge.dedup("auto", sample=12, agent=ChatAgent(provider=provider), checkpoint=str(checkpoint))
    assert (tmp_path / "pairs.sample.sqlite").exists() and checkpoint.exists()
    report = first.attrs["aiforge"]
    assert len(asked) == 12 + report.confirmation_requests and report.confirmation_requests > 0
    again = values.aiforge.dedup("auto", sample=12, agent=ChatAgent(provider=provider), checkpoint=str(checkpoint))
    assert again.tolist() == first.tolist() and len(asked) == 12 + report.confirmation_requests  # nothing asked


def test_a_confirmation_band_reports_the_threshold_it_lies_below() -> None:
    report = pd.Series(TEXTS).aiforge.dedup(0.9, confirm=True, agent=planted_agent()).attrs["aiforge"]
    assert (report.how, report.threshold, report.band) == ("user", 0.9, Band(0.8, 0.9))
    assert report.auto is None and report.sampling_requests == 0 and report.confirmation_requests == report.asked > 0


class BilledProvider(ScriptedProvider):
    """A scripted model priced like a real one: to ``dedup`` a chat model that can judge pairs."""

    free = False


def test_with_a_billed_chat_model_auto_is_the_default_and_confirm_false_keeps_the_table() -> None:
    frame = pd.DataFrame({"text": TEXTS})

    def billed() -> ChatAgent:
        provider = BilledProvider(default=planted_truth, embeddings=planted_vector, embedding_dim=DIMS)
        prices = {name: {"input": 1.0, "output": 2.0} for name in ("scripted-embedding", "scripted-model")}
        return ChatAgent(provider=provider, output_retries=0, PROGRESS_BAR=False, PRICES=prices)

    agent = billed()
    report = frame.aiforge.dedup("text", agent=agent).attrs["aiforge"]
    assert report.how == "auto" and report.sampling_requests == 100 == len(agent.provider.calls)
    quiet = billed()
    table = frame.aiforge.dedup("text", confirm=False, agent=quiet).attrs["aiforge"]
    assert table.how == "table" and table.requests == 1 and not quiet.provider.calls  # the embeddings request only
    free = frame.aiforge.dedup("text", agent=planted_agent()).attrs["aiforge"]  # a free model: the table, unasked
    assert free.how == "table" and free.sampling_requests == 0


def test_with_no_false_pair_above_the_threshold_only_duplicates_at_or_above_it_make_the_range_sure() -> None:
    """Accepting pairs unasked needs SURE (20) sampled duplicates where they would be accepted; duplicates below the
    threshold (here 18 of them) used to count too when no "no" lay above it."""
    from aiforge.semantic.dedup_auto import SURE, sample_band

    similarities = [*np.linspace(0.90, 0.98, 12), *np.linspace(0.45, 0.60, 18)]
    vectors = np.zeros((2 * len(similarities), 2 * len(similarities)), dtype=np.float32)
    for k, similarity in enumerate(similarities):
        vectors[2 * k, 2 * k] = 1.0
        vectors[2 * k + 1, 2 * k], vectors[2 * k + 1, 2 * k + 1] = similarity, math.sqrt(1 - similarity**2)

    def every_pair_a_duplicate(pairs: list[tuple[int, int]]) -> tuple[list[bool | None], None]:
        return [True for _ in pairs], None

    estimate = sample_band(vectors, 0.3, 100, every_pair_a_duplicate)
    above = sum(s >= estimate.threshold for s in similarities)
    assert estimate.positives == 30 and above < SURE and estimate.threshold >= 0.9
    assert estimate.bound == 1.0  # every pair from the threshold up is asked, none accepted unasked
