"""The research tool against a fake Wikipedia REST API on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar
from urllib.parse import unquote

import pytest

from aiforge.tools import make_research_tool, research

PYTHON_PAGE = {
    "type": "standard",
    "title": "Python (programming language)",
    "extract": "Python is a high-level, general-purpose programming language.",
    "content_urls": {"desktop": {"page": "https://en.wikipedia.org/wiki/Python_(programming_language)"}},
}
LONG_PAGE = {"title": "Long", "extract": "A sentence of some length. " * 200}


class _FakeWikipedia(BaseHTTPRequestHandler):
    pages: ClassVar[dict[str, dict[str, Any]]] = {
        "/page/summary/Python_(programming_language)": PYTHON_PAGE,
        "/page/summary/Long": LONG_PAGE,
    }
    user_agents: ClassVar[list[str]] = []
    hang_up: ClassVar[threading.Event] = threading.Event()
    """Set when the test ends: until then the "Slow" page never answers, however late the client gives up."""

    def do_GET(self) -> None:
        self.user_agents.append(self.headers.get("User-Agent", ""))
        if unquote(self.path) == "/page/summary/Slow":
            self.hang_up.wait(60)  # the client has given up by now, so send nothing
            return
        page = self.pages.get(unquote(self.path))
        body = json.dumps(page or {"title": "Not found."}).encode()
        self.send_response(200 if page else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def wikipedia_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeWikipedia)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    _FakeWikipedia.user_agents.clear()
    _FakeWikipedia.hang_up.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    _FakeWikipedia.hang_up.set()
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_research_returns_title_and_summary(wikipedia_url: str) -> None:
    result = make_research_tool(wikipedia_url).invoke({"topic": "Python (programming language)"})
    assert result.splitlines()[:2] == [PYTHON_PAGE["title"], PYTHON_PAGE["extract"]]


def test_research_cites_the_article(wikipedia_url: str) -> None:
    result = make_research_tool(wikipedia_url).invoke({"topic": "Python (programming language)"})
    assert result.splitlines()[-1] == "Source: https://en.wikipedia.org/wiki/Python_(programming_language)"


def test_research_trims_long_summaries_at_a_sentence(wikipedia_url: str) -> None:
    summary = make_research_tool(wikipedia_url).invoke({"topic": "Long"}).splitlines()[1]
    assert 500 < len(summary) <= 1_000
    assert summary.endswith("length.")


def test_research_reports_a_missing_article(wikipedia_url: str) -> None:
    assert make_research_tool(wikipedia_url).invoke({"topic": "xyz"}) == "No Wikipedia article found for 'xyz'."


def test_research_sends_a_descriptive_user_agent(wikipedia_url: str) -> None:
    make_research_tool(wikipedia_url).invoke({"topic": "xyz"})
    assert _FakeWikipedia.user_agents and "aiforge" in _FakeWikipedia.user_agents[0]


def test_research_reads_the_base_url_from_the_environment_at_call_time(
    wikipedia_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIFORGE_RESEARCH_BASE_URL", wikipedia_url)
    assert research.invoke({"topic": "Python (programming language)"}).startswith(PYTHON_PAGE["title"])


def test_research_says_when_wikipedia_is_unreachable(closed_port_url: str) -> None:
    result = make_research_tool(closed_port_url).invoke({"topic": "Python"})
    assert result.startswith("Error: could not reach Wikipedia")
    assert "offline" in result


def test_research_gives_up_after_the_timeout(wikipedia_url: str) -> None:
    result = make_research_tool(wikipedia_url, timeout=0.2).invoke({"topic": "Slow"})
    assert result.startswith("Error: Wikipedia did not answer within 0.2 s")
