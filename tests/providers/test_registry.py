"""The provider registry: auto resolution, custom providers, sharing of built-ins."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from aiforge import ChatAgent, register_provider
from aiforge.core.settings import load_settings
from aiforge.core.types import CallParams, Completion, ConfigError, ProviderError
from aiforge.providers import create_provider, resolve_provider_name
from aiforge.providers.base import Provider


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "AIFORGE_GATEWAY_BASE_URL",
        "AIFORGE_CONFIG",
        "AIFORGE_PROVIDER",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def test_auto_prefers_openai_when_its_key_is_set() -> None:
    s = load_settings(OPENAI_API_KEY="sk-a", ANTHROPIC_API_KEY="sk-b", GATEWAY_BASE_URL="http://x")
    assert resolve_provider_name(s) == "openai"


def test_auto_picks_anthropic_without_an_openai_key() -> None:
    assert resolve_provider_name(load_settings(ANTHROPIC_API_KEY="sk-b")) == "anthropic"


def test_auto_picks_the_gateway_without_keys() -> None:
    assert resolve_provider_name(load_settings(GATEWAY_BASE_URL="http://127.0.0.1:1/v1")) == "internal_gateway"


def test_auto_falls_back_to_the_local_model_path() -> None:
    assert resolve_provider_name(load_settings(LOCAL_MODEL_PATH="/models/any.gguf")) == "local"


def test_unknown_provider_is_a_config_error_listing_choices() -> None:
    with pytest.raises(ConfigError, match=r"unknown provider 'nope'.*openai"):
        ChatAgent(provider="nope")


def test_register_a_sync_function_provider_gets_plain_messages() -> None:
    seen: list[list[dict[str, str]]] = []

    def my_llm(messages: list[dict[str, str]], **params: object) -> str:
        seen.append(messages)
        return f"model={params['model']} saw {len(messages)} messages"

    register_provider("my_sync_llm", my_llm)
    response = ChatAgent(provider="my_sync_llm").chat("hi")
    assert response.message == "model=my_sync_llm saw 2 messages"
    assert seen[0][0]["role"] == "system" and seen[0][1] == {"role": "user", "content": "hi"}


def test_register_an_async_function_provider() -> None:
    async def my_llm(messages: list[dict[str, str]], **params: object) -> str:
        await asyncio.sleep(0)
        return "async answer"

    register_provider("my_async_llm", my_llm)
    assert ChatAgent(provider="my_async_llm").chat("hi").message == "async answer"


def test_function_provider_failure_is_a_provider_error() -> None:
    def broken(messages: list[dict[str, str]], **params: object) -> str:
        raise RuntimeError("backend down")

    register_provider("broken_llm", broken)
    with pytest.raises(ProviderError, match="backend down"):
        ChatAgent(provider="broken_llm").chat("hi")


def test_register_a_provider_subclass() -> None:
    class Shouty(Provider):
        async def complete(self, messages, tools, params: CallParams) -> Completion:
            return Completion(text=messages[-1]["content"].upper(), model="shout-1")

    register_provider("shouty", Shouty)
    response = ChatAgent(provider="shouty").chat("hello")
    assert (response.message, response.model) == ("HELLO", "shout-1")


def test_register_rejects_what_is_not_a_provider() -> None:
    with pytest.raises(ValueError, match="Provider"):
        register_provider("bad", 42)
    with pytest.raises(ValueError, match="auto"):
        register_provider("auto", lambda m, **p: "x")


def test_builtin_providers_are_shared_per_connection_settings() -> None:
    pytest.importorskip("openai")
    a = create_provider(load_settings(PROVIDER="openai", OPENAI_API_KEY="sk-one"))
    b = create_provider(load_settings(PROVIDER="openai", OPENAI_API_KEY="sk-one", TEMPERATURE=0.1))
    c = create_provider(load_settings(PROVIDER="openai", OPENAI_API_KEY="sk-two"))
    assert a is b
    assert a is not c


def test_scripted_provider_by_name_is_a_fresh_script_per_agent() -> None:
    first, second = ChatAgent(provider="scripted"), ChatAgent(provider="scripted")
    assert first.provider is not second.provider
