"""``submit_batch`` through the real openai and anthropic SDKs against the fake server's Batch APIs."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from aiforge import ChatAgent
from aiforge.batch.batch_api import BatchJob, BatchLimits
from aiforge.core.errors import CheckpointMismatchError, ItemNotRunError, JobNotFinishedError
from aiforge.core.types import BadRequestError, ProviderError
from fakellm import Fault, LLMServer, Reply

KEYS = {"openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"), "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")}


class Review(BaseModel):
    sentiment: str
    stars: int


@pytest.fixture
def srv() -> Iterator[LLMServer]:
    with LLMServer(strict=True) as server:
        yield server


@pytest.fixture(params=["openai", "anthropic"])
def protocol(request: pytest.FixtureRequest) -> str:
    return request.param


def _settings(srv: LLMServer, protocol: str) -> dict[str, Any]:
    key, url = KEYS[protocol]
    base = srv.openai_base_url if protocol == "openai" else srv.anthropic_base_url
    return {"provider": protocol, key: "sk-test-SECRET", url: base, "MAX_RETRIES": 0}


@pytest.fixture
def make_agent(srv: LLMServer, protocol: str) -> Callable[..., ChatAgent]:
    return lambda **kwargs: ChatAgent(**{**_settings(srv, protocol), **kwargs})


def _batch_bodies(srv: LLMServer) -> list[dict[str, Any]]:
    """What the fake Batch API ran, as live-call bodies (it adds ``stream: false``)."""
    bodies = [dict(r.body) for r in srv.requests if r.headers.get("x-fake-batch") == "1"]
    for body in bodies:
        body.pop("stream")
    return bodies


def test_a_batch_job_answers_every_item_in_input_order(make_agent: Callable[..., ChatAgent]) -> None:
    job = make_agent().submit_batch(["one", "two", "three"])
    result = job.wait(poll_interval=0)
    assert [r.message for r in result.results] == ["echo: one", "echo: two", "echo: three"]
    assert result.indices == [0, 1, 2] and not result.failed
    assert job.status().state == "completed"


def test_each_request_is_the_json_a_live_call_sends(srv: LLMServer, make_agent: Callable[..., ChatAgent]) -> None:
    srv.enqueue(*[Reply(output={"sentiment": "pos", "stars": 1})] * 2)
    agent = make_agent(system_prompt="Answer in French.")
    agent.submit_batch(["hello"], output=Review).wait(poll_interval=0)
    agent.run("hello", output=Review)
    live = dict(srv.requests[-1].body)
    assert _batch_bodies(srv) == [live]


def test_batch_cost_is_half_the_live_cost(make_agent: Callable[..., ChatAgent]) -> None:
    agent = make_agent()
    batched = agent.submit_batch(["price me"]).wait(poll_interval=0).results[0]
    live = agent.run("price me")
    assert live.cost > 0
    assert batched.cost == pytest.approx(live.cost / 2)
    assert (batched.input_tokens, batched.output_tokens) == (live.input_tokens, live.output_tokens)


def test_structured_output_comes_back_validated(srv: LLMServer, make_agent: Callable[..., ChatAgent]) -> None:
    srv.enqueue(Reply(output={"sentiment": "pos", "stars": 5}), Reply(output={"sentiment": "neg"}))
    result = make_agent().submit_batch(["great", "awful"], output=Review).wait(poll_interval=0)
    assert result.results[0].output == Review(sentiment="pos", stars=5)
    assert type(result.failed[0].error).__name__ == "OutputValidationError"
    stars = result.to_dataframe()["stars"]
    assert stars.iloc[0] == 5 and stars.isna().iloc[1]


def test_a_job_over_the_limits_is_split_and_merged(srv: LLMServer, make_agent: Callable[..., ChatAgent]) -> None:
    srv.batches.max_requests = 2  # the server refuses bigger jobs: the split must hold
    job = make_agent().submit_batch([f"item {i}" for i in range(5)], limits=BatchLimits(2, 10**6))
    assert len(job.ids) == 3 and job.id == ",".join(job.ids)
    result = job.wait(poll_interval=0)
    assert [r.message for r in result.results] == [f"echo: item {i}" for i in range(5)]


def test_a_job_is_split_by_size_too(make_agent: Callable[..., ChatAgent]) -> None:
    job = make_agent().submit_batch(["x" * 300, "y" * 300, "z"], limits=BatchLimits(100, 1000))
    assert len(job.ids) == 2
    assert len(job.wait(poll_interval=0).results) == 3


def test_a_failed_request_fails_only_its_item(srv: LLMServer, make_agent: Callable[..., ChatAgent]) -> None:
    srv.enqueue(Reply(text="first"), Fault(status=400, message="no such thing"), Reply(text="third"))
    result = make_agent().submit_batch(["a", "b", "c"]).wait(poll_interval=0)
    assert [r.message for r in result.results] == ["first", "third"]
    failure = result.failed[0]
    assert failure.index == 1 and isinstance(failure.error, BadRequestError)
    assert failure.error.status_code == 400 and "no such thing" in str(failure.error)


def test_an_expired_job_reports_the_items_it_did_not_run(srv: LLMServer, make_agent: Callable[..., ChatAgent]) -> None:
    srv.batches.expire_after = 1
    job = make_agent().submit_batch(["a", "b", "c"])
    result = job.wait(poll_interval=0)
    assert job.status().state == "expired"
    assert [r.message for r in result.results] == ["echo: a"]
    assert [f.index for f in job.not_run] == [1, 2]
    assert all(isinstance(f.error, ItemNotRunError) and f.error.reason == "expired" for f in job.not_run)


def test_a_cancelled_job_reports_the_items_it_did_not_run(srv: LLMServer, make_agent: Callable[..., ChatAgent]) -> None:
    srv.batches.polls = 6  # one item answered per status call
    job = make_agent().submit_batch([f"item {i}" for i in range(6)])
    while job.status().done == 0:
        pass
    with pytest.raises(JobNotFinishedError):
        job.results()
    assert job.cancel().state in ("cancelling", "cancelled")
    result = job.wait(poll_interval=0)
    assert job.status().state == "cancelled"
    ran = len(result.results)
    assert [r.message for r in result.results] == [f"echo: item {i}" for i in range(ran)]
    assert [f.index for f in job.not_run] == list(range(ran, 6)) and ran < 6
    assert {f.error.reason for f in job.not_run} == {"cancelled"}


def test_a_job_over_the_servers_limit_is_refused(srv: LLMServer, protocol: str,
                                                make_agent: Callable[..., ChatAgent]) -> None:
    srv.batches.max_requests = 1
    if protocol == "anthropic":  # the create call is refused
        with pytest.raises(BadRequestError, match="at most 1"):
            make_agent().submit_batch(["a", "b"])
        return
    job = make_agent().submit_batch(["a", "b"])  # OpenAI: the batch fails validation
    status = job.status()
    assert status.state == "failed" and "too_many_requests" in (status.jobs[0].error or "")
    job.results()
    assert [f.error.reason for f in job.not_run] == ["failed", "failed"]


def test_a_new_agent_attaches_to_a_running_job(srv: LLMServer, protocol: str,
                                              make_agent: Callable[..., ChatAgent]) -> None:
    srv.batches.polls = 2
    items = ["first", "second", None]
    job_id = make_agent().submit_batch(items).id
    items_again = items if protocol == "anthropic" else None  # Anthropic returns no inputs
    job = BatchJob.attach(job_id, agent=make_agent(), items=items_again)
    result = job.wait(poll_interval=0)
    assert result.inputs[:2] == ["first", "second"]
    assert [r.message for r in result.results] == ["echo: first", "echo: second"]


def test_a_job_submitted_by_another_process_is_picked_up(srv: LLMServer, protocol: str) -> None:
    script = textwrap.dedent(f"""
        from aiforge import ChatAgent
        agent = ChatAgent(**{_settings(srv, protocol)!r})
        print(agent.submit_batch(["from the dead kernel", "again"]).id)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    job_id = done.stdout.strip().splitlines()[-1]
    items = ["from the dead kernel", "again"] if protocol == "anthropic" else None
    result = BatchJob.attach(job_id, agent=ChatAgent(**_settings(srv, protocol)), items=items).wait(poll_interval=0)
    assert [r.message for r in result.results] == ["echo: from the dead kernel", "echo: again"]
    assert result.inputs == ["from the dead kernel", "again"]


def test_a_checkpoint_keeps_the_job_so_a_restarted_kernel_attaches_instead_of_paying_twice(
    srv: LLMServer, protocol: str, tmp_path: Path
) -> None:
    srv.batches.polls = 3
    checkpoint = tmp_path / "job.sqlite"
    items = ["from the dead kernel", "again"]
    script = textwrap.dedent(f"""
        from aiforge import ChatAgent
        agent = ChatAgent(**{_settings(srv, protocol)!r})
        print(agent.submit_batch({items!r}, checkpoint={str(checkpoint)!r}).id)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    job_id = done.stdout.strip().splitlines()[-1]

    rerun = ChatAgent(**_settings(srv, protocol)).submit_batch(items, checkpoint=checkpoint)
    assert rerun.id == job_id and rerun.reattached and len(srv.batches.batches) == 1
    attached = BatchJob.attach(agent=ChatAgent(**_settings(srv, protocol)), checkpoint=checkpoint, items=items)
    assert attached.id == job_id
    result = rerun.wait(poll_interval=0)
    assert [r.message for r in result.results] == ["echo: from the dead kernel", "echo: again"]
    assert len(srv.batches.batches) == 1

    with pytest.raises(CheckpointMismatchError, match="inputs differ"):
        ChatAgent(**_settings(srv, protocol)).submit_batch(["other", "items"], checkpoint=checkpoint)
    ChatAgent(**_settings(srv, protocol)).run_batch(["x"], checkpoint=tmp_path / "live.sqlite")
    with pytest.raises(ValueError, match="holds no Batch API job"):
        BatchJob.attach(agent=ChatAgent(**_settings(srv, protocol)), checkpoint=tmp_path / "live.sqlite")
    with pytest.raises(ValueError, match="does not exist"):
        BatchJob.attach(agent=ChatAgent(**_settings(srv, protocol)), checkpoint=tmp_path / "none.sqlite")


def test_no_key_reaches_the_job_its_files_or_its_errors(srv: LLMServer, make_agent: Callable[..., ChatAgent]) -> None:
    srv.enqueue(Fault(status=400, message="rejected"))
    job = make_agent().submit_batch(["a", "b"])
    result = job.wait(poll_interval=0)
    stored = b"".join(f["content"] for f in srv.batches.files.values())
    seen = [repr(job), job.id, str(job.status()), repr(result.failed), str(result.to_dataframe().to_dict())]
    assert b"sk-test-SECRET" not in stored and not any("sk-test-SECRET" in text for text in seen)


def test_a_gateway_serving_the_batch_api_gets_jobs_at_its_list_price(srv: LLMServer) -> None:
    agent = ChatAgent(provider="internal_gateway", GATEWAY_BASE_URL=srv.openai_base_url, GATEWAY_MODEL="gpt-4o-mini")
    batched = agent.submit_batch(["hi"]).wait(poll_interval=0).results[0]
    assert batched.message == "echo: hi"
    assert batched.cost > 0
    assert batched.cost == pytest.approx(agent.run("hi").cost)  # a gateway's own prices: no discount assumed


def test_a_job_is_sent_no_service_tier_and_priced_at_the_batch_discount(srv: LLMServer) -> None:
    # A Batch API job is its own tier: SERVICE_TIER=flex stays with the live calls.
    agent = ChatAgent(**_settings(srv, "openai"), MODEL="o4-mini", SERVICE_TIER="flex")
    batched = agent.submit_batch(["price me"]).wait(poll_interval=0).results[0]
    live = agent.run("price me")
    assert [body.get("service_tier") for body in _batch_bodies(srv)] == [None]
    assert srv.requests[-1].body["service_tier"] == "flex"
    assert batched.cost == pytest.approx(live.cost)  # both half the list price: the batch discount, the flex tier


def test_a_split_submission_that_fails_part_way_cancels_the_parts_sent(
    srv: LLMServer, make_agent: Callable[..., ChatAgent]
) -> None:
    srv.batches.max_file_bytes = 1500  # the second part is over the server's size limit
    with pytest.raises(ProviderError, match="too large"):
        make_agent().submit_batch(["short", "x" * 2000], limits=BatchLimits(1, 10**6))
    (first,) = srv.batches.batches.values()
    assert first.cancel_requested


def test_cancelling_a_job_that_already_ended_keeps_its_results(srv: LLMServer,
                                                               make_agent: Callable[..., ChatAgent]) -> None:
    agent = make_agent()
    job = agent.submit_batch(["a"])
    BatchJob.attach(job.id, agent=agent).wait(poll_interval=0)  # another handle saw it end
    assert job.cancel().state == "completed"
    assert [r.message for r in job.results().results] == ["echo: a"]
