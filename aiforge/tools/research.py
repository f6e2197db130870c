"""The ``research`` tool: a short summary of a topic from the Wikipedia REST API.

``make_research_tool`` builds it for another base URL (a mirror, or a test server); ``httpx`` is
imported on the first lookup. Like every built-in tool it returns text and never raises: a network
failure comes back as "Error: ...".
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

from langchain_core.tools import StructuredTool

DEFAULT_RESEARCH_BASE_URL = "https://en.wikipedia.org/api/rest_v1"
RESEARCH_BASE_URL_ENV = "AIFORGE_RESEARCH_BASE_URL"
DEFAULT_RESEARCH_TIMEOUT = 10.0
MAX_SUMMARY_CHARS = 1_000
# Wikimedia rejects requests without a descriptive User-Agent that says who is calling and how to reach them.
RESEARCH_USER_AGENT = "aiforge-kit research tool (https://pypi.org/project/aiforge-kit/)"


def _trim_text(text: str, limit: int) -> str:
    """Cut at the last sentence end (or else word break) before the limit."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    sentence_end = head.rfind(". ")
    if sentence_end > limit // 2:
        return head[: sentence_end + 1]
    return head.rsplit(" ", 1)[0] + " …"


def _format_summary(page: dict[str, Any], topic: str) -> str:
    title = page.get("title") or topic
    extract = " ".join(str(page.get("extract") or "").split())
    if not extract:
        return f"Wikipedia has an article '{title}' but no summary for it."
    lines = [title, _trim_text(extract, MAX_SUMMARY_CHARS)]
    if page.get("type") == "disambiguation":
        lines.append("(This is a disambiguation page: ask again with a more specific topic.)")
    url = page.get("content_urls", {}).get("desktop", {}).get("page")
    if url:
        lines.append(f"Source: {url}")
    return "\n".join(lines)


def _look_up_summary(topic: str, base_url: str, timeout: float) -> str:
    import httpx

    topic = topic.strip()
    if not topic:
        return "Error: the topic is empty"
    url = f"{base_url.rstrip('/')}/page/summary/{quote(topic.replace(' ', '_'), safe='')}"
    try:
        response = httpx.get(
            url,
            headers={"User-Agent": f"{RESEARCH_USER_AGENT} httpx/{httpx.__version__}", "Accept": "application/json"},
            timeout=timeout,
            follow_redirects=True,
        )
    except httpx.TimeoutException:
        return f"Error: Wikipedia did not answer within {timeout:g} s; the computer may be offline."
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        reason = str(exc) or type(exc).__name__
        return f"Error: could not reach Wikipedia at {base_url} ({reason}); the computer may be offline."
    if response.status_code == 404:
        return f"No Wikipedia article found for '{topic}'."
    if response.status_code != 200:
        return f"Error: Wikipedia answered HTTP {response.status_code} for '{topic}'."
    try:
        page = response.json()
    except ValueError:
        return "Error: Wikipedia sent an answer that is not JSON."
    if not isinstance(page, dict):
        return "Error: Wikipedia sent an answer in an unexpected shape."
    return _format_summary(page, topic)


def make_research_tool(base_url: str | None = None, timeout: float = DEFAULT_RESEARCH_TIMEOUT) -> StructuredTool:
    """Build the `research` tool for a Wikipedia REST API base URL.

    With `base_url=None` the URL is read at each call from the AIFORGE_RESEARCH_BASE_URL environment variable,
    falling back to English Wikipedia.
    """

    def research(topic: str) -> str:
        """Look up a short factual summary of a topic on English Wikipedia.

        Returns the article title, its summary (about 1,000 characters) and the source link. Use it for facts
        about people, places, organisations, events and concepts; it needs internet access.

        Args:
            topic: The topic or article title, e.g. "Alan Turing" or "Python (programming language)".
        """
        url = base_url or os.environ.get(RESEARCH_BASE_URL_ENV) or DEFAULT_RESEARCH_BASE_URL
        return _look_up_summary(topic, url, timeout)

    return StructuredTool.from_function(research, name="research", parse_docstring=True)


research = make_research_tool()
