"""Budgets and estimates through the real openai SDK: max_cost stops a batch within the bound and reports the
rest as skipped; a dry-run estimate counts and prices the prompts without a request."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from aiforge import ChatAgent
from aiforge.batch.estimate import BatchEstimate
from aiforge.core.errors import BudgetExceededError
from aiforge.core.pricing import lookup_price
from aiforge.core.tokens import CHARS_PER_TOKEN, DEFAULT_OUTPUT_TOKENS
from aiforge.core.types import ConfigError, Usage
from aiforge.providers.scripted import ScriptedProvider
from fakellm import LLMServer, Reply
from tests.support.bars import record_bars

ITEMS = [f"review number {i}: the product was fine" for i in range(20)]
PRICE = lookup_price("gpt-4o-mini")
ITEM_COST = PRICE.cost_of(Usage(1000, 1000))  # what the server bills each reply below


@pytest.fixture
def srv() -> Iterator[LLMServer]:
    with LLMServer(
        latency=0.02, default=lambda req: Reply(text="ok", usage={"input_tokens": 1000, "output_tokens": 1000})
    ) as server:
        yield server


def agent(server: LLMServer, **settings: object) -> ChatAgent:
    return ChatAgent(
        provider="openai",
        OPENAI_API_KEY="sk-test",
        OPENAI_BASE_URL=server.openai_base_url,
        MAX_RETRIES=0,
        **settings,
    )


@pytest.mark.parametrize("concurrency", [1, 4])
def test_max_cost_stops_the_batch_within_the_items_in_flight(srv: LLMServer, concurrency: int) -> None:
    budget = 5.5 * ITEM_COST
    batch = agent(srv).run_batch(ITEMS, concurrency=concurrency, max_cost=budget)
    assert batch.total_cost <= budget + concurrency * ITEM_COST
    assert len(batch.results) >= 4 and srv.request_count == len(batch.results)
    assert len(batch.skipped) == len(ITEMS) - len(batch.results) > 0
    assert all(isinstance(f.error, BudgetExceededError) for f in batch.failed)
    assert "max_cost=$" in str(batch.skipped[0].error) and "skipped (budget)" in batch._repr_markdown_()
    errors = batch.to_dataframe()["error"].dropna()
    assert len(errors) == len(batch.skipped) and errors.str.startswith("BudgetExceededError: skipped").all()


def test_a_rerun_with_a_larger_budget_runs_only_the_skipped_items(srv: LLMServer, tmp_path: Path) -> None:
    path = tmp_path / "b.sqlite"
    first = agent(srv).run_batch(ITEMS, concurrency=2, max_cost=3 * ITEM_COST, checkpoint=path)
    rest = agent(srv).run_batch(ITEMS, concurrency=2, max_cost=100 * ITEM_COST, checkpoint=path)
    assert not rest.failed and len(rest.results) == len(ITEMS)
    assert srv.request_count == len(ITEMS) and len(first.results) < len(ITEMS)


def test_a_budget_of_zero_starts_nothing(srv: LLMServer) -> None:
    batch = agent(srv).run_batch(ITEMS[:3], max_cost=0)
    assert len(batch.skipped) == 3 and srv.request_count == 0


def test_a_free_provider_never_meets_the_budget() -> None:
    batch = ChatAgent(provider=ScriptedProvider(default="ok")).run_batch(ITEMS, max_cost=0)
    assert len(batch.results) == len(ITEMS)


@pytest.mark.parametrize("budget", [-1, float("nan"), True, "5"])
def test_a_budget_that_is_not_a_non_negative_number_is_a_value_error(srv: LLMServer, budget: object) -> None:
    with pytest.raises(ValueError, match="max_cost must be a number"):
        agent(srv).run_batch(ITEMS, max_cost=budget)  # type: ignore[arg-type]


def test_an_estimate_counts_and_prices_the_prompts_without_a_request(srv: LLMServer) -> None:
    estimator = agent(srv, MAX_TOKENS=100)
    estimate = estimator.estimate_batch(ITEMS)
    assert isinstance(estimate, BatchEstimate) and srv.request_count == 0
    assert (estimate.items, estimate.to_run, estimate.output_tokens) == (20, 20, 20 * 100)
    if estimate.counting.startswith("~"):  # tiktoken's encoding file is not on this machine
        per_item = -(-len(estimator.system_prompt) // CHARS_PER_TOKEN) + 8 + len(ITEMS[0]) // 4 + 1
        assert estimate.input_tokens == 20 * per_item
    assert estimate.cost == pytest.approx(PRICE.cost_of(Usage(estimate.input_tokens, estimate.output_tokens)))
    assert f"${estimate.cost:.4f}" in repr(estimate) and "Batch estimate" in estimate._repr_html_()
    assert repr(estimator.run_batch(ITEMS, estimate=True)) == repr(estimate)


def test_without_max_tokens_an_estimate_assumes_the_default_reply_length(srv: LLMServer) -> None:
    assert agent(srv).estimate_batch(ITEMS[:2]).output_tokens == 2 * DEFAULT_OUTPUT_TOKENS


def test_an_estimate_leaves_out_what_a_checkpoint_already_holds(srv: LLMServer, tmp_path: Path) -> None:
    agent(srv).run_batch(ITEMS, max_cost=3 * ITEM_COST, concurrency=1, checkpoint=tmp_path / "b.sqlite")
    estimate = agent(srv).estimate_batch(ITEMS, checkpoint=tmp_path / "b.sqlite")
    assert estimate.finished == srv.request_count and estimate.to_run == len(ITEMS) - estimate.finished


def test_an_unpriced_model_has_an_unknown_cost(srv: LLMServer) -> None:
    estimate = agent(srv, MODEL="my-finetune").estimate_batch(ITEMS[:2])
    assert estimate.cost is None and "unknown" in repr(estimate)


def test_the_bar_counts_the_items_that_ran_not_those_a_budget_skipped(
    srv: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    bars = record_bars(monkeypatch)
    batch = agent(srv).run_batch(ITEMS, concurrency=1, max_cost=3.5 * ITEM_COST)
    # The bar ends short of its total ("stopped"), as the batch did.
    assert batch.skipped and [(bar.total, bar.counted) for bar in bars] == [(len(ITEMS), len(batch.results))]


def test_a_label_output_is_estimated_at_its_longest_labels_length_not_max_tokens(srv: LLMServer) -> None:
    # classify's answer is a label: assuming MAX_TOKENS (256 unset) for it made a 600-row estimate 44 % high.
    from typing import Literal

    estimate = agent(srv).estimate_batch(ITEMS, output=Literal["positive", "negative"])
    assert estimate.output_tokens_each < 10 and estimate.output_tokens == 20 * estimate.output_tokens_each
    assert agent(srv, MAX_TOKENS=3).estimate_batch(ITEMS, output=bool).output_tokens_each == 3  # a cap still caps


# A model aiforge has no price for: a gateway's own model. A budget on it could never stop anything.
GATEWAY_MODEL = "qwen3-8b-house"


def gateway(server: LLMServer, model: str = GATEWAY_MODEL, **settings: object) -> ChatAgent:
    return ChatAgent(
        provider="internal_gateway", GATEWAY_BASE_URL=server.openai_base_url, MODEL=model, MAX_RETRIES=0,
        PROGRESS_BAR=False, **settings,
    )


def test_a_budget_on_a_model_without_a_price_is_refused_before_any_request(srv: LLMServer) -> None:
    with pytest.raises(ConfigError, match="PRICES") as refused:
        gateway(srv).run_batch(ITEMS, max_cost=0.000001)
    message = str(refused.value)
    assert srv.request_count == 0 and "\n" not in message
    assert "max_cost=$1e-06 cannot be enforced" in message and repr(GATEWAY_MODEL) in message
    assert refused.value.setting == "PRICES"


@pytest.mark.parametrize(
    "operation",
    ["map", "classify", "extract", "filter", "agg", "topk", "join", "dedup", "evaluate"],
)
def test_every_operation_with_max_cost_refuses_an_unpriced_model_before_any_request(
    srv: LLMServer, operation: str
) -> None:
    from pydantic import BaseModel

    import aiforge.dataframes  # noqa: F401 - registers df.aiforge

    class Stars(BaseModel):
        stars: int

    frame = pd.DataFrame({"text": ITEMS[:6], "label": ["a", "b"] * 3})
    unpriced = gateway(srv)
    calls = {
        "map": lambda: frame.aiforge.map("{text}", agent=unpriced, max_cost=1.0),
        "classify": lambda: frame.aiforge.classify("{text}", ["a", "b"], agent=unpriced, max_cost=1.0),
        "extract": lambda: frame.aiforge.extract("text", Stars, agent=unpriced, max_cost=1.0),
        "filter": lambda: frame.aiforge.filter("{text}", agent=unpriced, max_cost=1.0),
        "agg": lambda: frame.aiforge.agg("What do the {text}s say?", agent=unpriced, max_cost=1.0),
        "topk": lambda: frame.aiforge.topk("the best {text}", k=2, agent=unpriced, max_cost=1.0),
        "join": lambda: frame.aiforge.join(
            frame, "Is {left.text} like {right.text}?", strategy="candidates", agent=unpriced, max_cost=1.0
        ),
        "dedup": lambda: frame.aiforge.dedup("text", confirm=True, agent=unpriced, max_cost=1.0),
        # the priced candidate is not run first: every candidate is checked before any request
        "evaluate": lambda: frame.aiforge.evaluate(
            {"p": "{text}"}, {"priced": agent(srv), "house": unpriced}, truth="label", labels=["a", "b"],
            max_cost=1.0,
        ),
    }
    with pytest.raises(ConfigError, match="cannot be enforced.*PRICES"):
        calls[operation]()
    assert srv.request_count == 0


def test_with_a_price_given_the_budget_stops_the_batch_as_for_a_priced_model(srv: LLMServer) -> None:
    prices = {GATEWAY_MODEL: {"input": PRICE.input, "output": PRICE.output}}  # gpt-4o-mini's: ITEM_COST a reply
    batch = gateway(srv, PRICES=prices).run_batch(ITEMS, concurrency=1, max_cost=3.5 * ITEM_COST)
    assert len(batch.results) == 3 == srv.request_count and len(batch.skipped) == len(ITEMS) - 3
    assert batch.total_cost == pytest.approx(3 * ITEM_COST) and batch.unpriced == 0
    assert batch.to_dataframe()["priced"].tolist() == [True] * len(ITEMS)


def test_the_frame_has_priced_and_an_unpriced_total_says_it_leaves_them_out(srv: LLMServer) -> None:
    model = "qwen3-8b-frame"  # its own name: the unpriced warning comes once per model and process
    with pytest.warns(UserWarning, match=f"no price for model '{model}'"):
        batch = gateway(srv, model=model).run_batch(ITEMS[:3])
    frame = batch.to_dataframe()
    assert frame["priced"].tolist() == [False, False, False] and batch.unpriced == 3
    assert "unpriced=3 (left out of total_cost), requests=3, failed=0" in repr(batch)
    assert "(leaves out 3 unpriced: no price, see PRICES)" in batch._repr_markdown_()
    priced = agent(srv).run_batch(ITEMS[:3])
    assert priced.to_dataframe()["priced"].tolist() == [True] * 3 and priced.unpriced == 0
    assert "unpriced" not in repr(priced) and "unpriced" not in priced._repr_markdown_()
