"""Fixtures for provider wire tests: the fake LLM server, and a canned-SSE server for shapes it cannot script."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from aiforge.providers.base import Provider
from tests.support.llm_server import LLMServer


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
