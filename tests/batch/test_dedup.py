"""In-batch dedup: rows of one batch with the same rendered prompt are asked once and the answer fanned out to each
row, on its own index label, marked cached at cost 0; failures, budgets, checkpoints, Ctrl-C and the progress bar
see every row. Through the scripted provider (it records calls) and the real openai SDK against fakellm."""

from __future__ import annotations

import os
import signal
import threading
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from pydantic import BaseModel

from aiforge import ChatAgent
from aiforge.core.errors import BatchInterrupted, BudgetExceededError, MissingValueError
from aiforge.core.pricing import lookup_price
from aiforge.core.types import Usage
from aiforge.providers.scripted import ScriptedProvider
from fakellm import Fault, LLMServer, RecordedRequest, Reply
from tests.support.agents import openai_agent as agent
from tests.support.bars import record_bars

TEXTS = ["great", "awful", "great", "fine", "awful", "great", "meh", "fine", "great", "awful"]
"""10 rows, 4 distinct prompts: 6 rows repeat an earlier one."""
LABELS = [f"r{i}" for i in range(len(TEXTS))]




def asked(server: LLMServer) -> Counter[str]:
    return Counter(req.last_user_text for req in server.requests)


def test_each_distinct_prompt_is_one_request_over_http_and_every_row_gets_its_answer_on_its_label(
    srv: LLMServer,
) -> None:
    batch = agent(srv).run_batch(pd.Series(TEXTS, index=LABELS), concurrency=3)
    assert srv.request_count == 4 and asked(srv) == Counter(set(TEXTS))
    frame = batch.to_dataframe()
    assert list(frame.index) == LABELS and frame["message"].tolist() == [f"echo: {t}" for t in TEXTS]
    assert frame["cached"].tolist() == [False, False, True, False, True, True, False, True, True, True]
    assert "(6 deduplicated)" in batch._repr_markdown_() and "deduplicated=6" in repr(batch)
    assert batch.deduplicated == 6 and batch.cached == 6
    assert batch.saved.requests == 6 and batch.saved.naive_requests == 10


def test_a_duplicate_costs_nothing_and_carries_its_twins_cost_as_cached_cost(srv: LLMServer) -> None:
    batch = agent(srv).run_batch(TEXTS, concurrency=1)
    first, twin = batch.results[0], batch.results[2]
    assert first.cost > 0 and not first.cached
    assert twin.cost == 0 and twin.cached and twin.cached_cost == first.cost
    assert (twin.input_tokens, twin.output_tokens) == (first.input_tokens, first.output_tokens)
    assert [r["name"] for r in twin.trace] == ["duplicate"] and twin.trace[0]["cached_cost"] == first.cost
    assert batch.total_cost == pytest.approx(sum(r.cost for r in batch.results if not r.cached))
    assert batch.saved.dollars == pytest.approx(sum(r.cached_cost for r in batch.results if r.cached))


def test_the_scripted_provider_is_called_once_per_distinct_prompt_in_input_order() -> None:
    fake = ScriptedProvider()
    batch = ChatAgent(provider=fake).run_batch(TEXTS, concurrency=1)
    assert [call.last_user_message for call in fake.calls] == ["great", "awful", "fine", "meh"]
    assert [r.message for r in batch.results] == [f"You said: {t}" for t in TEXTS]


def test_a_failed_request_fails_every_row_with_its_prompt_each_under_its_own_label(srv: LLMServer) -> None:
    srv.default = lambda req: Fault(500) if req.last_user_text == "awful" else None
    batch = agent(srv).run_batch(pd.Series(TEXTS, index=LABELS))
    assert asked(srv)["awful"] == 1 and srv.request_count == 4
    assert [f.index for f in batch.failed] == ["r1", "r4", "r9"] and [f.position for f in batch.failed] == [1, 4, 9]
    assert len({str(f.error) for f in batch.failed}) == 1 and "500" in str(batch.failed[0].error)
    assert len(batch.results) == 7 and batch.saved.requests == 4  # the failed twins saved nothing


class Verdict(BaseModel):
    sentiment: str
    stars: int


def test_structured_output_is_fanned_out_validated(srv: LLMServer) -> None:
    srv.default = lambda req: Reply(output={"sentiment": req.last_user_text, "stars": len(req.last_user_text)})
    batch = agent(srv).run_batch(TEXTS, output=Verdict)
    assert srv.request_count == 4
    assert [r.output for r in batch.results] == [Verdict(sentiment=t, stars=len(t)) for t in TEXTS]
    frame = batch.to_dataframe()
    assert frame["sentiment"].tolist() == TEXTS and frame["cached"].sum() == 6


def test_dataframe_rows_are_duplicates_when_their_rendered_prompts_are_the_same(srv: LLMServer) -> None:
    frame = pd.DataFrame(
        {"review": ["good", "good", "good", "bad"], "shop": ["a", "b", "a", "a"]}, index=[10, 20, 30, 40]
    )
    by_review = agent(srv).run_batch(frame, prompt="Review: {review}")
    assert srv.request_count == 2 and by_review.deduplicated == 2  # the shop is not in the prompt
    srv.reset()
    by_both = agent(srv).run_batch(frame, prompt="Review from {shop}: {review}")
    assert srv.request_count == 3 and by_both.deduplicated == 1
    assert by_both.to_dataframe()["message"].tolist() == [
        "echo: Review from a: good", "echo: Review from b: good", "echo: Review from a: good",
        "echo: Review from a: bad",
    ]


def test_missing_value_rows_are_neither_requests_nor_duplicates(srv: LLMServer) -> None:
    frame = pd.DataFrame({"review": ["good", None, "good", None, "bad"]})
    batch = agent(srv).run_batch(frame, prompt="Review: {review}")
    assert srv.request_count == 2
    assert [f.position for f in batch.failed] == [1, 3]
    assert all(isinstance(f.error, MissingValueError) for f in batch.failed)
    assert (batch.saved.requests, batch.saved.naive_requests, batch.deduplicated) == (1, 3, 1)


def test_the_accessor_asks_each_distinct_prompt_once_and_its_result_says_what_was_saved(srv: LLMServer) -> None:
    frame = pd.DataFrame({"review": TEXTS}, index=LABELS)
    result = frame.aiforge.map("Summarise: {review}", agent=agent(srv))
    assert srv.request_count == 4 and result["response"].tolist() == [f"echo: Summarise: {t}" for t in TEXTS]
    saved = result.attrs["aiforge"].saved
    assert saved.requests == 6 and saved.by_source["dedup"].requests == 6
    srv.default = lambda req: Reply(output={"value": "pos"} if req.output_schema.get("type") == "object" else "pos")
    labels = frame.aiforge.classify("Sentiment of {review}", labels=["pos", "neg"], agent=agent(srv))
    assert srv.request_count == 8 and labels.tolist() == ["pos"] * 10
    assert labels.attrs["aiforge"].deduplicated == 6


def test_the_progress_bar_counts_every_row_of_a_deduplicated_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    bars = record_bars(monkeypatch)
    fake = ScriptedProvider()
    ChatAgent(provider=fake).run_batch(TEXTS)
    assert len(fake.calls) == 4 and [(bar.total, bar.counted) for bar in bars] == [(10, 10)]


def test_an_estimate_counts_each_distinct_prompt_once(srv: LLMServer) -> None:
    estimate = agent(srv).estimate_batch(TEXTS)
    assert (estimate.items, estimate.to_run) == (10, 4)
    assert estimate.input_tokens == agent(srv).estimate_batch(sorted(set(TEXTS))).input_tokens
    assert srv.request_count == 0


BILLED = {"input_tokens": 1000, "output_tokens": 1000}
ITEM_COST = lookup_price("gpt-4o-mini").cost_of(Usage(1000, 1000))


def test_a_budget_counts_a_repeated_prompt_once() -> None:
    with LLMServer(default=lambda req: Reply(text="ok", usage=BILLED)) as server:
        # Room for two requests, not three: the ten rows of two prompts all fit.
        batch = agent(server).run_batch(["a", "b"] * 5, concurrency=1, max_cost=2.5 * ITEM_COST)
    assert server.request_count == 2 and len(batch.results) == 10 and not batch.skipped
    assert batch.total_cost == pytest.approx(2 * ITEM_COST)


def test_a_prompt_the_budget_skips_skips_all_its_rows() -> None:
    with LLMServer(default=lambda req: Reply(text="ok", usage=BILLED)) as server:
        batch = agent(server).run_batch(["a", "b", "a", "c", "b", "c"], concurrency=1, max_cost=1.5 * ITEM_COST)
    assert server.request_count == 1
    assert [f.position for f in batch.skipped] == [1, 3, 4, 5]
    assert all(isinstance(f.error, BudgetExceededError) for f in batch.skipped)


def test_a_checkpointed_rerun_asks_only_the_failed_prompt_once_and_keeps_the_savings(
    srv: LLMServer, tmp_path: Path
) -> None:
    srv.default = lambda req: Fault(500) if req.last_user_text == "awful" and srv.request_count <= 4 else None
    path = tmp_path / "b.sqlite"
    first = agent(srv).run_batch(TEXTS, checkpoint=path)
    assert [f.position for f in first.failed] == [1, 4, 9] and srv.request_count == 4
    again = agent(srv).run_batch(TEXTS, checkpoint=path)
    assert srv.request_count == 5 and asked(srv)["awful"] == 2
    assert not again.failed and [r.message for r in again.results] == [f"echo: {t}" for t in TEXTS]
    assert again.saved.requests == again.deduplicated == 6  # the twins read back from the file are still twins
    third = agent(srv).run_batch(TEXTS, checkpoint=path)
    assert srv.request_count == 5 and third.total_cost == pytest.approx(again.total_cost)


ROWS = [f"row {i % 10}" for i in range(20)]
"""Rows 10-19 repeat rows 0-9."""
CONCURRENCY = 4


class Metered:
    """Answers the first ``CONCURRENCY`` requests, hangs the next ``CONCURRENCY`` (the run is stopped while they
    wait), then answers everything; counts the prompts it answered."""

    def __init__(self) -> None:
        self.seen = 0
        self.answered: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, req: RecordedRequest) -> Reply | Fault:
        with self.lock:
            self.seen += 1
            if CONCURRENCY < self.seen <= 2 * CONCURRENCY:
                return Fault(hang=True)
            self.answered[req.last_user_text] += 1
        return Reply(text=f"done {req.last_user_text}")


def test_ctrl_c_keeps_the_finished_prompts_rows_and_a_rerun_asks_each_other_prompt_once(srv: LLMServer) -> None:
    srv.default = meter = Metered()

    def interrupt_when_stuck() -> None:
        if srv.wait_for_requests(2 * CONCURRENCY, timeout=60):
            os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_when_stuck, daemon=True).start()
    # 4 prompts answered: their 8 rows (each prompt's two) are kept.
    with pytest.raises(BatchInterrupted, match="8 of 20 items finished and are kept"):
        agent(srv).run_batch(ROWS, concurrency=CONCURRENCY)
    batch = agent(srv).run_batch(ROWS, concurrency=CONCURRENCY)
    assert [r.message for r in batch.results] == [f"done {row}" for row in ROWS]
    assert meter.answered == Counter(set(ROWS))  # every prompt answered exactly once over both runs
    assert batch.deduplicated == 10 and batch.saved.requests == 10


def test_a_row_whose_prompt_a_checkpointed_row_answered_takes_that_answer_without_a_request(
    srv: LLMServer, tmp_path: Path
) -> None:
    from aiforge.batch.identity import batch_identity
    from aiforge.batch.resume import open_checkpoint

    path, rows = tmp_path / "b.sqlite", ["great", "awful", "great"]
    agent(srv).run_batch(rows, checkpoint=path)
    # A checkpoint written before dedup: the first "great" finished, the second failed.
    open_checkpoint(path, batch_identity(agent(srv), rows, None), restart=False).record(2, error="APIError: 500")
    assert srv.request_count == 2
    again = agent(srv).run_batch(rows, checkpoint=path)
    assert srv.request_count == 2 and not again.failed
    assert again.results[2].message == "echo: great" and again.results[2].cached and again.deduplicated == 1


def test_dedup_false_asks_every_row_to_sample_one_prompt_several_times(srv: LLMServer) -> None:
    batch = agent(srv, TEMPERATURE=0.9).run_batch(["Name a colour."] * 3, dedup=False)
    assert srv.request_count == 3 and batch.cached == 0 and batch.saved.requests == 0
    frame = pd.DataFrame({"review": ["good", "good"]})
    frame.aiforge.map("Review: {review}", agent=agent(srv), dedup=False)
    assert srv.request_count == 5


def test_a_dedup_that_is_not_a_boolean_is_a_usage_error(srv: LLMServer) -> None:
    from aiforge.core.types import UsageError

    with pytest.raises(UsageError, match="dedup= is True"):
        agent(srv).run_batch(TEXTS, dedup="no")  # type: ignore[typeddict-item]
    assert srv.request_count == 0


def test_a_batch_says_which_plan_ran_as_the_estimate_names_them() -> None:
    # A default (deduplicating) run said plan="as_is", the estimate's name for every row asked.
    agent = ChatAgent(provider=ScriptedProvider(default="ok"), memory="none")
    assert agent.run_batch(["a", "a", "b"]).plan == "deduped"
    assert agent.run_batch(["a", "a", "b"], dedup=False).plan == "as_is"
