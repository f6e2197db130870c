"""``submit_batch`` and ``BatchJob`` on the scripted provider's in-process Batch API."""

from __future__ import annotations

import asyncio

import pandas as pd
import pytest
from pydantic import BaseModel

from aiforge import ChatAgent
from aiforge.batch.batch_api import BatchJob, BatchLimits
from aiforge.core.errors import ItemNotRunError, JobNotFinishedError, MissingValueError
from aiforge.core.pricing import batch_price_of, price_of
from aiforge.core.types import Usage
from aiforge.providers.scripted import ScriptedProvider, structured


class Label(BaseModel):
    label: str


@pytest.fixture
def fake() -> ScriptedProvider:
    return ScriptedProvider()


def test_a_dataframe_with_a_template_comes_back_on_its_index(fake: ScriptedProvider) -> None:
    frame = pd.DataFrame({"text": ["good", None, "bad"]}, index=["r1", "r2", "r3"])
    result = ChatAgent(provider=fake).submit_batch(frame, prompt="Review: {text}").wait(poll_interval=0)
    table = result.to_dataframe()
    assert list(table.index) == ["r1", "r2", "r3"]
    assert list(table["message"].iloc[[0, 2]]) == ["You said: Review: good", "You said: Review: bad"]
    assert isinstance(result.failed[0].error, MissingValueError) and result.failed[0].index == "r2"
    assert len(fake.calls) == 2  # the row with a missing value is never sent


def test_each_item_is_a_fresh_conversation_with_the_system_prompt(fake: ScriptedProvider) -> None:
    agent = ChatAgent(provider=fake, system_prompt="Be terse.")
    agent.submit_batch(["a", "b"]).wait(poll_interval=0)
    assert [call.messages for call in fake.calls] == [
        [{"role": "system", "content": "Be terse."}, {"role": "user", "content": text}] for text in "ab"
    ]
    assert agent.history == []


def test_structured_output_through_a_job(fake: ScriptedProvider) -> None:
    fake.enqueue(structured(Label(label="pos")), "not json")
    result = ChatAgent(provider=fake).submit_batch(["x", "y"], output=Label).wait(poll_interval=0)
    assert fake.calls[0].params.output is not None
    assert result.results[0].output == Label(label="pos")
    assert type(result.failed[0].error).__name__ == "OutputValidationError"


def test_progress_follows_the_jobs_counts(fake: ScriptedProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    import tqdm.auto

    seen: list[tuple[int, int, str]] = []

    class RecordingBar:
        def __init__(self, total: int, **kwargs: object) -> None:
            self.total, self.n, self.state = total, 0, ""

        def set_postfix_str(self, state: str, refresh: bool = True) -> None:
            self.state = state

        def update(self, n: int) -> None:
            self.n += n
            seen.append((self.n, self.total, self.state))

        def close(self) -> None:
            pass

    monkeypatch.setattr(tqdm.auto, "tqdm", RecordingBar)
    monkeypatch.delenv("TQDM_DISABLE")
    fake.batches.polls = 3
    ChatAgent(provider=fake).submit_batch(["a", "b", "c"]).wait(poll_interval=0)
    assert seen == [(1, 3, "running"), (2, 3, "running"), (3, 3, "completed")]
    monkeypatch.setenv("TQDM_DISABLE", "1")
    ChatAgent(provider=fake).submit_batch(["a"]).wait(poll_interval=0)
    assert len(seen) == 3


def test_a_failing_request_fails_only_its_item(fake: ScriptedProvider) -> None:
    fake.enqueue("one", RuntimeError("boom"), "three")
    result = ChatAgent(provider=fake).submit_batch(["a", "b", "c"]).wait(poll_interval=0)
    assert [r.message for r in result.results] == ["one", "three"]
    assert str(result.failed[0].error) == "boom"


def test_results_before_the_end_are_refused(fake: ScriptedProvider) -> None:
    fake.batches.polls = 5
    job = ChatAgent(provider=fake).submit_batch(["a", "b", "c", "d", "e"])
    with pytest.raises(JobNotFinishedError, match="wait"):
        job.results()


def test_expired_and_cancelled_jobs_name_the_items_they_did_not_run(fake: ScriptedProvider) -> None:
    agent = ChatAgent(provider=fake)
    fake.batches.expire_after = 2
    expired = agent.submit_batch(["a", "b", "c"])
    expired.wait(poll_interval=0)
    assert [(f.index, f.error.reason) for f in expired.not_run] == [(2, "expired")]
    fake.batches.expire_after, fake.batches.polls = None, 4
    cancelled = agent.submit_batch(["a", "b", "c", "d"])
    cancelled.status()
    assert cancelled.cancel().state == "cancelling"
    result = cancelled.wait(poll_interval=0)
    assert cancelled.status().state == "cancelled"
    assert len(result.results) == 1 and all(isinstance(f.error, ItemNotRunError) for f in result.failed)


def test_a_split_job_is_merged_in_input_order(fake: ScriptedProvider) -> None:
    job = ChatAgent(provider=fake).submit_batch(list("abcde"), limits=BatchLimits(max_requests=2, max_bytes=10**6))
    assert len(job.ids) == 3
    assert [r.message for r in job.wait(poll_interval=0).results] == [f"You said: {c}" for c in "abcde"]


def test_a_new_agent_attaches_by_job_id(fake: ScriptedProvider) -> None:
    job_id = ChatAgent(provider=fake).submit_batch(["a", "b"]).id
    result = BatchJob.attach(job_id, agent=ChatAgent(provider=fake)).wait(poll_interval=0)
    assert result.inputs == ["a", "b"] and len(result.results) == 2


def test_a_checkpoint_lets_run_batch_redo_only_what_the_job_did_not_finish(fake: ScriptedProvider,
                                                                           tmp_path: object) -> None:
    path = f"{tmp_path}/job.sqlite"
    agent = ChatAgent(provider=fake)
    fake.enqueue("one", RuntimeError("boom"), "three")
    agent.submit_batch(["a", "b", "c"], checkpoint=path).wait(poll_interval=0)
    calls = len(fake.calls)
    rerun = agent.run_batch(["a", "b", "c"], checkpoint=path)
    assert len(fake.calls) == calls + 1 and fake.calls[-1].last_user_message == "b"
    assert [r.message for r in rerun.results] == ["one", "You said: b", "three"]


def test_an_agent_with_tools_is_refused(fake: ScriptedProvider) -> None:
    def weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    with pytest.raises(ValueError, match="cannot run"):
        ChatAgent(provider=fake, tools=[weather]).submit_batch(["a"])
    assert fake.batches.calls == []


def test_async_submit_and_wait(fake: ScriptedProvider) -> None:
    async def main() -> list[str]:
        job = await ChatAgent(provider=fake).asubmit_batch(["a"])
        return [r.message for r in (await job.await_results(poll_interval=0)).results]

    assert asyncio.run(main()) == ["You said: a"]


def test_batch_prices_are_half_the_list_price_where_the_provider_discounts() -> None:
    usage = Usage(input_tokens=1000, output_tokens=500)
    for provider, model in (("openai", "gpt-4o-mini"), ("anthropic", "claude-haiku-4-5")):
        assert batch_price_of(usage, model, provider)[0] == pytest.approx(price_of(usage, model)[0] / 2)
    assert batch_price_of(usage, "gpt-4o-mini", "internal_gateway") == price_of(usage, "gpt-4o-mini")
