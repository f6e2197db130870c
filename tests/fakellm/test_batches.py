"""The fake server's Batch APIs, driven by the unmodified openai and anthropic SDKs."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anthropic
import openai
import pytest

from fakellm import Fault, LLMServer, Reply


@pytest.fixture
def srv() -> Iterator[LLMServer]:
    with LLMServer() as server:
        yield server


def _jsonl(count: int) -> bytes:
    lines = [
        {"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions",
         "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"hi {i}"}]}}
        for i in range(count)
    ]
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def _openai(srv: LLMServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0)


def _anthropic(srv: LLMServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=srv.anthropic_base_url, api_key="sk-ant-test", max_retries=0)


def _openai_batch(client: openai.OpenAI, count: int) -> openai.types.Batch:
    upload = client.files.create(file=("in.jsonl", _jsonl(count)), purpose="batch")
    return client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h")


def _lines(client: openai.OpenAI, file_id: str | None) -> list[dict]:
    return [] if file_id is None else [json.loads(x) for x in client.files.content(file_id).text.splitlines()]


def test_openai_batch_goes_through_every_state_and_writes_the_output_file(srv: LLMServer) -> None:
    client = _openai(srv)
    srv.batches.polls = 2
    batch = _openai_batch(client, 3)
    seen = [batch.status]
    counts = []
    while batch.status != "completed":
        batch = client.batches.retrieve(batch.id)
        seen.append(batch.status)
        counts.append(batch.request_counts.completed)
    assert seen == ["validating", "in_progress", "in_progress", "finalizing", "completed"]
    assert counts == [0, 2, 3, 3]
    lines = _lines(client, batch.output_file_id)
    assert [line["custom_id"] for line in lines] == ["r0", "r1", "r2"]
    assert lines[1]["response"]["status_code"] == 200
    assert lines[1]["response"]["body"]["choices"][0]["message"]["content"] == "echo: hi 1"
    assert batch.error_file_id is None


def test_openai_failed_requests_go_to_the_error_file(srv: LLMServer) -> None:
    client = _openai(srv)
    srv.enqueue(Reply(text="fine"), Fault(status=400, message="bad request"))
    batch = _openai_batch(client, 2)
    for _ in range(3):
        batch = client.batches.retrieve(batch.id)
    assert batch.status == "completed"
    assert (batch.request_counts.completed, batch.request_counts.failed) == (1, 1)
    error = _lines(client, batch.error_file_id)[0]
    assert error["custom_id"] == "r1"
    assert error["response"]["status_code"] == 400
    assert error["response"]["body"]["error"]["message"] == "bad request"


def test_openai_expired_batch_lists_the_requests_it_never_ran(srv: LLMServer) -> None:
    client = _openai(srv)
    srv.batches.expire_after = 1
    batch = _openai_batch(client, 3)
    for _ in range(2):
        batch = client.batches.retrieve(batch.id)
    assert batch.status == "expired" and batch.expired_at is not None
    codes = {line["custom_id"]: line["error"]["code"] for line in _lines(client, batch.error_file_id)}
    assert codes == {"r1": "batch_expired", "r2": "batch_expired"}
    assert len(_lines(client, batch.output_file_id)) == 1


def test_openai_cancel_goes_through_cancelling_to_cancelled(srv: LLMServer) -> None:
    client = _openai(srv)
    batch = _openai_batch(client, 2)
    assert client.batches.cancel(batch.id).status == "cancelling"
    batch = client.batches.retrieve(batch.id)
    assert batch.status == "cancelled"
    assert {line["error"]["code"] for line in _lines(client, batch.error_file_id)} == {"batch_cancelled"}


def test_openai_limits_refuse_a_big_file_and_fail_a_batch_with_too_many_requests(srv: LLMServer) -> None:
    client = _openai(srv)
    srv.batches.max_file_bytes = 100
    with pytest.raises(openai.BadRequestError, match="too large"):
        client.files.create(file=("in.jsonl", _jsonl(3)), purpose="batch")
    srv.batches.max_file_bytes, srv.batches.max_requests = 10**6, 2
    batch = _openai_batch(client, 3)
    assert batch.status == "failed" and batch.errors.data[0].code == "too_many_requests"


def test_anthropic_message_batch_results_have_every_result_type(srv: LLMServer) -> None:
    client = _anthropic(srv)
    srv.enqueue(Reply(text="ok"), Fault(status=529))
    params = {"model": "claude-haiku-4-5", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}]}
    batch = client.messages.batches.create(requests=[{"custom_id": f"r{i}", "params": params} for i in range(3)])
    assert batch.processing_status == "in_progress" and batch.request_counts.processing == 3
    srv.batches.polls = 3
    client.messages.batches.retrieve(batch.id)
    client.messages.batches.retrieve(batch.id)
    assert client.messages.batches.cancel(batch.id).processing_status == "canceling"
    batch = client.messages.batches.retrieve(batch.id)
    assert batch.processing_status == "ended" and batch.results_url
    counts = batch.request_counts
    assert (counts.succeeded, counts.errored, counts.canceled, counts.processing) == (1, 1, 1, 0)
    results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
    assert results["r0"].message.content[0].text == "ok"
    assert results["r1"].error.error.type == "overloaded_error"
    assert results["r2"].type == "canceled"


def test_anthropic_results_of_a_running_batch_are_refused(srv: LLMServer) -> None:
    client = _anthropic(srv)
    params = {"model": "claude-haiku-4-5", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}]}
    srv.batches.polls = 2  # the retrieve inside results() answers one of the two
    batch = client.messages.batches.create(requests=[{"custom_id": c, "params": params} for c in "ab"])
    with pytest.raises(anthropic.AnthropicError, match="results_url"):
        list(client.messages.batches.results(batch.id))


def test_batch_calls_are_counted_apart_from_the_requests_they_run(srv: LLMServer) -> None:
    client = _openai(srv)
    batch = _openai_batch(client, 2)
    client.batches.retrieve(batch.id)  # validating -> in_progress
    client.batches.retrieve(batch.id)  # answers both
    assert [call[0] for call in srv.batches.calls] == ["POST", "POST", "GET", "GET"]
    answered = [r for r in srv.requests if r.headers.get("x-fake-batch") == "1"]
    assert len(answered) == 2
