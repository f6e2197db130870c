"""Fixtures for provider wire tests: the fake LLM server, a canned-SSE server for shapes it cannot script,
and the wire protocol under test (both SDK providers, or the one a vendor's test module pins).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from aiforge.core.settings import load_settings
from aiforge.core.types import CallParams, Completion, Message
from aiforge.providers.base import Provider
from fakellm import LLMServer

SECRET = "sk-test-SECRET"
HELLO: list[Message] = [{"role": "user", "content": "hello"}]
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@dataclass(frozen=True)
class WireProtocol:
    """One SDK provider as the wire tests drive it."""

    name: str
    provider_path: str
    """``module:Class``, imported when a test asks for it."""
    url_setting: str
    key_setting: str
    model: str
    tool_finish_reason: str

    @property
    def provider_class(self) -> type[Provider]:
        module, _, attr = self.provider_path.partition(":")
        return getattr(importlib.import_module(module), attr)

    @property
    def params(self) -> CallParams:
        return CallParams(model=self.model)

    def base_url(self, server: LLMServer) -> str:
        return server.anthropic_base_url if self.name == "anthropic" else server.openai_base_url

    def settings(self, base_url: str, **overrides: Any) -> Any:
        values = {"PROVIDER": self.name, self.key_setting: SECRET, self.url_setting: base_url, **overrides}
        return load_settings(**values)


OPENAI = WireProtocol(
    "openai",
    "aiforge.providers.openai:OpenAIProvider",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "gpt-4o-mini",
    "tool_calls",
)
ANTHROPIC = WireProtocol(
    "anthropic",
    "aiforge.providers.anthropic:AnthropicProvider",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
    "claude-haiku-4-5",
    "tool_use",
)

GATEWAY = WireProtocol(
    "internal_gateway",
    "aiforge.providers.gateway:GatewayProvider",
    "GATEWAY_BASE_URL",
    "GATEWAY_API_KEY",
    "llama3",
    "tool_calls",
)
"""Chat Completions like ``OPENAI``; only tests of what differs at a gateway ask for it."""


@pytest.fixture(params=[OPENAI, ANTHROPIC], ids=lambda p: p.name)
def protocol(request: pytest.FixtureRequest) -> WireProtocol:
    """The SDK provider under test; a vendor's test module overrides this with its own."""
    return request.param


@pytest.fixture
def llm_server() -> Iterator[LLMServer]:
    """A started fake OpenAI + Anthropic server (not strict unless a test turns it on)."""
    with LLMServer() as server:
        yield server


class _CannedSSE(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    body = b""
    content_type = "text/event-stream"

    def log_message(self, format, *args):  # noqa: A002 - keep test output clean
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", self.content_type)
        self.send_header("Content-Length", str(len(self.body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(self.body)


@pytest.fixture
def canned_sse() -> Iterator[Callable[..., str]]:
    """``serve(events, content_type=...) -> base URL``: answers every POST with these SSE events, verbatim.

    For stream shapes the fake server does not produce, such as interleaved fragments of
    parallel tool calls, and for bodies of another content type.
    """
    servers: list[ThreadingHTTPServer] = []

    def serve(events: list[str], content_type: str = "text/event-stream") -> str:
        handler = type("Handler", (_CannedSSE,), {"body": "".join(events).encode(), "content_type": content_type})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
async def provider_cleanup() -> AsyncIterator[list[Provider]]:
    """Providers appended here are closed on the test's own loop, so no socket outlives its test."""
    providers: list[Provider] = []
    yield providers
    for provider in providers:
        await provider.aclose()


@pytest.fixture
def make_provider(protocol: WireProtocol, provider_cleanup: list[Provider]) -> Callable[..., Any]:
    """``make_provider(base_url, **settings)``: the protocol's provider, closed when the test ends."""

    def make(base_url: str, **overrides: Any) -> Any:
        provider_cleanup.append(provider := protocol.provider_class(protocol.settings(base_url, **overrides)))
        return provider

    return make


@pytest.fixture
def collect(protocol: WireProtocol) -> Callable[..., Any]:
    """``await collect(provider, messages=HELLO, tools=None) -> (deltas, final Completion)`` of one stream."""

    async def run(provider: Provider, messages: list[Message] = HELLO, tools: Any = None) -> tuple[list, Any]:
        deltas, final = [], None
        async for event in provider.stream(messages, tools, protocol.params):
            if isinstance(event, Completion):
                final = event
            else:
                deltas.append(event)
        return deltas, final

    return run
