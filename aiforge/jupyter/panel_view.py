"""What the chat panel shows: its widgets, each message as escaped HTML, the panel's style, and Enter-to-send.

Everything from the model or a tool is escaped: HTML in a reply is shown as text, never run.

Enter to send: ipywidgets' ``Textarea`` has no key events and its Enter only inserts a
newline. Displaying the panel also displays a few lines of JavaScript (``ENTER_TO_SEND_JS``)
that JupyterLab and Notebook 7 run for outputs of the current session: one capture-phase
``keydown`` listener on the page that, for plain Enter inside a panel's input, syncs the
text and clicks that panel's Send button; Shift+Enter keeps the newline. It needs no
extension or build. Front ends that do not run JavaScript outputs keep a plain textarea
(Enter is a newline) and the Send button.

Following the conversation (``FOLLOW_JS``, displayed with it): ipywidgets has no scroll API and
a ``column-reverse`` scroller does not stay at the bottom inside JupyterLab's widget boxes, so
one ``MutationObserver`` on the page watches every panel's transcript (panels displayed later,
or views re-rendered, included). When a transcript changes, its scroller goes to the bottom if
the user was there; if they have scrolled up to read, the panel shows a "new messages" button
instead, which jumps down. Sending from the panel follows the conversation again.

Tool rows' icons are inline SVG: they must not depend on an emoji font (⚠ and ▌ are in DejaVu).
"""

from __future__ import annotations

import html
import json
from typing import Any, NamedTuple

import ipywidgets as widgets

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

FOLLOW_JS = """\
(() => {
  if (window.__aiforgeFollow) return;
  window.__aiforgeFollow = true;
  const SLACK = 24;  // px from the bottom that still counts as "at the bottom"
  const away = new WeakSet();  // scrollers the user has scrolled up in
  const seenTop = new WeakMap();  // each scroller's scrollTop when last looked at here
  const atBottom = (el) => el.scrollHeight - el.scrollTop - el.clientHeight <= SLACK;
  const panelOf = (el) => el.closest(".aiforge-chat-panel");
  const follow = (el) => {
    away.delete(el);
    el.scrollTop = el.scrollHeight;
    seenTop.set(el, el.scrollTop);
    const panel = panelOf(el);
    if (panel) panel.classList.remove("aiforge-unread");
  };
  // Only the user moves a transcript up: this script only scrolls down, and text grows below. So a scrollTop
  // below the last one seen means "reading"; the bottom means "following". The scroll event of this script's
  // own scrolling may arrive after more text came, away from the bottom: that is not the user leaving.
  const look = (el) => {
    const top = el.scrollTop, before = seenTop.get(el);
    seenTop.set(el, top);
    if (atBottom(el)) follow(el);
    else if (before !== undefined && top < before - 1) away.add(el);
  };
  // Right when the transcript changes, not in an animation frame: frames do not run in a hidden tab, and the
  // newest text is never shown out of view for a frame. A scroll the user made since is seen by look() first.
  new MutationObserver((mutations) => {
    const changed = new Set();
    for (const m of mutations) {
      const node = m.target instanceof Element ? m.target : m.target.parentElement;
      const el = node ? node.closest(".aiforge-chat-scroller") : null;
      if (el) changed.add(el);
    }
    for (const el of changed) {
      if (!el.isConnected) continue;
      look(el);
      if (!away.has(el)) follow(el);
      else { const p = panelOf(el); if (p) p.classList.add("aiforge-unread"); }
    }
  }).observe(document.body, { childList: true, subtree: true, characterData: true });
  // Scroll events do not bubble, but a capturing listener on the document sees them.
  document.addEventListener("scroll", (event) => {
    const el = event.target;
    if (el instanceof Element && el.classList.contains("aiforge-chat-scroller")) look(el);
  }, true);
  document.addEventListener("click", (event) => {
    const hit = event.target instanceof Element ? event.target.closest(".aiforge-chat-jump, .aiforge-chat-send") : null;
    const panel = hit ? panelOf(hit) : null;
    const el = panel ? panel.querySelector(".aiforge-chat-scroller") : null;
    if (el) follow(el);
  }, true);
})();
"""
"""Keeps each panel's newest message in view unless the user has scrolled up (installed once per page)."""

PANEL_JS = ENTER_TO_SEND_JS + FOLLOW_JS
"""The JavaScript displayed with every panel."""

TRANSCRIPT_HEIGHT = "min(460px, 50vh)"
"""The transcript's height, empty or full: the panel keeps one size, and its input one place on the page."""

JUMP_HTML = "<button class='aiforge-chat-jump' type='button'>↓ New messages</button>"
"""The "new messages" affordance; hidden unless ``FOLLOW_JS`` marks the panel as having unread text."""

# Long words, URLs and code lines wrap (``overflow-wrap: anywhere`` also lets the message boxes shrink to the
# panel's width), so nothing in the transcript scrolls sideways.
STYLE = """<style>
.aiforge-chat-panel .aiforge-msg { padding: 6px 10px; margin: 3px 0; border-radius: 6px; line-height: 1.45;
  overflow-wrap: anywhere; min-width: 0; }
.aiforge-chat-panel .aiforge-user { background: var(--jp-layout-color2, #f2f2f2); white-space: pre-wrap; }
.aiforge-chat-panel .aiforge-error { color: var(--jp-error-color1, #c62828); white-space: pre-wrap; }
.aiforge-chat-panel .aiforge-msg p { margin: 0 0 .5em 0; }
.aiforge-chat-panel .aiforge-msg pre { background: var(--jp-layout-color2, #f6f8fa); padding: 6px;
  white-space: pre-wrap; overflow-wrap: anywhere; }
.aiforge-chat-panel details.aiforge-tool { font-size: 90%; margin: 2px 0 6px 0; }
.aiforge-chat-panel details.aiforge-tool pre { margin: 2px 0; white-space: pre-wrap; }
.aiforge-chat-panel .aiforge-note { opacity: .6; font-style: italic; }
.aiforge-chat-panel .aiforge-footer { opacity: .7; font-size: 85%; }
.aiforge-chat-panel .aiforge-icon { width: 1em; height: 1em; vertical-align: -0.125em; fill: currentColor; }
.aiforge-chat-panel .aiforge-chat-jump-row { display: none; position: sticky; bottom: 0; text-align: center; }
.aiforge-chat-panel.aiforge-unread .aiforge-chat-jump-row { display: flex; }
.aiforge-chat-panel .aiforge-chat-jump { cursor: pointer; border-radius: 12px; padding: 2px 12px;
  border: 1px solid var(--jp-border-color1, #bbb); background: var(--jp-layout-color1, #fff); }
</style>"""

_CURSOR = "<span class='aiforge-note'>▌</span>"
# Font Awesome's "wrench" and "triangle-exclamation" paths (CC BY 4.0), which ipywidgets ships as a font too.
_WRENCH = (
    "<svg class='aiforge-icon' viewBox='0 0 512 512' aria-label='tool'><path d='M352 320c88.4 0 160-71.6 "
    "160-160c0-15.3-2.2-30.1-6.2-44.2c-3.1-10.8-16.4-13.2-24.3-5.3l-76.8 76.8c-3 3-7.1 4.7-11.3 4.7H336c-8.8 "
    "0-16-7.2-16-16V118.6c0-4.2 1.7-8.3 4.7-11.3l76.8-76.8c7.9-7.9 5.4-21.2-5.3-24.3C382.1 2.2 367.3 0 352 "
    "0C263.6 0 192 71.6 192 160c0 19.1 3.4 37.5 9.5 54.5L19.9 396.1C7.2 408.8 0 426.1 0 444.1C0 481.6 30.4 "
    "512 67.9 512c18 0 35.3-7.2 48-19.9L297.5 310.5c17 6.2 35.4 9.5 54.5 9.5z'/></svg>"
)
_WARNING = (
    "<svg class='aiforge-icon' viewBox='0 0 512 512' aria-label='error'><path d='M256 32c14.2 0 27.3 7.5 34.5 "
    "19.8l216 368c7.3 12.4 7.3 27.7 .2 40.1S486.3 480 472 480H40c-14.3 0-27.6-7.7-34.7-20.1s-7-27.8 .2-40.1l216-"
    "368C228.7 39.5 241.8 32 256 32zm0 128c-13.3 0-24 10.7-24 24V296c0 13.3 10.7 24 24 24s24-10.7 24-24V184c0-"
    "13.3-10.7-24-24-24zm32 224a32 32 0 1 0 -64 0 32 32 0 1 0 64 0z'/></svg>"
)


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
    mark = _WARNING if call.get("error") else _WRENCH
    return (
        f"<details class='aiforge-tool'><summary>{mark} <code>{html.escape(call['tool'])}</code> "
        f"<code>{html.escape(_clip(arguments, 60))}</code> → {html.escape(_clip(output, 80))}</summary>"
        f"<div>input</div><pre>{html.escape(pretty)}</pre>"
        f"<div>output</div><pre>{html.escape(output)}</pre></details>"
    )


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class PanelWidgets(NamedTuple):
    """The panel's widgets: ``box`` holds the others (header, transcript, input, buttons, footer)."""

    header: widgets.HTML
    messages: widgets.VBox
    input: widgets.Textarea
    send: widgets.Button
    stop: widgets.Button
    new_chat: widgets.Button
    footer: widgets.HTML
    box: widgets.VBox


def panel_widgets(header_html: str) -> PanelWidgets:
    """A new panel's widgets, laid out, with ``header_html`` on top and an empty transcript; no handlers yet."""
    header = widgets.HTML(header_html)
    # The scroller scrolls, not this box: ipywidgets gives every box ``overflow: auto``, and a box that may
    # shrink inside the bounded scroller became the scrolling element, which FOLLOW_JS never scrolled.
    messages = widgets.VBox(
        layout=widgets.Layout(overflow="visible", flex="0 0 auto"), _dom_classes=["aiforge-chat-transcript"]
    )
    # The "new messages" button sticks to the scroller's bottom edge, below the messages, while it shows.
    jump = widgets.HTML(JUMP_HTML, _dom_classes=["aiforge-chat-jump-row"])
    # One fixed height (460 px, half the page on a small screen) from the start, so the input below never moves:
    # a transcript that grew with each message up to a bound pushed the input below the page until it got there.
    # Never sideways (overflow x hidden, y auto): STYLE wraps long words and code lines instead.
    scroller = widgets.VBox(
        [messages, jump],
        layout=widgets.Layout(height=TRANSCRIPT_HEIGHT, overflow="hidden auto", padding="2px 4px"),
        _dom_classes=["aiforge-chat-scroller"],
    )
    text = widgets.Textarea(
        placeholder="Message (Enter to send, Shift+Enter for a new line)",
        continuous_update=False,
        rows=3,
        layout=widgets.Layout(width="auto"),  # the panel's width; "100%" plus the widget's margins overflowed it
        _dom_classes=["aiforge-chat-input"],
    )
    send = widgets.Button(
        description="Send", button_style="primary", icon="paper-plane", _dom_classes=["aiforge-chat-send"]
    )
    stop = widgets.Button(description="Stop", icon="stop", disabled=True)
    new_chat = widgets.Button(description="New chat", icon="plus")
    footer = widgets.HTML()
    box = widgets.VBox(
        [header, scroller, text, widgets.HBox([send, stop, new_chat]), footer],
        layout=widgets.Layout(width="100%"),
        _dom_classes=["aiforge-chat-panel"],
    )
    return PanelWidgets(header, messages, text, send, stop, new_chat, footer, box)
