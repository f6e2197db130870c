"""df.aiforge.dedup / cluster on the scripted provider's embeddings (texts sharing words are near): planted
rewordings found, borderline pairs asked to the model and nothing else, ids on the index, costs in attrs."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import aiforge  # noqa: F401 - registers the accessor
from aiforge import ChatAgent
from aiforge.core.errors import FailedRowsWarning
from aiforge.core.types import UsageError
from aiforge.providers.scripted import ScriptedProvider
from aiforge.semantic.near_duplicates import DedupReport

# Ten distinct support tickets, then rewordings of four of them: (text, the ticket it is).
TICKETS = [
    ("I was charged twice for my March invoice", "charged"),
    ("Please cancel my subscription at the end of the month", "cancel"),
    ("The mobile app crashes when I open the settings page", "crash"),
    ("How do I export my data to CSV?", "export"),
    ("My password reset email never arrived", "reset"),
    ("Can I change the billing address on my account?", "address"),
    ("The dashboard shows the wrong time zone", "zone"),
    ("I would like a refund for the annual plan", "refund"),
    ("Two-factor authentication codes are rejected", "2fa"),
    ("Where can I download my receipts?", "receipts"),
    ("I was charged twice for my March invoice!", "charged"),  # cosine 1.0 on words
    ("i was charged two times for my march invoice", "charged"),  # 0.83
    ("The mobile app crashes when I open the settings screen", "crash"),  # 0.91
    ("Password reset email never arrived", "reset"),  # 0.93
    ("My password reset e-mail never arrived", "reset"),  # 0.82
    ("I'd like a refund for the annual plan please", "refund"),  # 0.84
]
FRAME = pd.DataFrame(
    {"ticket": [text for text, _ in TICKETS], "truth": [truth for _, truth in TICKETS]},
    index=pd.Index([f"T{n:02d}" for n in range(len(TICKETS))], name="id"),
)
TRUTH = FRAME.groupby("truth", sort=False)["truth"].transform(lambda rows: rows.index[0])
"""The planted answer: each row's first row of its ticket."""


def judge(answer: Any = None) -> ChatAgent:
    """A scripted agent whose embeddings are the scripted ones and who says whether two tickets are the same one."""

    def same_ticket(messages: list[dict[str, Any]]) -> str:
        asked = messages[-1]["content"]
        left, right = (part.split("\n\n")[0] for part in asked.split("text:\n")[1:3])
        truth = dict(TICKETS)
        return "true" if truth[left] == truth[right] else "false"

    return ChatAgent(provider=ScriptedProvider(default=answer or same_ticket), output_retries=0)


def test_planted_rewordings_are_found_at_a_threshold_below_their_similarity() -> None:
    ids = FRAME.aiforge.dedup("ticket", threshold=0.8, agent=judge())
    assert ids.name == "duplicate_of" and ids.index.equals(FRAME.index)
    assert ids.equals(TRUTH.rename("duplicate_of"))
    report = ids.attrs["aiforge"]
    assert isinstance(report, DedupReport) and report.groups == 10 and report.asked == 0
    assert report.embedding.embedded == len(FRAME) and report.total_tokens > 0 and report.total_cost == 0.0
    assert FRAME[ids == ids.index]["truth"].is_unique  # the first row of each group: one per ticket


def test_a_higher_threshold_misses_the_looser_rewordings_without_confirm() -> None:
    ids = FRAME.aiforge.dedup("ticket", agent=judge())  # 0.9
    found = ids[ids != ids.index]
    assert found.to_dict() == {"T10": "T00", "T12": "T02", "T13": "T04"}


def test_confirm_asks_only_the_borderline_pairs_and_finds_the_rest() -> None:
    agent = judge()
    ids = FRAME.aiforge.dedup("ticket", threshold=0.9, confirm=True, agent=agent)
    assert ids.equals(TRUTH.rename("duplicate_of"))
    report = ids.attrs["aiforge"]
    # T11 is asked against T00 (not against T10: a member, whose group T00 names), T14 against T04, T15 against
    # T07; the 0.74 pair T13/T14 is below the band, the other pairs far below it.
    assert len(agent.provider.calls) == report.asked == 3 == report.confirmed
    assert sorted(report.pairs) == [(0, 11), (4, 14), (7, 15)]
    assert report.confirmation is not None and len(report.confirmation) == 3


def test_confirm_respects_a_model_that_says_no() -> None:
    agent = judge("false")
    ids = FRAME.aiforge.dedup("ticket", threshold=0.9, confirm=True, agent=agent)
    assert ids.equals(FRAME.aiforge.dedup("ticket", threshold=0.9, agent=judge()))
    assert len(agent.provider.calls) == 3 and ids.attrs["aiforge"].confirmed == 0


def test_groups_do_not_chain_two_tickets_through_a_wording_between_them() -> None:
    # On the scripted word vectors at 0.8: settings/settings-on-phone 0.85, settings-on-phone/camera 0.86, camera/
    # camera-app 0.94, but settings/camera 0.72 and settings/camera-app 0.75. Union-find made one group of all four.
    texts = pd.Series([
        "the app crashes when I open settings",
        "the app crashes when I open settings on my phone",
        "the app crashes on my phone when I open the camera",
        "my phone crashes when I open the camera app",
    ], index=["a", "b", "c", "d"])
    ids = texts.aiforge.dedup(0.8, agent=judge())
    assert ids.to_dict() == {"a": "a", "b": "a", "c": "c", "d": "c"}
    assert (ids.attrs["aiforge"].similar, ids.attrs["aiforge"].groups) == (2, 2)


def test_a_series_dedups_its_values_and_exact_duplicates_share_the_id() -> None:
    values = pd.Series(["refund please", "new card", "refund please", None], index=[7, 3, 5, 9])
    ids = values.aiforge.dedup(1.0, agent=judge())
    assert ids.tolist() == [7, 3, 7, 9]
    assert ids.attrs["aiforge"].embedding.embedded == 2  # each distinct text once; the missing one not at all


def test_settings_build_the_agent_and_batch_options_reach_the_confirmation() -> None:
    with pytest.warns(FailedRowsWarning, match=r"^3 of 3 pairs asked failed .*confirmation\.failed"):
        ids = FRAME.aiforge.dedup("ticket", 0.9, confirm=True, provider="scripted", cache="memory")
    report = ids.attrs["aiforge"]
    # The scripted default echoes ("You said: ..."), which is no bool: every asked pair fails and is kept apart.
    assert report.asked == 3 and len(report.confirmation.failed) == 3 and report.confirmed == 0
    with pytest.raises(UsageError, match="configure the agent built when agent=None"):
        FRAME.aiforge.dedup("ticket", agent=judge(), provider="scripted")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: FRAME.aiforge.dedup("tickets", agent=judge()), "tickets"),
        (lambda: FRAME.aiforge.dedup(FRAME["ticket"], agent=judge()), "dedup takes the name of the text column"),
        (lambda: FRAME.aiforge.dedup("ticket", threshold=90, agent=judge()), "threshold=90 is outside"),
        (lambda: FRAME.aiforge.dedup("ticket", confirm=True, prompt="{left}?", agent=judge()), "\\{right\\}"),
        (lambda: pd.concat([FRAME, FRAME]).aiforge.dedup("ticket", agent=judge()), "index repeats 'T00'"),
    ],
)
def test_bad_arguments_are_usage_errors_before_anything_is_embedded(call: Any, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        call()


def test_cluster_puts_each_planted_ticket_with_its_rewordings_and_is_deterministic() -> None:
    agent = judge()
    topics = FRAME.aiforge.cluster("ticket", n_clusters=10, agent=agent)
    assert topics.name == "cluster" and str(topics.dtype) == "Int64" and topics.index.equals(FRAME.index)
    assert topics.iloc[0] == 0 and topics.groupby(FRAME["truth"]).nunique().max() == 1
    again = FRAME["ticket"].aiforge.cluster(10, agent=judge())
    assert again.equals(topics)
    report = topics.attrs["aiforge"]
    assert report.distinct == 16 and sum(report.sizes) == 16 and len(report.sizes) == 10


def test_cluster_gives_missing_and_blank_texts_no_cluster_and_checks_n_clusters() -> None:
    values = pd.Series(["refund please", None, "  ", "new card", "refund please"])
    assert values.aiforge.cluster(2, agent=judge()).tolist() == [0, pd.NA, pd.NA, 1, 0]
    with pytest.raises(UsageError, match="n_clusters=3 but the column has 2 distinct texts"):
        values.aiforge.cluster(3, agent=judge())
    with pytest.raises(UsageError, match="n_clusters is a whole number"):
        values.aiforge.cluster(0, agent=judge())
