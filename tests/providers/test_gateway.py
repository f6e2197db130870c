"""The internal_gateway provider: Chat Completions at a configured URL, key and model optional."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from aiforge.core.settings import load_settings
from aiforge.core.types import AuthenticationError, CallParams, Completion, ConfigError, Message
from aiforge.providers import create_provider
from aiforge.providers.gateway import GatewayProvider
from aiforge.providers.sdk import PLACEHOLDER_KEY
from fakellm import Fault, LLMServer, Reply

SECRET = "gw-test-SECRET"
HELLO: list[Message] = [{"role": "user", "content": "hello"}]


@pytest.fixture
def make_provider(provider_cleanup: list) -> Callable[..., GatewayProvider]:
    """``make_provider(base_url, **settings)``: a GatewayProvider closed when the test ends."""

    def make(base_url: str, **overrides: Any) -> GatewayProvider:
        settings = load_settings(PROVIDER="internal_gateway", GATEWAY_BASE_URL=base_url, **overrides)
        provider_cleanup.append(provider := GatewayProvider(settings))
        return provider

    return make


def test_missing_base_url_is_a_config_error_naming_the_env_var() -> None:
    with pytest.raises(ConfigError, match="AIFORGE_GATEWAY_BASE_URL"):
        GatewayProvider(load_settings(PROVIDER="internal_gateway", GATEWAY_BASE_URL=None))


async def test_without_a_key_a_placeholder_is_sent(llm_server: LLMServer, make_provider: Any) -> None:
    await make_provider(llm_server.openai_base_url).complete(HELLO, None, CallParams(model="llama3"))
    assert llm_server.requests[-1].headers["authorization"] == f"Bearer {PLACEHOLDER_KEY}"


async def test_configured_key_is_sent(llm_server: LLMServer, make_provider: Any) -> None:
    provider = make_provider(llm_server.openai_base_url, GATEWAY_API_KEY=SECRET)
    await provider.complete(HELLO, None, CallParams(model="llama3"))
    assert llm_server.requests[-1].headers["authorization"] == f"Bearer {SECRET}"


async def test_gateway_model_is_the_default_model(llm_server: LLMServer, make_provider: Any) -> None:
    provider = make_provider(llm_server.openai_base_url, GATEWAY_MODEL="qwen3-8b")
    completion = await provider.complete(HELLO, None, CallParams(model=""))
    assert provider.default_model == "qwen3-8b"
    assert llm_server.requests[-1].model == completion.model == "qwen3-8b"


def test_default_model_without_gateway_model_is_default(make_provider: Any) -> None:
    assert make_provider("http://127.0.0.1:9/v1").default_model == "default"


async def test_max_tokens_uses_the_field_gateways_understand(llm_server: LLMServer, make_provider: Any) -> None:
    provider = make_provider(llm_server.openai_base_url)
    await provider.complete(HELLO, None, CallParams(model="llama3", max_tokens=64))
    body = llm_server.requests[-1].body
    assert body["max_tokens"] == 64 and "max_completion_tokens" not in body


async def test_stream_yields_deltas_then_completion(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Reply(text="streamed from the gateway"))
    events = [e async for e in make_provider(llm_server.openai_base_url).stream(HELLO, None, CallParams(model="m"))]
    *deltas, final = events
    assert len(deltas) > 1 and isinstance(final, Completion)
    assert "".join(deltas) == final.text == "streamed from the gateway"


async def test_rejected_key_names_gateway_api_key_and_is_redacted(llm_server: LLMServer, make_provider: Any) -> None:
    llm_server.enqueue(Fault(401, message=f"bad token {SECRET}"))
    provider = make_provider(llm_server.openai_base_url, GATEWAY_API_KEY=SECRET)
    with pytest.raises(AuthenticationError) as info:
        await provider.complete(HELLO, None, CallParams(model="m"))
    assert "GATEWAY_API_KEY" in str(info.value)
    assert info.value.provider == "internal_gateway"
    assert SECRET not in str(info.value) and SECRET not in repr(info.value)


def test_registry_shares_one_instance_per_connection_settings(llm_server: LLMServer) -> None:
    settings = load_settings(PROVIDER="internal_gateway", GATEWAY_BASE_URL=llm_server.openai_base_url)
    same = load_settings(PROVIDER="internal_gateway", GATEWAY_BASE_URL=llm_server.openai_base_url)
    other_model = load_settings(
        PROVIDER="internal_gateway", GATEWAY_BASE_URL=llm_server.openai_base_url, GATEWAY_MODEL="other"
    )
    provider = create_provider(settings)
    assert isinstance(provider, GatewayProvider)
    assert create_provider(same) is provider
    assert create_provider(other_model) is not provider


async def test_service_tier_is_sent_to_the_gateway(llm_server: LLMServer, make_provider: Any) -> None:
    completion = await make_provider(llm_server.openai_base_url).complete(
        HELLO, None, CallParams(model="llama3", service_tier="flex")
    )
    assert llm_server.requests[-1].body["service_tier"] == "flex"
    assert completion.service_tier == "flex"  # what the server says served it


async def test_a_bare_gateway_api_key_is_not_read_and_the_401_says_which_variable_is(
    llm_server: LLMServer, make_provider: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only OPENAI_/ANTHROPIC_ keys are read under their bare names: a 401 names AIFORGE_GATEWAY_API_KEY and
    says the bare GATEWAY_API_KEY set in the environment is not read (issue 30 item 10)."""
    monkeypatch.setenv("GATEWAY_API_KEY", SECRET)
    assert load_settings().GATEWAY_API_KEY is None
    llm_server.enqueue(Fault(401, message="missing token"))
    with pytest.raises(AuthenticationError) as info:
        await make_provider(llm_server.openai_base_url).complete(HELLO, None, CallParams(model="m"))
    assert llm_server.requests[-1].headers["authorization"] == f"Bearer {PLACEHOLDER_KEY}"
    message = str(info.value)
    assert "check AIFORGE_GATEWAY_API_KEY in the environment, or GATEWAY_API_KEY in aiforge.yaml" in message
    assert "(GATEWAY_API_KEY is set in the environment, but aiforge reads only AIFORGE_GATEWAY_API_KEY)" in message
    assert SECRET not in message

    monkeypatch.setenv("AIFORGE_GATEWAY_API_KEY", SECRET)  # the variable it names works, and the note goes
    llm_server.enqueue(Fault(401, message="wrong token"))
    with pytest.raises(AuthenticationError) as info:
        await make_provider(llm_server.openai_base_url).complete(HELLO, None, CallParams(model="m"))
    assert llm_server.requests[-1].headers["authorization"] == f"Bearer {SECRET}"
    assert "is set in the environment" not in str(info.value)


def test_a_missing_openai_key_names_both_environment_variables_it_is_read_from() -> None:
    from aiforge.providers.openai import OpenAIProvider

    with pytest.raises(ConfigError, match="set OPENAI_API_KEY or AIFORGE_OPENAI_API_KEY in the environment, or "):
        OpenAIProvider(load_settings(PROVIDER="openai", OPENAI_API_KEY=None))
