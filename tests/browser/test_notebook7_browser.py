"""The chat panel in Jupyter Notebook 7 (the classic-style front-end Binder links open), in Chromium.

The same generated notebook and scripted slow model as the JupyterLab test (whose server and page helpers this
reuses): the panel renders, Enter sends, tokens stream, Stop stops. Skipped or failed like that test when
Playwright, Chromium or the ``notebook`` package is missing.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from tests.browser.test_chat_panel_browser import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    PANEL_CELL,
    PANEL_TIMEOUT_MS,
    TURN_TIMEOUT,
    LabServer,
    _assistant_text,
    _free_port,
    _notebook,
    _skip_or_fail,
    _stop,
    _wait_until_up,
    _watch_turn,
    sync_playwright,  # noqa: F401 (a fixture)
)

pytestmark = pytest.mark.browser

NOTEBOOK = "chat_panel_nb7.ipynb"
KERNEL_IDLE_TIMEOUT = PANEL_TIMEOUT_MS / 1000


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    try:
        import notebook
    except ImportError:
        _skip_or_fail("the notebook package is not installed (pip install 'notebook>=7')")
    if int(notebook.__version__.split(".")[0]) < 7:
        _skip_or_fail(f"notebook {notebook.__version__} is not Notebook 7")
    base = tmp_path_factory.mktemp("nb7")
    root = base / "root"
    root.mkdir()
    (root / NOTEBOOK).write_text(json.dumps(_notebook(PANEL_CELL), indent=1))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIFORGE_") and not k.endswith("_API_KEY")}
    env.update(
        JUPYTER_CONFIG_DIR=str(base / "config"),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        JUPYTER_DATA_DIR=str(base / "data"),
        IPYTHONDIR=str(base / "ipython"),
        TQDM_DISABLE="1",
    )
    port, token = _free_port(), secrets.token_hex(16)
    log = base / "notebook.log"
    command = [
        sys.executable,
        "-m",
        "notebook",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.terminals_enabled=False",
        "--JupyterNotebookApp.news_url=None",
        "--JupyterNotebookApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
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


def _wait_for_idle_kernel(server: LabServer) -> None:
    """Notebook 7 has no status bar: ask the server until the page's kernel reports idle."""
    deadline = time.monotonic() + KERNEL_IDLE_TIMEOUT
    while time.monotonic() < deadline:
        request = urllib.request.Request(
            f"{server.url}/api/kernels", headers={"Authorization": f"token {server.token}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                kernels = json.load(response)
        except urllib.error.HTTPError as error:
            # jupyter_server answers 500 while a kernel is half started (its last_activity still None): ask again
            if error.code != 500:
                raise
            kernels = []
        if kernels and all(k["execution_state"] == "idle" for k in kernels):
            return
        time.sleep(0.5)
    raise AssertionError(f"no idle kernel within {KERNEL_IDLE_TIMEOUT:.0f} s:\n{server.log_tail()}")


def test_chat_panel_in_notebook7_renders_sends_on_enter_streams_and_stops(sync_playwright, notebook7) -> None:  # noqa: F811
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        try:
            page.goto(f"{notebook7.url}/notebooks/{NOTEBOOK}?token={notebook7.token}", timeout=PANEL_TIMEOUT_MS)
            page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=PANEL_TIMEOUT_MS)
            _wait_for_idle_kernel(notebook7)
            page.locator(".jp-NotebookPanel .jp-Cell").first.click()
            page.keyboard.press("Shift+Enter")
            panel = page.locator(".aiforge-chat-panel")
            panel.wait_for(state="visible", timeout=PANEL_TIMEOUT_MS)
            assert "scripted" in panel.inner_text()

            # Enter sends (the panel's JavaScript hook), and the answer streams: it grows while the cursor shows.
            box = panel.locator(".aiforge-chat-input textarea")
            box.fill("Hello, Notebook 7!")
            box.press("Enter")
            texts = _watch_turn(panel, done="done.")
            partial = [t for t in texts if "▌" in t]
            assert len(partial) >= 3, f"saw only {len(partial)} streaming states: {partial}"
            assert [len(t) for t in partial] == sorted(len(t) for t in partial), "the streamed text shrank"
            assert "token79 done." in texts[-1]
            assert panel.locator(".aiforge-user").first.inner_text().strip() == "Hello, Notebook 7!"

            # Stop ends a slow answer: marked stopped, it stops growing, and the panel takes input again.
            box.fill("Answer slowly, please")
            box.press("Enter")
            deadline = time.monotonic() + TURN_TIMEOUT
            while len(_assistant_text(panel)) < 80 and time.monotonic() < deadline:
                time.sleep(0.05)
            panel.get_by_role("button", name="Stop").click()
            panel.locator(".aiforge-assistant").last.get_by_text("[stopped]").wait_for(timeout=20_000)
            stopped_text = _assistant_text(panel)
            assert "the end." not in stopped_text
            time.sleep(1.0)
            assert _assistant_text(panel) == stopped_text, "the answer kept growing after Stop"
            assert panel.locator(".aiforge-chat-send").is_enabled()
            panel.screenshot(path=str(ARTIFACTS / "chat_panel_notebook7.png"))
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "chat_panel_notebook7_failure.png"), full_page=True)
            print(notebook7.log_tail())
            raise
        finally:
            browser.close()
