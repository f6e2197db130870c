"""df.aiforge.topk: the true top k in order, in a bounded number of model calls, deterministic, failures surfaced."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import aiforge  # noqa: F401 - registers the accessor
from aiforge import ChatAgent
from aiforge.core.errors import BudgetExceededError, ComparisonFailedError
from aiforge.core.types import UsageError
from aiforge.providers.scripted import ScriptedProvider
from aiforge.semantic.topk import TopKRun, listwise_calls, pairwise_calls
from fakellm import LLMServer, Reply
from tests.support.ranking_judge import ranking_judge

PROMPT = "the most urgent ticket: {ticket}"


def tickets(n: int, seed: int = 1) -> pd.DataFrame:
    """n tickets whose hidden urgency is the number they end with, on a string index."""
    urgency = random.Random(seed).sample(range(100_000), n)
    return pd.DataFrame(
        {"ticket": [f"customer reports problem {u}" for u in urgency], "urgency": urgency},
        index=[f"T{i}" for i in range(n)],
    )


def urgency(text: str) -> int:
    return int(text.split()[-1])


def judge(**kwargs: Any) -> ScriptedProvider:
    return ScriptedProvider(default=ranking_judge(urgency), **kwargs)


def agent_of(provider: ScriptedProvider, **settings: Any) -> ChatAgent:
    return ChatAgent(provider=provider, memory="none", **settings)


def true_top(frame: pd.DataFrame, k: int) -> list[str]:
    return frame.sort_values("urgency", ascending=False).index[:k].tolist()


@pytest.mark.parametrize("n", [50, 120, 300])
@pytest.mark.parametrize("k", [5, 10])
def test_listwise_returns_the_true_top_k_in_order_in_its_stated_number_of_calls(n: int, k: int) -> None:
    frame, fake = tickets(n), judge()
    result = frame[["ticket"]].aiforge.topk(PROMPT, k, agent=agent_of(fake))
    assert result.index.tolist() == true_top(frame, k)
    assert result["rank"].tolist() == list(range(1, k + 1))
    assert result["ticket"].tolist() == frame.loc[result.index, "ticket"].tolist()
    assert len(fake.calls) == listwise_calls(n, k) < n * math.log2(k)
    assert all(len(call.last_user_message.split("\n\n[")) - 1 <= max(10, 2 * k) for call in fake.calls)


@pytest.mark.parametrize("n", [50, 300])
@pytest.mark.parametrize("k", [1, 5])
def test_pairwise_returns_the_true_top_k_in_order_within_its_bound(n: int, k: int) -> None:
    frame, fake = tickets(n), judge()
    result = frame.aiforge.topk(PROMPT, k, method="pairwise", agent=agent_of(fake))
    assert result.index.tolist() == true_top(frame, k)
    assert len(fake.calls) <= pairwise_calls(n, k) == n - 1 + (k - 1) * math.ceil(math.log2(n))
    asked = [call.last_user_message for call in fake.calls]
    assert len(set(asked)) == len(asked)  # no pair asked twice


@pytest.mark.parametrize("method", ["listwise", "pairwise"])
def test_two_runs_choose_the_same_rows_with_the_same_requests(method: str) -> None:
    frame = tickets(80)
    runs = [(fake := judge(), frame.aiforge.topk(PROMPT, 4, method=method, agent=agent_of(fake))) for _ in range(2)]
    (first_fake, first), (second_fake, second) = runs
    assert first.index.tolist() == second.index.tolist()
    assert [c.last_user_message for c in first_fake.calls] == [c.last_user_message for c in second_fake.calls]


def test_windows_do_not_list_the_rows_in_frame_order() -> None:
    fake = judge()
    tickets(60).aiforge.topk(PROMPT, 3, agent=agent_of(fake))
    first_rows = [urgency(c.last_user_message.split("[1]\n")[1].split("\n")[0]) for c in fake.calls[:6]]
    in_frame_order = tickets(60)["urgency"].iloc[:6].tolist()
    assert first_rows != in_frame_order


def test_pairwise_shows_each_row_first_about_half_the_time() -> None:
    frame, fake = tickets(64), judge()
    frame.aiforge.topk(PROMPT, 3, method="pairwise", agent=agent_of(fake))
    position = {f"customer reports problem {u}": i for i, u in enumerate(frame["urgency"])}
    lower_first = 0
    for call in fake.calls:
        a = call.last_user_message.split("A:\nticket: ")[1].split("\n")[0]
        b = call.last_user_message.split("B:\nticket: ")[1].split("\n")[0]
        lower_first += position[a] < position[b]
    assert 0.3 < lower_first / len(fake.calls) < 0.7


def test_temperature_zero_is_sent_unless_the_user_set_one() -> None:
    frame = tickets(12)
    fake = judge()
    frame.aiforge.topk(PROMPT, 2, provider=fake)
    assert {call.params.temperature for call in fake.calls} == {0}
    fake = judge()
    frame.aiforge.topk(PROMPT, 2, provider=fake, TEMPERATURE=0.4)
    assert {call.params.temperature for call in fake.calls} == {0.4}


@pytest.mark.parametrize("method", ["listwise", "pairwise"])
def test_k_above_the_number_of_rows_ranks_them_all(method: str) -> None:
    frame = tickets(7)
    result = frame.aiforge.topk(PROMPT, 20, method=method, agent=agent_of(judge()))
    assert result.index.tolist() == true_top(frame, 7) and result["rank"].tolist() == list(range(1, 8))


def test_on_a_series_the_frame_has_its_values_and_the_rank() -> None:
    series = tickets(30)["ticket"]
    result = series.aiforge.topk("the most urgent: {value}", 3, agent=agent_of(judge()))
    assert list(result.columns) == ["ticket", "rank"]
    assert [urgency(t) for t in result["ticket"]] == sorted(map(urgency, series), reverse=True)[:3]


def test_the_run_in_attrs_counts_the_requests_and_each_round() -> None:
    fake = judge()
    result = tickets(100).aiforge.topk(PROMPT, 5, agent=agent_of(fake))
    run = result.attrs["aiforge"]
    assert isinstance(run, TopKRun) and run.requests == run.comparisons == len(fake.calls)
    assert run.rounds == 5 and len(run.batches) >= run.rounds  # 100 -> 50 -> 25 -> 15 -> 10 -> the last window
    assert run.total_tokens > 0 and run.window == 10
    assert result.head(2).attrs["aiforge"] is run


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"k": 0}, "k is the number of rows"),
        ({"k": -2}, "k is the number of rows"),
        ({"k": 2.5}, "k is the number of rows"),
        ({"k": True}, "k is the number of rows"),
        ({"prompt": ""}, "prompt= is a row template"),
        ({"prompt": None}, "prompt= is a row template"),
        ({"prompt": "the most urgent: {tiket}"}, "did you mean 'ticket'"),
        ({"prompt": "the most urgent"}, "names no column"),
        ({"method": "bubble"}, "method= is one of 'listwise', 'pairwise'"),
        ({"window": 1}, "window= is the rows per listwise request"),
        ({"pack": 4}, "topk does not take pack=; of the batch options it takes cache=, checkpoint="),
    ],
)
def test_bad_arguments_are_refused_before_any_call(arguments: dict[str, Any], message: str) -> None:
    fake = judge()
    call = {"prompt": PROMPT, "k": 3, **arguments}
    with pytest.raises(UsageError, match=message):
        tickets(10).aiforge.topk(call.pop("prompt"), call.pop("k"), agent=agent_of(fake), **call)
    assert fake.calls == []


def test_settings_with_an_agent_and_a_rank_column_are_refused() -> None:
    with pytest.raises(UsageError, match="agent=None"):
        tickets(5).aiforge.topk(PROMPT, 2, agent=agent_of(judge()), provider="scripted")
    with pytest.raises(UsageError, match="has one: rename it"):
        tickets(5).assign(rank=1).aiforge.topk(PROMPT, 2, agent=agent_of(judge()))


def test_a_ranking_with_a_repeated_id_goes_back_to_the_model_with_what_was_wrong() -> None:
    fake = judge()
    fake.enqueue(json.dumps({"best": [1, 1]}))
    result = tickets(8).aiforge.topk(PROMPT, 2, agent=agent_of(fake))
    assert result.index.tolist() == true_top(tickets(8), 2)
    assert "each id at most once; repeated: 1" in fake.calls[1].messages[-1]["content"]


def test_a_comparison_failing_once_is_asked_again_in_a_batch_of_its_own() -> None:
    fake = judge()
    fake.enqueue(RuntimeError("connection reset"))
    frame = tickets(40)
    result = frame.aiforge.topk(PROMPT, 3, agent=agent_of(fake, output_retries=0))
    assert result.index.tolist() == true_top(frame, 3)
    run = result.attrs["aiforge"]
    assert len(run.batches[1]) == 1 and not run.batches[1].failed  # the re-ask, right after the first round


@pytest.mark.parametrize("method", ["listwise", "pairwise"])
def test_a_comparison_failing_twice_raises_naming_its_rows(method: str) -> None:
    answer = ranking_judge(urgency)

    def broken_on_t3(messages: list[Any]) -> str:
        return "not json" if "problem 2899" in messages[-1]["content"] else answer(messages)

    frame = tickets(30)
    frame.loc["T3", "ticket"] = "customer reports problem 2899"
    fake = ScriptedProvider(default=broken_on_t3)
    with pytest.raises(ComparisonFailedError, match=r"'T3'.*failed twice.*OutputValidationError") as caught:
        frame.aiforge.topk(PROMPT, 3, method=method, agent=agent_of(fake, output_retries=0))
    assert sum("problem 2899" in call.last_user_message for call in fake.calls) == 2
    assert caught.value.run.requests == len(fake.calls)


def test_a_checkpointed_run_again_asks_nothing(tmp_path: Path) -> None:
    frame, checkpoint = tickets(60), tmp_path / "topk.ckpt"
    first = frame.aiforge.topk(PROMPT, 3, agent=agent_of(judge()), checkpoint=checkpoint)
    rounds = len(first.attrs["aiforge"].batches)
    assert rounds > 1 and [p.name for p in tmp_path.glob("*.ckpt")] == ["topk.ckpt"]  # every round in the file
    fake = judge()
    again = frame.aiforge.topk(PROMPT, 3, agent=agent_of(fake), checkpoint=checkpoint)
    assert again.index.tolist() == first.index.tolist() and fake.calls == []


# --- through the real openai SDK -------------------------------------------------------------------------------------


@pytest.fixture
def srv() -> Iterator[LLMServer]:
    with LLMServer(strict=True) as server:
        answer = ranking_judge(urgency)
        server.default = lambda req: Reply(output=json.loads(answer(req.messages)))
        yield server


def openai_settings(server: LLMServer) -> dict[str, Any]:
    return {
        "provider": "openai",
        "OPENAI_API_KEY": "sk-test-key",
        "OPENAI_BASE_URL": server.openai_base_url,
        "MAX_RETRIES": 0,
    }


def test_listwise_through_the_openai_sdk_asks_for_a_ranking_of_the_window_ids(srv: LLMServer) -> None:
    frame = tickets(45)
    result = frame.aiforge.topk(PROMPT, 4, **openai_settings(srv))
    assert result.index.tolist() == true_top(frame, 4)
    assert len(srv.requests) == listwise_calls(45, 4)
    body = srv.requests[0].body
    assert body["temperature"] == 0
    best = srv.requests[0].output_schema["properties"]["best"]
    assert best["minItems"] == best["maxItems"] == 4 and best["items"]["enum"] == list(range(1, 10))


def test_pairwise_through_the_openai_sdk_asks_for_a_or_b(srv: LLMServer) -> None:
    frame = tickets(20)
    result = frame.aiforge.topk(PROMPT, 2, method="pairwise", **openai_settings(srv))
    assert result.index.tolist() == true_top(frame, 2)
    assert srv.requests[0].output_schema["properties"]["value"]["enum"] == ["A", "B"]
    assert len(srv.requests) <= pairwise_calls(20, 2)


def test_a_budget_spent_part_way_raises_saying_what_to_do(srv: LLMServer) -> None:
    frame = tickets(60)
    settings = openai_settings(srv) | {"MODEL": "gpt-4o-mini"}
    with pytest.raises(BudgetExceededError, match=r"max_cost=\$0.0002 reached after \d+ requests.*cache=True"):
        frame.aiforge.topk(PROMPT, 3, max_cost=0.0002, **settings)
    assert 0 < len(srv.requests) < listwise_calls(60, 3)
