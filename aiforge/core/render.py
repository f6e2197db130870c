"""Untrusted model text made safe to show: Markdown with no live HTML, a small Markdown-to-HTML
renderer for widgets, key-masked error lines, and an update throttle for streaming displays.

Model text is untrusted: JupyterLab runs ``<script>`` tags and inline event handlers in the
HTML and Markdown outputs of the current session, and an ipywidgets ``HTML`` value is set as
``innerHTML``. Only the standard library and ``core.logs``'s redactor are used here, so
response types and widgets can share it.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Callable
from typing import Any

from aiforge.core.logs import redact
from aiforge.core.tokens import LOOP_FINISH_REASON

UPDATE_INTERVAL = 0.05
"""Seconds between two in-place updates of a streaming output (the last update always happens)."""
CURSOR = " ▌"


class Throttle:
    """Says when enough time has passed since the last accepted update."""

    def __init__(self, interval: float = UPDATE_INTERVAL, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self._clock = clock
        self._last: float | None = None

    def ready(self) -> bool:
        """True (and the timer restarts) when ``interval`` has passed since the last True."""
        now = self._clock()
        if self._last is not None and now - self._last < self.interval:
            return False
        self._last = now
        return True


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


def describe_error(exc: BaseException, agent: Any = None) -> str:
    """``Type: message`` with the agent's API keys, and anything shaped like a key, masked."""
    settings = getattr(agent, "settings", None)
    secrets = getattr(settings, "secrets", None)
    text = redact(str(exc), secrets() if callable(secrets) else (), mask="***")
    return f"{type(exc).__name__}: {text}"


def truncation_note(response: Any) -> str | None:
    """The short note every surface shows under a cut reply ("cut at 512 tokens; ..."), None when not cut."""
    if not getattr(response, "truncated", False):
        return None
    calls = [r for r in response.trace if r.get("step") == "model" and r.get("node") != "summary"]
    last = calls[-1] if calls else {}
    if last.get("finish_reason") == LOOP_FINISH_REASON:
        return "cut where the reply began repeating itself"
    return f"cut at {last.get('output_tokens') or response.output_tokens} tokens; set MAX_TOKENS for more"


# ---------------------------------------------------------------------------
# Untrusted text as Markdown
# ---------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~])")
_FENCE_LINE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[ \t]*([\w+#.-]*).*$")
_CODE_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
_UNSAFE_LINK = re.compile(r"\]\(\s*(?=(?:javascript|vbscript|data)\s*:)", re.I)


def escape_markdown(text: str) -> str:
    """``text`` shown literally in Markdown (no formatting, no HTML)."""
    return _MD_SPECIAL.sub(r"\\\1", text)


def _split_fences(text: str) -> list[tuple[bool, str]]:
    """(is_code, text) pieces: fenced code blocks and the prose between them; an unclosed fence runs to the end."""
    pieces: list[tuple[bool, str]] = []
    prose: list[str] = []
    code: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        if fence is None:
            match = _FENCE_LINE.match(line)
            if match:
                if prose:
                    pieces.append((False, "\n".join(prose)))
                    prose = []
                fence = match.group(1)
                code = [line]
            else:
                prose.append(line)
        else:
            code.append(line)
            stripped = line.strip()
            if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
                pieces.append((True, "\n".join(code)))
                fence, code = None, []
    if fence is not None:
        pieces.append((True, "\n".join(code)))
    if prose:
        pieces.append((False, "\n".join(prose)))
    return pieces


def safe_markdown(text: str) -> str:
    """Model text as Markdown a front end can render without running any of it.

    Outside code blocks and code spans, ``<`` becomes ``&lt;`` (so no tag, comment or
    ``<script>`` survives, and it still reads as ``<``) and ``javascript:``/``data:`` link
    targets stop being links. Code is left alone: front ends show it literally.
    """
    out: list[str] = []
    for is_code, piece in _split_fences(text):
        if is_code:
            out.append(piece)
            continue
        prose: list[str] = []
        last = 0
        for span in _CODE_SPAN.finditer(piece):
            prose.append(_neutralise(piece[last : span.start()]))
            prose.append(span.group(0))
            last = span.end()
        prose.append(_neutralise(piece[last:]))
        out.append("".join(prose))
    return "\n".join(out)


def _neutralise(prose: str) -> str:
    return _UNSAFE_LINK.sub("]\\(", prose.replace("<", "&lt;"))


# ---------------------------------------------------------------------------
# Untrusted text as HTML (widgets)
# ---------------------------------------------------------------------------

_LIST_ITEM = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_ITALIC = re.compile(
    r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])|(?<![\w_])_(?=[^\s_])(.+?)(?<=[^\s_])_(?![\w_])"
)
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^\s()]+)\)")
_STASHED = re.compile(r"\x00(\d+)\x00")


def markdown_to_html(text: str) -> str:
    """A small, safe Markdown subset as HTML: everything from ``text`` is escaped first.

    Supports paragraphs and line breaks, fenced code blocks (an unclosed one, as while
    streaming, runs to the end), inline code, bold, italic, headings, bullet and numbered
    lists, and http(s) links. Nothing in ``text`` becomes a tag or an attribute of its own.
    """
    blocks: list[str] = []
    for is_code, piece in _split_fences(text):
        if is_code:
            blocks.append(_code_block_html(piece))
        else:
            blocks.extend(_prose_html(piece))
    return "\n".join(blocks)


def _code_block_html(piece: str) -> str:
    lines = piece.split("\n")
    match = _FENCE_LINE.match(lines[0])
    language = match.group(2) if match else ""
    body = lines[1:]
    if body and match and body[-1].strip().startswith(match.group(1)):
        body = body[:-1]
    attr = f' class="language-{html.escape(language)}"' if language else ""
    return f"<pre><code{attr}>{html.escape(chr(10).join(body))}</code></pre>"


def _prose_html(piece: str) -> list[str]:
    blocks: list[str] = []
    paragraph: list[str] = []
    items: list[str] = []
    ordered = False

    def flush_paragraph() -> None:
        if paragraph:
            blocks.append("<p>" + "<br>".join(_inline_html(line) for line in paragraph) + "</p>")
            paragraph.clear()

    def flush_list() -> None:
        if items:
            tag = "ol" if ordered else "ul"
            blocks.append(f"<{tag}>" + "".join(f"<li>{item}</li>" for item in items) + f"</{tag}>")
            items.clear()

    for line in piece.split("\n"):
        if not line.strip():
            flush_paragraph()
            flush_list()
            continue
        heading = _HEADING.match(line)
        item = _LIST_ITEM.match(line)
        if heading:
            flush_paragraph()
            flush_list()
            level = min(len(heading.group(1)) + 2, 6)
            blocks.append(f"<h{level}>{_inline_html(heading.group(2))}</h{level}>")
        elif item:
            flush_paragraph()
            is_ordered = item.group(2)[0].isdigit()
            if items and is_ordered != ordered:
                flush_list()
            ordered = is_ordered
            items.append(_inline_html(item.group(3)))
        elif items and line.startswith((" ", "\t")):
            items[-1] += "<br>" + _inline_html(line.strip())
        else:
            flush_list()
            paragraph.append(line)
    flush_paragraph()
    flush_list()
    return blocks


def _inline_html(text: str) -> str:
    out: list[str] = []
    last = 0
    for span in _CODE_SPAN.finditer(text):
        out.append(_emphasis_html(text[last : span.start()]))
        out.append(f"<code>{html.escape(span.group(2).strip() or span.group(2))}</code>")
        last = span.end()
    out.append(_emphasis_html(text[last:]))
    return "".join(out)


def _emphasis_html(text: str) -> str:
    links: list[str] = []

    def stash(match: re.Match[str]) -> str:
        # Links are set aside so emphasis never rewrites a URL.
        links.append(
            f'<a href="{match.group(2)}" target="_blank" rel="noopener noreferrer">{_emphasis(match.group(1))}</a>'
        )
        return f"\x00{len(links) - 1}\x00"

    escaped = _LINK.sub(stash, html.escape(text.replace("\x00", "")))
    return _STASHED.sub(lambda m: links[int(m.group(1))], _emphasis(escaped))


def _emphasis(escaped: str) -> str:
    escaped = _BOLD.sub(r"<strong>\2</strong>", escaped)
    return _ITALIC.sub(lambda m: f"<em>{m.group(1) or m.group(2)}</em>", escaped)


def replace_lone_surrogates(text: str) -> str:
    """``text`` with lone surrogates (from ``surrogateescape`` decoding) replaced by U+FFFD.

    Such strings cannot be encoded as UTF-8, so one in a tool result or tool argument would make
    every later request of the conversation fail inside the HTTP client.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text
