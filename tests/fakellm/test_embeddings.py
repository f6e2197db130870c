"""fakellm's ``POST /v1/embeddings`` driven by the real openai SDK: shapes, formats, usage, strict refusals."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from aiforge.providers.scripted_embeddings import hashed_embedding as scripted_embedding
from fakellm import Fault, LLMServer, Reply
from fakellm.embeddings import hashed_embedding


@pytest.fixture
def srv() -> Iterator[LLMServer]:
    with LLMServer(strict=True) as server:
        yield server


@pytest.fixture
def client(srv: LLMServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0) as sdk:
        yield sdk


def test_a_float_request_gets_one_vector_per_input_and_usage(srv: LLMServer, client: openai.OpenAI) -> None:
    response = client.embeddings.create(input=["a red apple", "tax law"], model="text-embedding-3-small",
                                        encoding_format="float")
    assert [item.index for item in response.data] == [0, 1]
    assert response.data[0].embedding == pytest.approx(hashed_embedding("a red apple", 1536))
    assert (response.usage.prompt_tokens, response.usage.total_tokens) == (11 // 4 + 1 + 7 // 4 + 1,) * 2
    assert response.model == "text-embedding-3-small"
    assert srv.request_count == 1 and srv.requests[0].path == "/v1/embeddings"


def test_the_sdk_default_base64_decodes_to_the_same_vectors(client: openai.OpenAI) -> None:
    floats = client.embeddings.create(input="a red apple", model="text-embedding-3-large", encoding_format="float")
    decoded = client.embeddings.create(input="a red apple", model="text-embedding-3-large")  # base64 on the wire
    assert len(floats.data[0].embedding) == 3072
    assert decoded.data[0].embedding == pytest.approx(floats.data[0].embedding, abs=1e-6)


def test_dimensions_and_token_arrays(client: openai.OpenAI) -> None:
    response = client.embeddings.create(input=[[1, 2, 3], [4]], model="text-embedding-3-small", dimensions=8,
                                        encoding_format="float")
    assert [len(item.embedding) for item in response.data] == [8, 8]
    assert response.data[0].embedding == pytest.approx(hashed_embedding("1 2 3", 8))
    assert response.usage.prompt_tokens == 4


def test_the_vectors_are_the_scripted_providers(client: openai.OpenAI) -> None:
    text = "The quick brown fox, jumping!"
    response = client.embeddings.create(input=text, model="m", dimensions=256, encoding_format="float")
    assert response.data[0].embedding == pytest.approx(scripted_embedding(text, 256))


def test_an_embedder_scripts_the_vectors(srv: LLMServer, client: openai.OpenAI) -> None:
    srv.embedder = lambda text: [float(len(text)), 1.0]
    response = client.embeddings.create(input=["ab", "abc"], model="m", encoding_format="float")
    assert [item.embedding for item in response.data] == [[2.0, 1.0], [3.0, 1.0]]


@pytest.mark.parametrize(
    ("request_body", "message"),
    [
        ({"input": ["a", ""], "model": "m"}, r"'\$.input' is invalid"),
        ({"input": "", "model": "m"}, r"'\$.input' is invalid"),
        ({"input": ["t"] * 2049, "model": "m"}, "max number of inputs is 2048"),
        ({"input": "x" * 40000, "model": "m"}, "maximum context length is 8192 tokens"),
        ({"input": ["x" * 30000] * 41, "model": "m"}, "max 300000 tokens per request"),
        ({"input": "a", "model": "m", "encoding_format": "hex"}, "Supported values are: 'float' and 'base64'"),
        ({"input": "a", "model": "text-embedding-ada-002", "dimensions": 8}, "does not support specifying dimensions"),
        ({"input": "a", "model": "m", "dimensions": 0}, "Expected a value >= 1"),
        ({"input": [{"text": "a"}], "model": "m"}, r"'\$.input' is invalid"),
    ],
)
def test_strict_mode_refuses_what_openai_refuses(
    srv: LLMServer, client: openai.OpenAI, request_body: dict[str, Any], message: str
) -> None:
    with pytest.raises(openai.BadRequestError, match=message):
        client.post("/embeddings", body=request_body, cast_to=object)
    assert srv.requests[-1].status == 400


def test_a_queued_fault_answers_an_embeddings_request_but_a_reply_is_left_for_chat(
    srv: LLMServer, client: openai.OpenAI
) -> None:
    srv.enqueue(Fault(status=503, message="overloaded"), Reply(text="for chat"))
    with pytest.raises(openai.InternalServerError, match="overloaded"):
        client.embeddings.create(input="a", model="m")
    client.embeddings.create(input="a", model="m")
    assert srv.pending == 1
    chat = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert chat.choices[0].message.content == "for chat"


def test_embeddings_count_against_the_token_rate_limit(srv: LLMServer, client: openai.OpenAI) -> None:
    srv.tpm = 100
    client.embeddings.create(input="x" * 300, model="m")  # 76 tokens
    with pytest.raises(openai.RateLimitError):
        client.embeddings.create(input="x" * 300, model="m")
