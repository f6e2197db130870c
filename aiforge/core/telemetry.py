"""``Telemetry``: whether an agent makes OpenTelemetry spans (the ``OTEL`` setting), where they go and what they
say of its provider and of message content; OpenTelemetry's API, imported on first use.

``core/otel.py`` makes the spans; ``aiforge.core.otel`` re-exports ``Telemetry`` and ``telemetry_of``.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from aiforge.core.types import ConfigError

TRACER_NAME = "aiforge"


CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


_CONTENT_ON = frozenset({"true", "1", "span_only", "span_and_event"})


_PROVIDER_NAMES = {"openai": "openai", "anthropic": "anthropic"}
"""aiforge provider -> ``gen_ai.provider.name`` where the conventions list one; the others keep aiforge's name."""


_DEFAULT_PORTS = {"https": 443, "http": 80}


@functools.cache
def _api() -> ModuleType:
    """``opentelemetry.trace`` (imported on first use); ``ConfigError`` when opentelemetry-api is not installed."""
    try:
        from opentelemetry import trace
    except ImportError:
        raise ConfigError(
            'OTEL=True needs OpenTelemetry: pip install "aiforge-kit[otel]" (or opentelemetry-api), or turn the '
            "setting off (OTEL=False, AIFORGE_OTEL=false or OTEL: false in aiforge.yaml)"
        ) from None
    return trace


@functools.cache
def _context() -> ModuleType:
    from opentelemetry import context

    return context


@functools.cache
def _tracer() -> Any:
    from importlib.metadata import PackageNotFoundError, version

    try:
        release: str | None = version("aiforge-kit")
    except PackageNotFoundError:  # run from a source tree that was never installed
        release = None
    return _api().get_tracer(TRACER_NAME, release)


def content_wanted(setting: bool | None) -> bool:
    """Whether message content goes on spans: ``OTEL_CONTENT`` when set, else the standard environment variable."""
    if setting is not None:
        return setting
    return os.environ.get(CONTENT_ENV, "").strip().lower() in _CONTENT_ON


@dataclass(frozen=True, slots=True)
class Telemetry:
    """Where one agent's spans go and what they say of its provider; None on the agent when ``OTEL`` is off."""

    tracer: Any
    provider: str
    """``gen_ai.provider.name``."""
    content: bool
    """Message content is recorded (opted in)."""
    server: dict[str, Any]
    """``server.address`` and ``server.port`` of the provider's base URL; empty for an in-process model."""
    sends_temperature: bool = True
    """The provider is sent the temperature (``gen_ai.request.temperature`` is recorded only when it is)."""


def telemetry_of(settings: Any, provider_name: str, provider: Any) -> Telemetry | None:
    """The telemetry of an agent with these ``settings`` and ``provider``, or None when ``OTEL`` is off.

    >>> telemetry_of(load_settings(), "scripted", ScriptedProvider()) is None   # OTEL defaults to False
    True
    """
    if not settings.OTEL:
        return None
    _api()  # fails now, at the agent's construction, when opentelemetry-api is missing
    return Telemetry(
        tracer=_tracer(),
        provider=_PROVIDER_NAMES.get(provider_name, provider_name),
        content=content_wanted(settings.OTEL_CONTENT),
        server=_server(provider.base_url),
        sends_temperature=provider.temperature_unsent is None,
    )


def _server(base_url: str | None) -> dict[str, Any]:
    if not base_url:
        return {}
    parts = urlsplit(base_url)
    if not parts.hostname:
        return {}
    port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
    return {"server.address": parts.hostname, "server.port": port} if port else {"server.address": parts.hostname}
