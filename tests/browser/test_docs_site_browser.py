"""The documentation site in a real browser: built strictly (as tests/docs/test_site.py builds it), served on
127.0.0.1 by ``http.server`` in a thread, read by Debian's Chromium through Playwright.

It opens the home, the ChatAgent API page and a tutorial with stored HTML tables and a plot, then types "cascade"
in the search box and waits for results. On every page: no image that failed to load (``naturalWidth`` 0), no
console error or uncaught exception, no request to another host (the site reads offline). One screenshot per page
in ``test-artifacts/`` (``docs_home.png``, ``docs_chatagent.png``, ``docs_tutorial.png``, ``docs_search.png``).

Skipped when Playwright or /usr/bin/chromium is missing, unless ``AIFORGE_REQUIRE_BROWSER=1`` (CI), which
turns the skip into a failure.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.browser.test_chat_panel_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, sync_playwright  # noqa: F401
from tests.docs.build import mkdocs_build

pytestmark = pytest.mark.browser

TUTORIAL = "tutorials/05_batch_dataframes/"
"""A tutorial whose stored outputs hold HTML tables and a matplotlib plot (an image/png output)."""


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep the test output clean
        pass


@pytest.fixture(scope="module")
def site_url(tmp_path_factory: pytest.TempPathFactory, sync_playwright: Any) -> Iterator[str]:  # noqa: F811
    pytest.importorskip("mkdocs", reason="the docs extra (pip install -e '.[docs]') builds the site")
    folder = tmp_path_factory.mktemp("site")
    built = mkdocs_build(folder / "site", folder)
    assert built.returncode == 0, f"mkdocs build --strict failed:\n{(built.stdout + built.stderr)[-6000:]}"
    handler = functools.partial(_QuietHandler, directory=str(folder / "site"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _broken_images(page: Any) -> list[str]:
    return page.evaluate(
        "() => Array.from(document.images).filter(i => i.complete && i.naturalWidth === 0).map(i => i.src)"
    )


def test_the_site_reads_in_chromium(sync_playwright: Any, site_url: str) -> None:  # noqa: F811
    ARTIFACTS.mkdir(exist_ok=True)
    problems: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on(
                "console",
                lambda msg: problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None,
            )
            page.on("pageerror", lambda exc: problems.append(f"uncaught: {exc}"))
            page.on(
                "request",
                lambda request: (
                    None
                    if request.url.startswith((site_url, "data:", "blob:"))
                    else problems.append(f"request to another host: {request.url}")
                ),
            )

            page.goto(site_url, wait_until="networkidle")
            assert "aiforge" in page.title()
            assert _broken_images(page) == []
            page.screenshot(path=str(ARTIFACTS / "docs_home.png"), full_page=True)

            page.goto(site_url + "reference/chat/", wait_until="networkidle")
            heading = page.locator("[id='aiforge.ChatAgent']")
            assert heading.count() == 1, "the ChatAgent API page has no aiforge.ChatAgent heading"
            assert page.locator("[id='aiforge.ChatAgent.chat']").count() == 1
            assert "system_prompt" in page.locator("article").inner_text()
            assert _broken_images(page) == []
            page.screenshot(path=str(ARTIFACTS / "docs_chatagent.png"))

            page.goto(site_url + TUTORIAL, wait_until="networkidle")
            article = page.locator("article")
            assert article.locator("table").count() >= 1, "the tutorial's stored DataFrame outputs are not tables"
            plots = article.locator("img[src^='data:image/png']")
            assert plots.count() >= 1, "the tutorial's stored plot is not shown"
            assert plots.first.evaluate("img => img.naturalWidth") > 0
            assert '"cell_type"' not in article.inner_text()
            assert _broken_images(page) == []
            page.screenshot(path=str(ARTIFACTS / "docs_tutorial.png"))

            search = page.locator("input.md-search__input")  # in the header at this width
            search.click()
            search.press_sequentially("cascade", delay=30)  # material searches on key events, not on fill
            results = page.locator(".md-search-result__item")
            results.first.wait_for(timeout=30_000)
            assert results.count() >= 1
            assert "cascade" in page.locator(".md-search-result").inner_text().lower()
            page.screenshot(path=str(ARTIFACTS / "docs_search.png"))
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "docs_failure.png"), full_page=True)
            raise
        finally:
            browser.close()
    assert not problems, "\n".join(problems)
