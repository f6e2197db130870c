"""A turn in a notebook cell: the streamed text updated in place (throttled), then the final bundle.

Model text reaches a Markdown output only through ``core.render`` (``safe_markdown``,
``escape_markdown``) or inside a code fence; IPython is imported when something is shown.
"""

from __future__ import annotations

import functools
import html
import json
import re
import sys
from collections.abc import Callable
from typing import Any

from aiforge.core.render import CURSOR, UPDATE_INTERVAL, Throttle, escape_markdown, safe_markdown, truncation_note

# ---------------------------------------------------------------------------
# Streaming output of a cell
# ---------------------------------------------------------------------------


def _updates_in_place() -> bool:
    """False when outputs cannot be replaced (terminal IPython prints every publication)."""
    from IPython import get_ipython
    from IPython.core.displaypub import DisplayPublisher

    shell = get_ipython()
    return shell is not None and type(shell.display_pub) is not DisplayPublisher


class StreamingDisplay:
    """A growing text shown in one cell output, updated in place and throttled.

    ``append`` adds a chunk and refreshes the output at most every ``interval`` seconds;
    ``close`` always shows the final bundle. In terminal IPython, where an output cannot be
    replaced, chunks are written to stdout as they come and ``close`` prints ``footer``.
    """

    def __init__(self, *, markdown: bool = True, interval: float = UPDATE_INTERVAL) -> None:
        self.text = ""
        self.updates = 0
        """In-place updates made so far, the final one included."""
        self.markdown = markdown
        self._throttle = Throttle(interval)
        self._handle: Any = None
        self._inline = _updates_in_place()

    def open(self) -> None:
        """Show the (empty) output, so the cell shows activity before the first token."""
        if not self._inline:
            return
        from IPython.display import display

        self._throttle.ready()
        self._handle = display({"text/plain": "…"}, raw=True, display_id=True)

    def append(self, chunk: str) -> None:
        self.text += chunk
        if not self._inline:
            sys.stdout.write(chunk)
            sys.stdout.flush()
        elif self._throttle.ready():
            self._update(partial_bundle(self.text + CURSOR, markdown=self.markdown))

    def close(self, bundle: dict[str, Any], footer: str = "") -> None:
        """Replace the streamed text with ``bundle`` (terminal: end the line, print ``footer``)."""
        if not self._inline:
            print()
            if footer:
                print(footer)
            return
        self._update(bundle)

    def _update(self, bundle: dict[str, Any]) -> None:
        if self._handle is None:
            from IPython.display import display

            self._handle = display(bundle, raw=True, display_id=True)
        else:
            self._handle.update(bundle, raw=True)
        self.updates += 1


def partial_bundle(text: str, *, markdown: bool = True, note: str = "") -> dict[str, Any]:
    """What a not-yet-final (or interrupted) answer looks like; ``note`` is appended in italics."""
    plain = text + (f"\n\n[{note}]" if note else "")
    bundle: dict[str, Any] = {"text/plain": plain}
    if markdown:
        bundle["text/markdown"] = safe_markdown(text) + (f"\n\n*\\[{escape_markdown(note)}\\]*" if note else "")
    return bundle


# ---------------------------------------------------------------------------
# The final output of a turn
# ---------------------------------------------------------------------------


def footer_text(response: Any) -> str:
    """``model · 12+30 tokens · $0.00010 · 850 ms · tools: calculator`` for a ``ChatResponse``."""
    parts = [
        response.model or response.provider or "?",
        f"{response.input_tokens}+{response.output_tokens} tokens",
        f"${response.cost:.5f}" + ("" if response.priced else " (unpriced)"),
        f"{response.latency_ms:,.0f} ms",
    ]
    if response.tool_calls:
        parts.append("tools: " + ", ".join(tc.tool for tc in response.tool_calls))
    if response.stopped_by_limit:
        parts.append("stopped at the tool-call limit")
    parts += filter(None, [truncation_note(response)])
    return " · ".join(parts)


def response_bundle(response: Any, fmt: str = "markdown") -> dict[str, Any]:
    """The MIME bundle of a finished turn in ``fmt`` (markdown, text, code or json), footer included."""
    message = response.message
    footer = footer_text(response)
    small = f"\n\n<sub>{escape_markdown(footer)}</sub>"
    if fmt == "text":
        return {"text/plain": f"{message}\n\n{footer}"}
    if fmt == "code":
        code, language = _code_of(message)
        return {"text/markdown": _fence(code, language) + small, "text/plain": code}
    if fmt == "json":
        try:
            value = json.loads(_code_of(message)[0])
        except ValueError as exc:
            note = f"\n\n*the reply is not valid JSON: {escape_markdown(str(exc))}*"
            return {"text/markdown": safe_markdown(message) + note + small, "text/plain": f"{message}\n\n{footer}"}
        pretty = json.dumps(value, indent=2, ensure_ascii=False)
        bundle: dict[str, Any] = {"text/markdown": _fence(pretty, "json") + small, "text/plain": pretty}
        return bundle
    return {"text/markdown": safe_markdown(message) + small, "text/plain": f"{message}\n\n{footer}"}


_WHOLE_FENCE = re.compile(r"\A\s*(`{3,}|~{3,})[ \t]*([\w+#.-]*)[^\n]*\n(.*?)\n[ \t]*\1[ \t]*\Z", re.S)


def _code_of(text: str) -> tuple[str, str]:
    """The code of a reply that is one fenced block (and its language), else the reply itself."""
    match = _WHOLE_FENCE.match(text)
    if match:
        return match.group(3), match.group(2)
    return text.strip("\n"), ""


def _fence(code: str, language: str = "") -> str:
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{language}\n{code}\n{ticks}"


# ---------------------------------------------------------------------------
# Structured answers
# ---------------------------------------------------------------------------


def output_type(name: str, namespace: dict[str, Any]) -> Any:
    """The ``OutputSpec`` of the type ``--output NAME`` names; a one-line UsageError otherwise."""
    from IPython.core.error import UsageError

    from aiforge.batch.request.answer import output_spec
    from aiforge.jupyter.interpolation import resolve_reference

    if name.split(".")[0].split("[")[0] not in namespace:
        raise UsageError(f"--output {name}: no type named {name!r} in the notebook; define it in a cell first")
    try:
        return output_spec(resolve_reference(name, namespace))
    except ValueError as exc:
        raise UsageError(f"--output {name}: {exc}") from None


def output_bundle(response: Any, spec: Any) -> dict[str, Any]:
    """A validated answer: a one-row DataFrame for objects (models, dataclasses, TypedDicts), else JSON."""
    import pydantic_core

    footer = footer_text(response)
    value = pydantic_core.to_jsonable_python(response.output, fallback=repr)
    if spec.is_object and isinstance(value, dict):
        import pandas as pd

        frame = pd.DataFrame([value])
        small = f"<div style='opacity:.6;font-size:85%'>{html.escape(footer)}</div>"
        plain = f"{frame.to_string(index=False)}\n\n{footer}"
        return {"text/html": frame.to_html(index=False) + small, "text/plain": plain}
    pretty = pydantic_core.to_json(value, indent=2).decode()
    return {"text/markdown": response._repr_markdown_(), "text/plain": f"{pretty}\n\n{footer}"}


# ---------------------------------------------------------------------------
# %chat_history
# ---------------------------------------------------------------------------

CELL_STYLE = "text-align:left;vertical-align:top;white-space:pre-wrap;overflow-wrap:anywhere"
"""A table cell of a transcript-like view: left-aligned, line breaks kept, long words wrapped."""


def html_table(frame: Any, columns: list[Any], cell: Callable[[Any, Any], str]) -> str:
    """An HTML table of ``frame``'s ``columns`` in ``CELL_STYLE``; ``cell(column, value)`` is a cell's escaped HTML."""
    head = "".join(f"<th style='{CELL_STYLE}'>{html.escape(str(c))}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td style='{CELL_STYLE}'>{cell(c, row[c])}</td>" for c in columns) + "</tr>"
        for _, row in frame.iterrows()
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


@functools.cache
def viewed_frame(
    name: str, doc: str, html_of: Callable[[Any], str], text_of: Callable[[Any], str] | None = None
) -> type:
    """A DataFrame class shown by ``html_of(frame)`` in a notebook (and ``text_of(frame)`` as its repr).

    Only the look changes: the data is the frame's, and a slice or a computation is a plain DataFrame again.
    """
    import pandas as pd

    namespace: dict[str, Any] = {
        "__doc__": doc,
        "_constructor": property(lambda self: pd.DataFrame),
        "_repr_html_": lambda self: html_of(self),
    }
    if text_of is not None:
        namespace["__repr__"] = lambda self: text_of(self)
    return type(name, (pd.DataFrame,), namespace)


def history_view(frame: Any) -> Any:
    """``frame`` itself (every column kept), shown left-aligned and wrapped, without its empty columns."""
    doc = "A conversation: a DataFrame whose notebook view reads like a transcript."
    return viewed_frame("HistoryFrame", doc, _history_html)(frame)


def _history_html(frame: Any) -> str:
    shown = [c for c in frame.columns if any(not blank(v) for v in frame[c])]
    return html_table(frame, shown, lambda _column, value: "" if blank(value) else html.escape(str(value)))


def blank(value: Any) -> bool:
    """None, an empty string or NaN: a cell shown empty."""
    return value is None or value == "" or (isinstance(value, float) and value != value)
