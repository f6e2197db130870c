"""The evaluation summary in JupyterLab in Chromium: it fits the output area, and never widens it.

Tutorial 15's summary had a column per number (accuracy, low, high, kappa, kappa_low, ...): fifteen columns,
wider than a notebook's output area at the default window size, so the output scrolled sideways. The test
renders an ``EvalResult`` of four candidates with kappa and latencies, as tutorial 15 has, into a notebook
(not trusted: JupyterLab's sanitizer applies) and measures it in a 1280 x 720 page with the file browser open:
the table fits the output area; in a 700 px wide page it scrolls inside its own box, not the output area.
Screenshot: ``test-artifacts/evaluation_table.png``. Skipped or failed like the chat panel test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

import aiforge  # noqa: F401 - registers the accessor
from aiforge import ChatAgent
from aiforge.providers.scripted import ScriptedProvider
from tests.browser.test_chat_panel_browser import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    PANEL_TIMEOUT_MS,
    LabServer,
    lab_server,
    sync_playwright,  # noqa: F401 (a fixture)
)

pytestmark = pytest.mark.browser

NAME = "evaluation_table.ipynb"
LABELS = ["billing", "shipping", "defect", "account"]


def _summary_html() -> str:
    """The HTML of an evaluation like tutorial 15's: two prompts x two models, kappa, costs and latencies."""
    rows = pd.DataFrame({"ticket": [f"ticket {n}" for n in range(24)], "category": LABELS * 6})
    truth = dict(zip(rows["ticket"], rows["category"], strict=True))

    def right(messages: list[dict[str, Any]]) -> str:
        return json.dumps(truth[messages[-1]["content"].rsplit(": ", 1)[-1]])

    class Billed(ScriptedProvider):
        free = False

    def agent(answer: Any) -> ChatAgent:
        return ChatAgent(provider=Billed(default=answer, model="gpt-4o-mini"), output_retries=0)

    result = rows.aiforge.evaluate(
        prompts={"guided": "Label this support ticket: {ticket}", "terse": "Category: {ticket}"},
        agents={"gpt-4o-mini": agent(right), "smollm-135m-instruct": agent(json.dumps("billing"))},
        truth="category",
        labels=LABELS,
    )
    return result._repr_html_()


def _notebook(page: str) -> dict:
    return {
        "cells": [
            {
                "cell_type": "code", "execution_count": 1, "id": "summary", "metadata": {}, "source": "result",
                "outputs": [{"output_type": "execute_result", "execution_count": 1, "metadata": {},
                             "data": {"text/html": page, "text/plain": "EvalResult(...)"}}],
            }
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


@pytest.fixture(scope="module")
def lab_with_summary(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    notebooks = {NAME: _notebook(_summary_html())}
    with lab_server(tmp_path_factory.mktemp("lab-evaluation"), notebooks) as server:
        yield server


MEASURE = """() => {
  const table = [...document.querySelectorAll('.jp-OutputArea-output table')][0];
  const output = table.closest('.jp-OutputArea-output');
  const scrollers = [];
  for (let el = table.parentElement; el && el !== output.parentElement; el = el.parentElement) {
    if (el.scrollWidth > el.clientWidth + 1) scrollers.push(el === output ? 'output' : el.tagName.toLowerCase());
  }
  const t = table.getBoundingClientRect(), o = output.getBoundingClientRect();
  return { table: t.width, tableRight: t.right, outputRight: o.right, output: output.clientWidth, scrollers };
}"""


@pytest.mark.parametrize("width", [1280, 700])
def test_the_summary_fits_the_output_area_or_scrolls_in_its_own_box(
    sync_playwright,  # noqa: F811
    lab_with_summary: LabServer,
    width: int,
) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": 720})
            url = f"{lab_with_summary.url}/lab/workspaces/eval{width}/tree/{NAME}?reset&token={lab_with_summary.token}"
            page.goto(url, timeout=PANEL_TIMEOUT_MS)
            page.locator(".jp-OutputArea-output table").first.wait_for(timeout=PANEL_TIMEOUT_MS)
            page.wait_for_timeout(500)
            m = page.evaluate(MEASURE)
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"evaluation_table_{width}.png"))
        finally:
            browser.close()

    print(f"{width} px page: {m}")
    assert "output" not in m["scrollers"], f"the output area scrolls sideways: {m}"
    if width == 1280:
        assert m["table"] <= m["output"] and not m["scrollers"], f"the table is wider than the output area: {m}"
    else:
        assert m["scrollers"] == ["div"], f"the table should scroll in its own box: {m}"
