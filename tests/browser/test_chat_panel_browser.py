"""The chat panel in a real browser: JupyterLab on 127.0.0.1, driven by Debian's Chromium through Playwright.

A generated notebook builds a ``ChatPanel`` on a scripted agent that streams slowly (0.05 s per chunk), so
the test can watch an answer grow, see a calculator tool row, stop a long answer and start a new chat.
A screenshot of the panel is saved as ``test-artifacts/chat_panel.png``.

Skipped when Playwright or /usr/bin/chromium is missing, unless ``AIFORGE_REQUIRE_BROWSER=1`` (CI), which
turns the skip into a failure. Playwright never downloads a browser here: it launches /usr/bin/chromium.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
SCREENSHOT = ARTIFACTS / "chat_panel.png"
"""The panel alone; ``chat_panel_lab.png`` is the whole JupyterLab page at the same moment."""

SERVER_START_TIMEOUT = 120.0
PANEL_TIMEOUT_MS = 180_000  # kernel start + first import of langgraph/ipywidgets on a busy CI machine
TURN_TIMEOUT = 60.0

# The notebook the browser runs: a panel whose scripted model streams slowly and deterministically.
PANEL_CELL = """\
from aiforge import ChatAgent, ChatPanel, ScriptedProvider
from aiforge.tools import builtin_tools
from aiforge.providers.scripted import tool_call


def model(messages):
    last = messages[-1]
    if last["role"] == "tool":
        return f"The calculator says {last['content']}."
    if "calculator" in last["content"]:
        return tool_call("calculator", expression="17 * 23")
    if "slowly" in last["content"]:
        return "This answer takes a long time: " + "and it goes on " * 300 + "the end."
    return "Streaming answer: " + " ".join(f"token{i}" for i in range(80)) + " done."


slow_model = ScriptedProvider(default=model, delay=0.05, chunk_size=2)
panel = ChatPanel(agent=ChatAgent(provider=slow_model, tools=builtin_tools()))
panel
"""

# JupyterLab would otherwise ask about news and updates in a toast over the page.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
}


# Read at import: the per-test isolation fixture clears AIFORGE_* variables.
REQUIRE_BROWSER = os.environ.get("AIFORGE_REQUIRE_BROWSER") == "1"


def _skip_or_fail(reason: str) -> None:
    if REQUIRE_BROWSER:
        pytest.fail(f"AIFORGE_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def sync_playwright():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _skip_or_fail("playwright is not installed (pip install playwright; the browser comes from apt)")
    if not CHROMIUM.is_file() or not os.access(CHROMIUM, os.X_OK):
        _skip_or_fail(f"{CHROMIUM} is missing (apt-get install chromium)")
    return sync_playwright


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _notebook(source: str) -> dict:
    return {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": "panel",
                "metadata": {},
                "outputs": [],
                "source": source,
            }
        ],
        "metadata": {
            "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


@dataclass
class LabServer:
    url: str
    token: str
    process: subprocess.Popen
    log: Path

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"

    def api(self, path: str, method: str = "GET") -> int:
        request = urllib.request.Request(
            f"{self.url}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status


def _wait_until_up(server: LabServer) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {server.process.returncode}:\n{server.log_tail()}")
        try:
            if server.api("/api/status") == 200:
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    raise RuntimeError(f"jupyter lab did not answer within {SERVER_START_TIMEOUT:.0f} s:\n{server.log_tail()}")


def _stop(server: LabServer) -> None:
    """Ask the server to shut down (it stops its kernels), then make sure its process group is gone."""
    try:
        server.api("/api/shutdown", method="POST")
        server.process.wait(timeout=20)
    except (urllib.error.URLError, ConnectionError, TimeoutError, subprocess.TimeoutExpired):
        pass
    if server.process.poll() is None:
        os.killpg(server.process.pid, signal.SIGTERM)
        try:
            server.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait(timeout=10)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    base = tmp_path_factory.mktemp("lab")
    root, settings = base / "root", base / "user-settings"
    root.mkdir()
    (root / "chat_panel_test.ipynb").write_text(json.dumps(_notebook(PANEL_CELL), indent=1))
    for name, values in LAB_SETTINGS.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))

    env = {k: v for k, v in os.environ.items() if not k.startswith("AIFORGE_") and not k.endswith("_API_KEY")}
    env.update(
        JUPYTER_CONFIG_DIR=str(base / "config"),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        JUPYTER_DATA_DIR=str(base / "data"),  # notebook-signing key; extensions and kernels come from sys.prefix
        IPYTHONDIR=str(base / "ipython"),
        TQDM_DISABLE="1",
    )
    port, token = _free_port(), secrets.token_hex(16)
    log = base / "jupyter.log"
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={settings}",
        f"--LabApp.workspaces_dir={base / 'workspaces'}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
        "--ServerApp.terminals_enabled=False",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # CI containers run as root
    with log.open("w") as log_file:
        process = subprocess.Popen(
            command, cwd=root, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = LabServer(url=f"http://127.0.0.1:{port}", token=token, process=process, log=log)
    try:
        _wait_until_up(server)
        yield server
    finally:
        _stop(server)
        shutil.rmtree(base / "runtime", ignore_errors=True)


# ---------------------------------------------------------------------------------------------------------------


def _wait_for_idle_kernel(page) -> None:
    """Wait until the notebook's kernel is up; running cells earlier makes JupyterLab ask for a kernel."""
    page.locator(".jp-StatusBar-TextItem", has_text=re.compile(r"\| Idle")).first.wait_for(timeout=PANEL_TIMEOUT_MS)


def _accept_kernel_dialog(page) -> None:
    dialog = page.locator(".jp-Dialog", has_text="Select Kernel")
    if dialog.count() and dialog.first.is_visible():
        dialog.first.get_by_role("button", name="Select").click()


def _run_all_cells(page) -> None:
    _wait_for_idle_kernel(page)
    _accept_kernel_dialog(page)
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()


def _assistant_text(panel) -> str:
    messages = panel.locator(".aiforge-assistant")
    return messages.last.inner_text() if messages.count() else ""


def _watch_turn(panel, done: str, timeout: float = TURN_TIMEOUT) -> list[str]:
    """Poll the last assistant message until it contains ``done`` with no streaming cursor; returns each new text."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = _assistant_text(panel)
        if text and (not seen or text != seen[-1]):
            seen.append(text)
        if done in text and "▌" not in text:
            return seen
        time.sleep(0.02)
    raise AssertionError(f"the answer did not complete within {timeout:.0f} s; last texts: {seen[-3:]}")


def _send(panel, text: str) -> None:
    box = panel.locator(".aiforge-chat-input textarea")
    box.fill(text)
    panel.locator(".aiforge-chat-send").click()


def test_chat_panel_streams_shows_tools_stops_and_starts_over(sync_playwright, lab: LabServer) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "chat_panel_failure.png").unlink(missing_ok=True)  # from an earlier failed run
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        try:
            page.goto(f"{lab.url}/lab/tree/chat_panel_test.ipynb?token={lab.token}", timeout=PANEL_TIMEOUT_MS)
            page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=PANEL_TIMEOUT_MS)
            _run_all_cells(page)
            panel = page.locator(".aiforge-chat-panel")
            panel.wait_for(state="visible", timeout=PANEL_TIMEOUT_MS)
            assert "scripted" in panel.inner_text()  # the provider label

            # 1. The answer streams: the text shown grows at least twice before it is complete.
            _send(panel, "Hello, panel!")
            texts = _watch_turn(panel, done="done.")
            partial = [t for t in texts if "▌" in t]
            assert len(partial) >= 3, f"saw only {len(partial)} streaming states: {partial}"
            lengths = [len(t) for t in partial]
            assert lengths == sorted(lengths), "the streamed text shrank"
            assert "token79 done." in texts[-1]

            # 2. A calculator question shows a tool row with the tool's input and output.
            _send(panel, "Use the calculator for 17 * 23")
            _watch_turn(panel, done="The calculator says 391.")
            tool_row = panel.locator(".aiforge-assistant").last.locator("details.aiforge-tool")
            tool_row.wait_for(timeout=10_000)
            summary = tool_row.locator("summary").inner_text()
            assert "calculator" in summary and "17 * 23" in summary and "391" in summary, summary

            # 3. Stop cancels a slow answer: it is marked stopped, stops growing, and the panel takes input again.
            _send(panel, "Answer slowly, please")
            stop = panel.get_by_role("button", name="Stop")
            deadline = time.monotonic() + TURN_TIMEOUT
            while len(_assistant_text(panel)) < 80 and time.monotonic() < deadline:
                time.sleep(0.05)
            stop.click()
            panel.locator(".aiforge-assistant").last.get_by_text("[stopped]").wait_for(timeout=20_000)
            stopped_text = _assistant_text(panel)
            assert "the end." not in stopped_text
            time.sleep(1.0)
            assert _assistant_text(panel) == stopped_text, "the answer kept growing after Stop"
            assert panel.locator(".aiforge-chat-send").is_enabled()

            panel.screenshot(path=str(SCREENSHOT))
            page.screenshot(path=str(ARTIFACTS / "chat_panel_lab.png"))

            # 4. New chat clears the transcript.
            assert panel.locator(".aiforge-msg").count() == 6
            panel.get_by_role("button", name="New chat").click()
            page.wait_for_function(
                "() => document.querySelectorAll('.aiforge-chat-panel .aiforge-msg').length === 0", timeout=20_000
            )

            # 5. Enter sends too (the panel's small JavaScript hook); Shift+Enter would add a newline.
            box = panel.locator(".aiforge-chat-input textarea")
            box.fill("Hello again")
            box.press("Enter")
            _watch_turn(panel, done="done.")
            assert panel.locator(".aiforge-user").first.inner_text().strip() == "Hello again"
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "chat_panel_failure.png"), full_page=True)
            print(lab.log_tail())
            raise
        finally:
            browser.close()
