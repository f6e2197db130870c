"""Issue 24's cost planner: the estimate compares plans, and ``run_batch(plan="cheapest", deadline=...)`` runs one.

Through the real openai and anthropic SDKs over HTTP against fakellm (its Batch API included), and the scripted
provider for a provider with a Batch API and no service tiers.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import aiforge  # noqa: F401 - registers the DataFrame accessor
from aiforge import Cascade, ChatAgent
from aiforge.batch.estimate import BatchEstimate
from aiforge.batch.plans import Plan
from aiforge.core.types import UsageError
from aiforge.providers.scripted import ScriptedProvider
from fakellm import LLMServer

REVIEWS = ["great phone", "battery died", "great phone", "meh", "battery died", "love it", "great phone", "ok"]
"""Eight rows, five distinct prompts: three rows repeat an earlier one."""
TEMPLATE = (
    "You label customer reviews of phones for a retailer's quality team. Read the review, decide whether the "
    "customer is happy, unhappy or neither, and answer with that one word only.\n\nReview: {value}"
)


@pytest.fixture
def srv() -> Iterator[LLMServer]:
    with LLMServer() as server:
        yield server


def openai_agent(srv: LLMServer, model: str, **settings: Any) -> ChatAgent:
    return ChatAgent(
        provider="openai", OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=srv.openai_base_url, MODEL=model,
        MAX_RETRIES=0, PROGRESS_BAR=False, **settings,
    )


def plans_by_name(estimate: BatchEstimate) -> dict[str, Plan]:
    return {plan.name: plan for plan in estimate.plans}


def live_requests(srv: LLMServer) -> list[Any]:
    """Chat completions the client sent itself (not those the fake Batch API ran)."""
    return [r for r in srv.requests if r.path.endswith("/chat/completions") and r.headers.get("x-fake-batch") != "1"]


def batch_jobs(srv: LLMServer) -> list[Any]:
    """The jobs the fake Batch API received."""
    return list(srv.batches.batches.values())


def test_an_estimate_names_each_plan_with_numbers_consistent_with_each_other(srv: LLMServer) -> None:
    estimate = openai_agent(srv, "gpt-5-mini").estimate_batch(REVIEWS)
    plans = plans_by_name(estimate)
    assert list(plans) == ["as_is", "deduped", "flex", "batch_api", "packed"] and srv.request_count == 0
    as_is, deduped, flex, batch_api = plans["as_is"], plans["deduped"], plans["flex"], plans["batch_api"]
    assert (as_is.requests, deduped.requests) == (8, 5)
    assert deduped.dollars is not None and as_is.dollars is not None and deduped.dollars < as_is.dollars
    assert flex.available and flex.dollars == pytest.approx(deduped.dollars / 2)
    assert (flex.input_tokens, flex.output_tokens) == (deduped.input_tokens, deduped.output_tokens)
    assert batch_api.requests == 5 and batch_api.dollars == pytest.approx(deduped.dollars / 2)
    every_row = plans_by_name(openai_agent(srv, "gpt-5-mini").estimate_batch(REVIEWS, dedup=False))["batch_api"]
    assert every_row.requests == 8 and every_row.dollars == pytest.approx(as_is.dollars / 2)
    # the estimate's own fields stay the plan run_batch would run with these options (deduped)
    assert (estimate.to_run, estimate.input_tokens, estimate.cost) == (5, deduped.input_tokens, deduped.dollars)
    assert [plan.name for plan in estimate.plans if plan.cheapest] == ["flex"] and estimate.cheapest == flex


def test_the_plans_are_a_dataframe_an_html_table_and_a_text_table(srv: LLMServer) -> None:
    estimate = openai_agent(srv, "gpt-5-mini").run_batch(REVIEWS, estimate=True)
    assert isinstance(estimate, BatchEstimate)
    table = estimate.to_dataframe()
    assert list(table.index) == ["as is", "deduped", "flex", "Batch API", "packed"]
    assert table.loc["flex", "cheapest"] and table.loc["Batch API", "expected_time"] == "up to 24 h"
    assert table.loc["as is", "requests"] == 8 and table.loc["deduped", "dollars"] == pytest.approx(estimate.cost)
    assert "<table>" in estimate._repr_html_() and "flex (cheapest)" in estimate._repr_html_()
    text = repr(estimate)
    assert "*flex" in text and "Batch API" in text and "(* cheapest)" in text


def test_flex_is_marked_not_available_where_no_flex_tier_exists(srv: LLMServer) -> None:
    mini = plans_by_name(openai_agent(srv, "gpt-4o-mini").estimate_batch(REVIEWS))["flex"]
    assert not mini.available and "no flex tier for gpt-4o-mini" in mini.note and mini.dollars is None
    claude = ChatAgent(
        provider="anthropic", ANTHROPIC_API_KEY="sk-test", ANTHROPIC_BASE_URL=srv.anthropic_base_url,
        MODEL="claude-haiku-4-5",
    )
    plans = plans_by_name(claude.estimate_batch(REVIEWS))
    assert not plans["flex"].available and "anthropic sends no service tier" in plans["flex"].note
    assert plans["batch_api"].available and srv.request_count == 0


def test_the_packed_plan_counts_the_packed_prompt_so_a_long_template_is_paid_once_per_pack(srv: LLMServer) -> None:
    agent = openai_agent(srv, "gpt-4o-mini")
    suggested = plans_by_name(agent.estimate_batch(REVIEWS, prompt=TEMPLATE))
    assert suggested["packed"].requests == 1 and "suggested pack=6" in suggested["packed"].note
    plans = plans_by_name(agent.estimate_batch(REVIEWS, prompt=TEMPLATE, pack=2))
    assert plans["packed"].requests == math.ceil(5 / 2) and "pack=2" in plans["packed"].note
    five = plans_by_name(agent.estimate_batch(REVIEWS, prompt=TEMPLATE, pack=5))["packed"]
    assert five.requests == 1 and five.input_tokens < plans["packed"].input_tokens  # the shared part paid once


def test_the_cascade_plan_is_a_range_from_the_sample_alone_to_every_row(srv: LLMServer) -> None:
    strong, cheap = openai_agent(srv, "gpt-4o"), openai_agent(srv, "gpt-4o-mini")
    rows = [f"review number {n}" for n in range(80)]
    cascade = plans_by_name(strong.estimate_batch(rows, cascade=Cascade(first=cheap, sample=58)))["cascade"]
    deduped = plans_by_name(strong.estimate_batch(rows))["deduped"]
    assert cascade.dollars is not None and cascade.dollars_high is not None and deduped.dollars is not None
    assert cascade.dollars < deduped.dollars < cascade.dollars_high  # the cheap pass is paid on top of all rows
    assert cascade.dollars_high - cascade.dollars == pytest.approx(deduped.dollars * 22 / 80)
    assert "known only after calibrating" in cascade.note and srv.request_count == 0


def test_cheapest_with_a_short_deadline_runs_flex_for_this_batch_only(srv: LLMServer) -> None:
    agent = openai_agent(srv, "gpt-5-mini")
    result = agent.run_batch(REVIEWS, plan="cheapest", deadline=datetime.timedelta(minutes=10))
    assert result.plan == "flex" and not batch_jobs(srv)
    assert [r.body["service_tier"] for r in live_requests(srv)] == ["flex"] * 5
    assert list(result.to_dataframe()["message"]) == [f"echo: {text}" for text in REVIEWS]
    assert result.extra_saved.by_source["flex"].dollars == pytest.approx(result.total_cost)  # flex is half price
    agent.run("and now?")
    assert agent.settings.SERVICE_TIER is None and "service_tier" not in live_requests(srv)[-1].body


def test_cheapest_with_a_day_to_spare_sends_a_batch_api_job_and_lands_rows_on_their_index(srv: LLMServer) -> None:
    rows = pd.Series([f"review {n}" for n in range(6)], index=[f"id{n}" for n in range(6)])
    result = openai_agent(srv, "gpt-4o-mini").run_batch(rows, plan="cheapest", deadline="2d")
    assert result.plan == "batch_api" and len(batch_jobs(srv)) == 1 and not live_requests(srv)
    table = result.to_dataframe()
    assert list(table.index) == list(rows.index)
    assert list(table["message"]) == [f"echo: review {n}" for n in range(6)]
    assert result.extra_saved.by_source["batch_api"].dollars == pytest.approx(result.total_cost)


def test_a_batch_api_plan_sends_each_distinct_prompt_once_and_serves_the_repeats(srv: LLMServer) -> None:
    result = openai_agent(srv, "gpt-4o-mini").run_batch(REVIEWS, plan="cheapest")
    (job,) = batch_jobs(srv)
    assert result.plan == "batch_api" and len(job.items) == 5 and not live_requests(srv)
    assert [r.message for r in result.results] == [f"echo: {text}" for text in REVIEWS] and not result.failed
    assert [r.cached for r in result.results] == [False, False, True, False, True, False, True, False]
    assert result.saved.by_source["dedup"].requests == 3


def test_after_a_deduped_batch_api_plan_its_checkpoint_holds_every_row(srv: LLMServer, tmp_path: Path) -> None:
    checkpoint = tmp_path / "plans.db"
    openai_agent(srv, "gpt-4o-mini").run_batch(REVIEWS, plan="cheapest", checkpoint=checkpoint)
    again = openai_agent(srv, "gpt-4o-mini").run_batch(REVIEWS, checkpoint=checkpoint)
    assert not live_requests(srv) and not again.failed
    assert [r.message for r in again.results] == [f"echo: {text}" for text in REVIEWS]


def test_the_accessor_passes_plan_and_deadline_through(srv: LLMServer) -> None:
    frame = pd.DataFrame({"text": ["a", "b", "c"]}, index=[10, 20, 30])
    agent = openai_agent(srv, "gpt-4o-mini")
    answers = frame["text"].aiforge.map("Say: {value}", agent=agent, plan="cheapest", deadline=86400 * 2)
    assert len(batch_jobs(srv)) == 1 and list(answers.index) == [10, 20, 30]
    assert list(answers["response"]) == ["echo: Say: a", "echo: Say: b", "echo: Say: c"]


def test_the_same_call_after_a_restart_attaches_to_the_job_its_checkpoint_holds(srv: LLMServer, tmp_path: Path) -> None:
    rows, checkpoint = [f"review {n}" for n in range(4)], tmp_path / "plans.db"
    srv.batches.polls = 3
    openai_agent(srv, "gpt-4o-mini").submit_batch(rows, checkpoint=checkpoint)  # then the kernel restarts
    result = openai_agent(srv, "gpt-4o-mini").run_batch(rows, plan="cheapest", deadline="2d", checkpoint=checkpoint)
    assert result.plan == "batch_api" and len(batch_jobs(srv)) == 1 and not live_requests(srv)
    assert [r.message for r in result.results] == [f"echo: {text}" for text in rows]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"plan": "fastest"}, "plan= is one of 'as_is', 'cheapest'"),
        ({"plan": "cheapest", "deadline": "soon"}, "deadline= takes a datetime.timedelta"),
        ({"plan": "cheapest", "deadline": -5}, "deadline= takes a datetime.timedelta"),
        ({"plan": "cheapest", "deadline": True}, "deadline= takes a datetime.timedelta"),
        ({"deadline": "2h"}, 'pass it with plan="cheapest"'),
    ],
)
def test_a_bad_plan_or_deadline_is_a_usage_error_naming_the_allowed_values(
    srv: LLMServer, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        openai_agent(srv, "gpt-5-mini").run_batch(REVIEWS, **options)
    assert srv.request_count == 0


def test_a_deadline_no_plan_meets_is_refused_before_any_request_naming_the_closest(srv: LLMServer) -> None:
    with pytest.raises(UsageError, match="no plan meets deadline='1s'.*the closest is deduped"):
        openai_agent(srv, "gpt-5-mini").run_batch(REVIEWS, plan="cheapest", deadline="1s")
    assert srv.request_count == 0


def test_scripted_has_a_batch_api_but_no_flex_and_being_free_runs_deduped() -> None:
    fake = ScriptedProvider()
    agent = ChatAgent(provider=fake)
    plans = plans_by_name(agent.estimate_batch(REVIEWS))
    assert not plans["flex"].available and plans["batch_api"].available
    assert plans["deduped"].dollars == 0.0 == plans["batch_api"].dollars  # free: plan="cheapest" keeps sync calls
    result = agent.run_batch(REVIEWS, plan="cheapest")
    assert result.plan == "deduped" and len(fake.calls) == 5 and "flex" not in result.extra_saved.by_source


def test_an_agent_with_tools_has_no_batch_api_nor_packed_plan_and_runs_live() -> None:
    def word_count(text: str) -> int:
        """Count the words of ``text``."""
        return len(text.split())

    fake = ScriptedProvider()
    agent = ChatAgent(provider=fake, tools=[word_count])
    plans = plans_by_name(agent.estimate_batch(REVIEWS))
    assert "cannot run the agent's tools" in plans["batch_api"].note and not plans["batch_api"].available
    assert "with tools" in plans["packed"].note and not plans["packed"].available
    result = agent.run_batch(REVIEWS, plan="cheapest", deadline="2d")
    assert result.plan == "deduped" and not fake.batches.jobs and len(result.results) == 8
