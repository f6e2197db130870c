"""Ollama, LM Studio, vLLM and llama-server: keyless Chat Completions endpoints against the fake server."""

from __future__ import annotations

import pytest

from aiforge import ChatAgent
from aiforge.core.settings import load_settings
from aiforge.providers import create_provider, resolve_provider_name
from aiforge.providers.local_servers import ollama_base_url
from aiforge.providers.sdk import PLACEHOLDER_KEY
from fakellm import LLMServer, Reply

URL_SETTINGS = {
    "ollama": ("OLLAMA_HOST", "http://127.0.0.1:11434/v1"),
    "lmstudio": ("LMSTUDIO_BASE_URL", "http://localhost:1234/v1"),
    "vllm": ("VLLM_BASE_URL", "http://localhost:8000/v1"),
    "llamacpp": ("LLAMACPP_BASE_URL", "http://localhost:8080/v1"),
}


@pytest.fixture(params=list(URL_SETTINGS))
def server_name(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    return request.param


def test_default_urls(server_name: str) -> None:
    provider = create_provider(load_settings(PROVIDER=server_name))
    assert provider.base_url == URL_SETTINGS[server_name][1].replace("127.0.0.1", "localhost")


def test_chat_needs_no_key_passes_model_and_costs_nothing(server_name: str) -> None:
    setting = URL_SETTINGS[server_name][0]
    with LLMServer() as server:
        server.enqueue(Reply("Paris.", stop_reason="length"))
        url = server.openai_base_url if setting != "OLLAMA_HOST" else server.openai_base_url.removesuffix("/v1")
        agent = ChatAgent(provider=server_name, MODEL="llama3.2", MAX_TOKENS=5, **{setting: url})
        response = agent.chat("Capital of France?")
        request = server.requests[-1]
    assert response.message == "Paris."
    assert request.model == "llama3.2"
    assert request.headers["authorization"] == f"Bearer {PLACEHOLDER_KEY}"
    assert request.json["max_tokens"] == 5
    assert response.cost == 0.0 and response.priced
    assert response.provider == server_name
    assert response.truncated is True


def test_auto_never_picks_a_local_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "localhost:11434")
    settings = load_settings(VLLM_BASE_URL="http://localhost:8000/v1", OPENAI_API_KEY="sk-x")
    assert resolve_provider_name(settings) == "openai"


@pytest.mark.parametrize(
    ("host", "url"),
    [
        (None, "http://localhost:11434/v1"),
        ("0.0.0.0", "http://127.0.0.1:11434/v1"),
        ("0.0.0.0:9999", "http://127.0.0.1:9999/v1"),
        ("https://ollama.example.com", "https://ollama.example.com:11434/v1"),
        ("http://box:11434/", "http://box:11434/v1"),
        ("http://box:11434/v1", "http://box:11434/v1"),
    ],
)
def test_ollama_host_as_ollama_reads_it(host: str | None, url: str) -> None:
    assert ollama_base_url(host) == url


def test_ollama_reads_its_own_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:11500")
    assert create_provider(load_settings(PROVIDER="ollama")).base_url == "http://gpu-box:11500/v1"
