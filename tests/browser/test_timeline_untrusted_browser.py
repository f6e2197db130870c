"""Tutorial 15's stored trace views, opened untrusted in JupyterLab in Chromium: the bars and swatches still show.

A notebook nobody ran here (a fresh clone, Binder before Run All) is untrusted, and JupyterLab passes its HTML
outputs through its sanitizer. The notebook goes to the server through the contents API, unsigned, with one more
output: a box coloured the way the view used to be (``var(--jp-...)``), which the sanitizer strips, to show the
page really sanitizes. Reuses the JupyterLab server of the chat panel test; skipped or failed like it.
"""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

import pytest

from tests.browser.test_chat_panel_browser import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    PANEL_TIMEOUT_MS,
    LabServer,
    lab,  # noqa: F401 (a fixture)
    sync_playwright,  # noqa: F401 (a fixture)
)

pytestmark = pytest.mark.browser

TUTORIAL = Path(__file__).resolve().parents[2] / "notebooks" / "15_evaluate_and_trace.ipynb"
NAME = "untrusted_timeline.ipynb"
SCREENSHOT = ARTIFACTS / "timeline_untrusted.png"
SCREENSHOT_DARK = ARTIFACTS / "timeline_untrusted_dark.png"
CONTROL = "<div class='theme-var-control' style='background: var(--jp-brand-color1, #1976d2); height: 10px'></div>"

MEASURE = """() => [...document.querySelectorAll('.aiforge-timeline')].map(view => ({
    bars: [...view.querySelectorAll('div[title]')].map(bar => ({
        colour: getComputedStyle(bar).backgroundColor, width: bar.getBoundingClientRect().width})),
    swatches: [...view.querySelectorAll('span > span')].map(s => getComputedStyle(s).backgroundColor),
    header: view.firstElementChild.textContent,
}))"""
TRANSPARENT = "rgba(0, 0, 0, 0)"


def _put_untrusted(server: LabServer) -> None:
    """Save tutorial 15, plus the control output, through the contents API: the server signs nothing it is sent."""
    notebook = json.loads(TUTORIAL.read_text())
    notebook["cells"].append({
        "cell_type": "code", "execution_count": 99, "id": "control", "metadata": {}, "source": "control",
        "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"text/html": CONTROL}}],
    })
    body = json.dumps({"type": "notebook", "format": "json", "content": notebook}).encode()
    request = urllib.request.Request(
        f"{server.url}/api/contents/{NAME}", data=body, method="PUT",
        headers={"Authorization": f"token {server.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status in (200, 201)


def test_tutorial_15s_stored_timelines_show_their_bars_untrusted(sync_playwright, lab: LabServer) -> None:  # noqa: F811
    _put_untrusted(lab)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{lab.url}/lab/tree/{NAME}?token={lab.token}")
            views = page.locator(".aiforge-timeline")
            views.first.wait_for(state="attached", timeout=PANEL_TIMEOUT_MS)
            control = page.locator(".theme-var-control")
            control.scroll_into_view_if_needed()
            control_colour = control.evaluate("e => getComputedStyle(e).backgroundColor")
            views.last.scroll_into_view_if_needed()
            page.wait_for_timeout(500)
            measured = page.evaluate(MEASURE)
            ARTIFACTS.mkdir(exist_ok=True)
            cell = views.last.locator("xpath=ancestor::div[contains(@class, 'jp-Cell')][1]")
            cell.screenshot(path=str(SCREENSHOT))
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Settings$")).click()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Theme$")).hover()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^JupyterLab Dark$")).click()
            page.locator("body[data-jp-theme-light='false']").wait_for(state="attached", timeout=30_000)
            page.wait_for_timeout(500)
            cell.screenshot(path=str(SCREENSHOT_DARK))
        finally:
            browser.close()

    assert control_colour == TRANSPARENT  # the notebook is untrusted: the theme variable was stripped
    assert len(measured) == 2  # the turn and the batch
    for view in measured:
        assert view["bars"] and all(bar["colour"] != TRANSPARENT for bar in view["bars"])
        assert view["swatches"] and all(colour != TRANSPARENT for colour in view["swatches"])
    batch = measured[-1]
    assert "queued per row: median" in batch["header"]
    assert all(bar["width"] >= 2 for bar in batch["bars"])  # on screen, each at least its minimum width
