"""``%chat_log``: its ``--search`` text read as typed, and the turns shown as text rather than escaped strings.

A DataFrame shows a prompt's line breaks as ``\\n`` (text) or runs them together (HTML), and a structured
reply as one line of JSON. ``LogView`` keeps the frame's data as it is and only changes how it looks: an HTML
table whose message cells keep their line breaks (``pre-wrap``, a bounded height with its own scroller), and
in a terminal one block per turn, like ``aiforge logs``.
"""

from __future__ import annotations

import html
import json
import re
import shlex
from typing import Any

from aiforge.jupyter.display import blank, html_table, viewed_frame

MESSAGES = ("prompt", "reply")
"""The columns shown as text."""
_SCROLL = "max-height:12em;overflow:auto;min-width:16em"
_SEARCH = re.compile(r"""(?:^|\s)--search(?:=|\s+)("(?:[^"\\]|\\.)*"|'[^']*'|\S+)""")


def split_search(line: str) -> tuple[str, str | None]:
    """The magic's line without its ``--search`` option, and that option's text (None without one).

    The text is taken as typed: ``--search doesn't`` or ``--search "refund`` are words to find, not
    a quotation that the shell-like option parser would reject; ``"refund OR return"`` loses its quotes.
    """
    match = _SEARCH.search(line)
    if match is None:
        return line, None
    value = match.group(1)
    if len(value) > 1 and value[0] == value[-1] and value[0] in "\"'":
        value = shlex.split(value)[0] if value[1:-1] else ""
    return line[: match.start()] + " " + line[match.end() :], value


def log_view(frame: Any) -> Any:
    """``frame`` itself (its data unchanged), shown as the turns' text with real line breaks."""
    doc = "Logged turns: a DataFrame whose notebook and terminal views read as text."
    return viewed_frame("LogView", doc, _log_html, log_text)(frame)


def _log_html(frame: Any) -> str:
    return html_table(frame, list(frame.columns), _html_cell)


def log_text(frame: Any) -> str:
    """One block per turn: a line of its figures, then ``> prompt`` and ``< reply`` with their line breaks."""
    if frame.empty:
        return "(no logged turns)"
    blocks = []
    for _, row in frame.iterrows():
        figures = " · ".join(_figures(row))
        lines = [figures] if figures else []
        for column, mark in zip(MESSAGES, "><", strict=True):
            if column in frame.columns:
                first, *rest = readable(row[column]).split("\n")
                lines += [f"  {mark} {first}", *(f"    {line}" if line else "" for line in rest)]
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def readable(value: Any) -> str:
    """A message as text: a structured reply's JSON object as ``key: value`` lines, anything else as it is."""
    if blank(value):
        return ""
    text = str(value)
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except ValueError:
            return text
        if isinstance(parsed, dict) and parsed:
            return "\n".join(f"{key}: {_field(item)}" for key, item in parsed.items())
    return text


def _field(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _html_cell(column: str, value: Any) -> str:
    if column in MESSAGES:
        return f"<div style='{_SCROLL}'>{html.escape(readable(value))}</div>"
    return "" if blank(value) else html.escape(_figure(column, value))


def _figure(column: str, value: Any) -> str:
    """A column's value as a table cell shows it (the header names it)."""
    if hasattr(value, "strftime"):
        return str(value.strftime("%Y-%m-%d %H:%M:%S"))
    if column == "cost":
        return f"${value:.6f}"
    if column.endswith("_ms"):
        return f"{value:,.0f}"
    return str(value)


def _figures(row: Any) -> list[str]:
    """A turn's figures as ``aiforge logs`` writes them: ``time · model · session s · 12+30 tokens · $0 · 850 ms``."""
    shown = []
    for column, value in row.items():
        if column in MESSAGES or column == "output_tokens" or blank(value):
            continue
        figure = _figure(str(column), value)
        if column == "input_tokens":
            figure += f"+{row['output_tokens']}" if "output_tokens" in row.index else " input"
            figure += " tokens"
        elif str(column).endswith("_ms"):
            figure += " ms" + (" queued" if column == "queue_ms" else "")
        elif column == "session":
            figure = f"session {figure}"
        shown.append(figure)
    return shown
