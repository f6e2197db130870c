"""What the chat panel shows: each message as escaped HTML, the panel's style, and Enter-to-send.

Everything from the model or a tool is escaped: HTML in a reply is shown as text, never run.

Enter to send: ipywidgets' ``Textarea`` has no key events and its Enter only inserts a
newline. Displaying the panel also displays a few lines of JavaScript (``ENTER_TO_SEND_JS``)
that JupyterLab and Notebook 7 run for outputs of the current session: one capture-phase
``keydown`` listener on the page that, for plain Enter inside a panel's input, syncs the
text and clicks that panel's Send button; Shift+Enter keeps the newline. It needs no
extension or build. Front ends that do not run JavaScript outputs keep a plain textarea
(Enter is a newline) and the Send button.
"""

from __future__ import annotations

import html
import json
from typing import Any

from aiforge.core.render import markdown_to_html

ENTER_TO_SEND_JS = """\
(() => {
  if (window.__aiforgeEnterToSend) return;
  window.__aiforgeEnterToSend = true;
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
    const box = event.target instanceof Element ? event.target.closest(".aiforge-chat-input") : null;
    if (!box) return;
    event.preventDefault();
    event.stopPropagation();
    const panel = box.closest(".aiforge-chat-panel");
    const send = panel ? panel.querySelector(".aiforge-chat-send") : null;
    if (!send || send.disabled) return;
    event.target.dispatchEvent(new Event("change", { bubbles: true }));
    send.click();
  }, true);
})();
"""
"""The Enter-to-send hook displayed with every panel (installed once per page)."""

STYLE = """<style>
.aiforge-chat-panel .aiforge-msg { padding: 6px 10px; margin: 3px 0; border-radius: 6px; line-height: 1.45; }
.aiforge-chat-panel .aiforge-user { background: var(--jp-layout-color2, #f2f2f2); white-space: pre-wrap; }
.aiforge-chat-panel .aiforge-error { color: var(--jp-error-color1, #c62828); white-space: pre-wrap; }
.aiforge-chat-panel .aiforge-msg p { margin: 0 0 .5em 0; }
.aiforge-chat-panel .aiforge-msg pre { background: var(--jp-layout-color2, #f6f8fa); padding: 6px; overflow-x: auto; }
.aiforge-chat-panel details.aiforge-tool { font-size: 90%; margin: 2px 0 6px 0; }
.aiforge-chat-panel details.aiforge-tool pre { margin: 2px 0; white-space: pre-wrap; }
.aiforge-chat-panel .aiforge-note { opacity: .6; font-style: italic; }
.aiforge-chat-panel .aiforge-footer { opacity: .7; font-size: 85%; }
</style>"""

_CURSOR = "<span class='aiforge-note'>▌</span>"


def render_entry(entry: dict[str, Any], *, streaming: bool = False) -> str:
    """The HTML of one transcript entry (user, assistant with its tool rows, or error)."""
    role = entry["role"]
    if role == "user":
        return f"<div class='aiforge-msg aiforge-user'>{html.escape(entry['content'])}</div>"
    if role == "error":
        return f"<div class='aiforge-msg aiforge-error'>⚠ {html.escape(entry['content'])}</div>"
    tools = "".join(_tool_row(call) for call in entry.get("tool_calls", ()))
    body = markdown_to_html(entry["content"])
    if streaming:
        body += _CURSOR
    elif entry.get("stopped"):
        body += "<p class='aiforge-note'>[stopped]</p>"
    return f"<div class='aiforge-msg aiforge-assistant'>{tools}{body}</div>"


def _tool_row(call: dict[str, Any]) -> str:
    arguments = json.dumps(call["input"], ensure_ascii=False, default=str)
    pretty = json.dumps(call["input"], ensure_ascii=False, indent=2, default=str)
    output = call["output"] or ""
    mark = "⚠" if call.get("error") else "🔧"
    return (
        f"<details class='aiforge-tool'><summary>{mark} <code>{html.escape(call['tool'])}</code> "
        f"<code>{html.escape(_clip(arguments, 60))}</code> → {html.escape(_clip(output, 80))}</summary>"
        f"<div>input</div><pre>{html.escape(pretty)}</pre>"
        f"<div>output</div><pre>{html.escape(output)}</pre></details>"
    )


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
