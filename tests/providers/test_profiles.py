"""What each provider is and can do, declared as data on it (its profile): the layers above read only this."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aiforge import register_provider
from aiforge.core.settings import load_settings
from aiforge.core.types import CallParams, Completion, Message, ProviderError, ToolSpec
from aiforge.providers import _BUILTIN, builtin_class, create_provider
from aiforge.providers.base import Provider
from aiforge.providers.function import FunctionProvider
from aiforge.providers.local import defaults
from aiforge.providers.prompted import PromptedTools
from aiforge.providers.scripted import ScriptedProvider

# name: (structured output, embedded, default temperature, base URL from these settings)
PROFILES = {
    "openai": ("json_schema", False, None, "https://api.openai.com/v1"),
    "internal_gateway": ("json_schema", False, None, "http://gateway.test/v1"),
    "anthropic": ("output_config", False, None, "https://api.anthropic.com"),
    "local": ("grammar", True, defaults.TEMPERATURE, None),
    "scripted": ("scripted", False, None, None),
    "ollama": ("json_schema", False, None, "http://localhost:11434/v1"),
    "lmstudio": ("json_schema", False, None, "http://localhost:1234/v1"),
    "vllm": ("json_schema", False, None, "http://localhost:8000/v1"),
    "llamacpp": ("json_schema", False, None, "http://localhost:8080/v1"),
}
SETTINGS = {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-ant-test", "GATEWAY_BASE_URL": "http://gateway.test/v1"}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith(("AIFORGE_", "OPENAI_", "ANTHROPIC_")) or name == "OLLAMA_HOST":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def test_every_builtin_has_a_profile() -> None:
    assert set(PROFILES) == set(_BUILTIN)


@pytest.mark.parametrize("name", list(PROFILES))
def test_each_builtin_declares_its_capabilities(name: str) -> None:
    structured_output, embedded, default_temperature, base_url = PROFILES[name]
    cls = builtin_class(name)
    assert cls.name == name
    assert cls.structured_output == structured_output
    assert cls.embedded is embedded
    assert cls.default_temperature == default_temperature
    settings = load_settings(PROVIDER=name, **SETTINGS)
    assert cls.configured_base_url(settings) == base_url


@pytest.mark.parametrize("name", [name for name in PROFILES if name != "local"])  # local needs the weights
def test_an_instance_reads_its_profile(name: str) -> None:
    settings = load_settings(PROVIDER=name, **SETTINGS)
    provider = create_provider(settings, name)
    assert provider.registry_name == name
    assert provider.base_url == PROFILES[name][3]
    if provider.base_url is not None:  # an SDK provider's model, read without making one (a replay-only cassette)
        assert provider.default_model == type(provider).configured_model(settings)


def test_only_the_embedded_model_picks_its_own_temperature() -> None:
    # ChatAgent sends temperature=None to it until the user sets TEMPERATURE (tests/embedded/test_local_defaults.py).
    assert [name for name in PROFILES if builtin_class(name).default_temperature is not None] == ["local"]


def test_a_custom_provider_has_the_base_profile() -> None:
    class Echo(Provider):
        async def complete(
            self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams
        ) -> Completion:
            return Completion(text="echo")

    echo = Echo()
    assert (echo.registry_name, echo.base_url, echo.embedded, echo.default_temperature) == ("custom", None, False, None)
    assert echo.structured_output == "prompted"
    assert Echo.configured_model(load_settings()) == "default"


def test_a_function_provider_is_registered_under_its_name_and_prompted() -> None:
    register_provider("shouty", lambda messages, **params: "HI")
    provider = create_provider(load_settings(PROVIDER="shouty"), "shouty")
    assert isinstance(provider, FunctionProvider)
    assert provider.registry_name == "shouty"
    assert provider.structured_output == "prompted" and PromptedTools(provider).structured_output == "prompted"
    with pytest.raises(ProviderError, match="the shouty provider has no Batch API") as caught:
        provider.batch_api()
    assert caught.value.provider == "shouty"


def test_the_scripted_provider_is_in_process() -> None:
    scripted = ScriptedProvider()
    assert scripted.base_url is None and scripted.registry_name == "scripted"
