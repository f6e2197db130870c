"""A ``Timeline`` as HTML: plain bars in a table, inline CSS only, no script and nothing fetched.

The HTML uses only what JupyterLab's sanitizer keeps (``@jupyterlab/apputils``' ``Sanitizer``, which cleans every
HTML output of a notebook that is not trusted: a fresh clone, Binder before Run All, GitHub's viewer), so the bars
show there too: ``div``/``span``/``table`` tags, ``style`` and ``title`` attributes, and CSS values its patterns
accept. Those patterns take no ``var(...)``, so colours are concrete: mid-tone hues that read on light and dark
backgrounds, translucent greys for the track and the rule under each row, and text that inherits the theme's
colour. Bars are flex items (a spacer, then the bar), not absolutely positioned boxes. Styles are short and set
once where CSS inherits them (font size, ``white-space``), to keep a notebook's stored output small.
``tests/chat/jupyterlab_sanitizer.py`` holds the sanitizer's allowlist, against which ``tests/chat/test_timeline.py``
checks every tag, attribute and style here. Every text from a trace (tool names, errors, labels) is escaped here.
"""

from __future__ import annotations

import html
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from aiforge.core.trace_steps import Lane, Step, span_of

COLOURS = {
    "model": "#2196f3",
    "tool": "#43a047",
    "retry": "#fb8c00",
    "wait": "#9e9e9e",
    "cache": "#00897b",
    "validation": "#90caf9",
    "context": "#64b5f6",
}
ERROR_COLOUR = "#e53935"
GREY = "#8883"
"""A translucent grey (``#rgba``): the track of a bar and the rule under a row, on a light or a dark background."""
TRACK = f"display:flex;height:14px;min-width:160px;background:{GREY}"
ROW = f"border-bottom:1px solid {GREY}"
PAD = "padding:1px 6px"
CELL = f"{PAD};text-align:left"
NUMBER = f"{PAD};text-align:right"
TABLE = "border-collapse:collapse;width:100%;white-space:nowrap"
BOX = "font-size:12px;max-width:1200px"
PAINT_ORDER = ("context", "validation", "cache", "model", "tool", "wait", "retry")
"""Where steps of a batch row overlap (a model call and the pacer's wait inside it), the later kind is drawn."""
DETAIL_CHARS = 160


@dataclass(frozen=True, slots=True)
class _View:
    """What a ``core.timeline.Timeline`` shows."""

    kind: str
    lanes: Sequence[Lane]
    shown: Sequence[Lane]
    order: str
    wall_ms: float | None

    @property
    def steps(self) -> list[Step]:
        return [s for lane in self.lanes for s in lane.steps]

    @property
    def span_ms(self) -> float:
        return span_of(self.lanes, self.wall_ms)

    @property
    def cost(self) -> float:
        return sum(lane.cost for lane in self.lanes)


def timeline_html(
    kind: str, lanes: Sequence[Lane], shown: Sequence[Lane], *, order: str, wall_ms: float | None
) -> str:
    """The HTML of a timeline: one row per step for a turn (``kind`` ``turn``), one row per batch row (its steps on
    one bar) for the ``shown`` lanes of a batch, with a note on the ``lanes`` left out."""
    timeline = _View(kind, lanes, shown, order, wall_ms)
    body = _batch_table(timeline) if timeline.kind == "batch" else _turn_table(timeline)
    return (
        f"<div class='aiforge-timeline' style='{BOX}'>"
        f"<div style='font-weight:600;margin-bottom:4px'>{html.escape(_summary(timeline))}</div>"
        f"{body}{_legend(timeline)}</div>"
    )


# --- a turn: one row per step ----------------------------------------------------------------------------


def _turn_table(timeline: _View) -> str:
    span = timeline.span_ms or 1.0
    rows = "".join(_step_row(step, span) for lane in timeline.lanes for step in lane.steps)
    head = _head(["step", f"0 – {_ms(span)}", "time", "tokens", "cost", "detail"], numbers=3)
    return f"<table style='{TABLE}'>{head}{rows}</table>"


def _step_row(step: Step, span: float) -> str:
    tokens = "" if step.input_tokens is None else f"{step.input_tokens}+{step.output_tokens or 0}"
    cost = "" if step.cost is None else _dollars(step.cost)
    label = f"{step.kind} · {step.name}" if step.name else step.kind
    return (
        f"<tr style='{ROW}'><td style='{CELL}'>{html.escape(label)}</td>{_track([step], span)}"
        f"{_numbers(_ms(step.duration_ms), tokens, cost)}{_wrapping(_detail(step))}</tr>"
    )


def _detail(step: Step) -> str:
    parts = [step.model or ""]
    if step.finish_reason:
        parts.append(f"finish: {step.finish_reason}")
    if step.cached_tokens:
        parts.append(f"{step.cached_tokens} cached tokens")
    if step.attempt is not None:
        parts.append(f"attempt {step.attempt} failed, backoff {_ms(step.duration_ms)}")
    text = html.escape(" · ".join(p for p in parts if p))
    if step.error:
        error = html.escape(_short(step.error))
        text += f"{' · ' if text else ''}<span style='color:{ERROR_COLOUR}'>{error}</span>"
    return text


# --- a batch: one row per batch row ----------------------------------------------------------------------


def _batch_table(timeline: _View) -> str:
    span = timeline.span_ms or 1.0
    rows = "".join(_lane_row(lane, span) for lane in timeline.shown)
    head = _head(["row", f"0 – {_ms(span)}", "latency", "queued", "tokens", "cost", "note"], numbers=4)
    return f"<table style='{TABLE}'>{head}{rows}</table>{_cap_note(timeline)}"


def _lane_row(lane: Lane, span: float) -> str:
    if lane.error is not None:
        note = f"<span style='color:{ERROR_COLOUR}'>{html.escape(_short(lane.error))}</span>"
        bars, latency, tokens, cost = _track([], span), "", "", ""
    else:
        errors = [s.error for s in lane.steps if s.kind == "tool" and s.error]
        parts = [_count(lane.steps, "tool", "tool call"), _count(lane.steps, "retry", "retry")]
        parts.append("cached" if any(s.kind == "cache" for s in lane.steps) else "")
        note = html.escape(" · ".join(p for p in parts if p))
        if errors:
            note += f" <span style='color:{ERROR_COLOUR}'>{html.escape(_short(errors[0]))}</span>"
        bars = _track(_painted(lane.steps), span)
        latency = "" if lane.latency_ms is None else _ms(lane.latency_ms)
        tokens, cost = f"{lane.input_tokens}+{lane.output_tokens}", _dollars(lane.cost)
    queued = _ms(lane.queue_ms) if lane.queue_ms else ""
    return (
        f"<tr style='{ROW}'><td style='{CELL}'>{html.escape(str(lane.label))}</td>{bars}"
        f"{_numbers(latency, queued, tokens, cost)}{_wrapping(note)}</tr>"
    )


def _painted(steps: tuple[Step, ...]) -> list[Step]:
    """Non-overlapping pieces of ``steps``: where two overlap, the piece is the later kind's of ``PAINT_ORDER``."""
    edges = sorted({edge for s in steps for edge in (s.start_ms, s.end_ms)})
    pieces: list[Step] = []
    for left, right in zip(edges, edges[1:], strict=False):
        covering = [s for s in steps if s.start_ms <= left and s.end_ms >= right]
        if not covering:
            continue
        top = max(covering, key=lambda s: PAINT_ORDER.index(s.kind) if s.kind in PAINT_ORDER else -1)
        if pieces and pieces[-1].end_ms == left and pieces[-1].kind == top.kind and pieces[-1].name == top.name:
            pieces[-1] = replace(pieces[-1], duration_ms=right - pieces[-1].start_ms)
        else:
            pieces.append(replace(top, start_ms=left, duration_ms=right - left))
    return pieces


def _cap_note(timeline: _View) -> str:
    hidden = len(timeline.lanes) - len(timeline.shown)
    if hidden <= 0:
        return ""
    which = "slowest" if timeline.order == "slowest" else "first"
    text = (
        f"Showing the {which} {len(timeline.shown)} of {len(timeline.lanes)} rows ({hidden} not shown): "
        "timeline(max_rows=None) shows every row; .to_frame() has every step."
    )
    return f"<div style='opacity:.7;margin-top:4px;white-space:normal'>{html.escape(text)}</div>"


# --- shared pieces ---------------------------------------------------------------------------------------


def _track(steps: list[Step], span: float) -> str:
    """The bar cell: a track of ``span`` ms holding flex items, a spacer up to each step, then the step's bar."""
    out, cursor = [], 0.0
    for step in sorted(steps, key=lambda s: s.start_ms):
        start = max(step.start_ms, cursor)
        gap, width = 100.0 * (start - cursor) / span, 100.0 * max(step.end_ms - start, 0.0) / span
        colour = ERROR_COLOUR if step.kind == "tool" and step.error else COLOURS.get(step.kind, COLOURS["context"])
        title = html.escape(f"{step.kind} {step.name}: {_ms(step.duration_ms)} from {_ms(step.start_ms)}", quote=True)
        if gap >= 0.05:
            out.append(f"<div style='flex:0 0 {gap:.1f}%'></div>")
        out.append(f"<div title='{title}' style='flex:0 0 {width:.1f}%;min-width:2px;background:{colour}'></div>")
        cursor = max(cursor, step.end_ms)
    return f"<td style='{PAD};width:45%'><div style='{TRACK}'>{''.join(out)}</div></td>"


def _numbers(*texts: str) -> str:
    """Right-aligned cells, empty ones without a style."""
    return "".join(f"<td style='{NUMBER}'>{text}</td>" if text else "<td></td>" for text in texts)


def _wrapping(text: str) -> str:
    """The last cell of a row, the only one whose text wraps."""
    return f"<td style='{CELL};white-space:normal'>{text}</td>" if text else "<td></td>"


def _summary(timeline: _View) -> str:
    steps = timeline.steps
    lanes = timeline.lanes
    parts = [timeline.kind.capitalize()]
    if timeline.kind == "batch":
        parts.append(f"{len(lanes)} rows")
        if timeline.wall_ms is not None:
            parts.append(f"wall {_ms(timeline.wall_ms)}")
    else:
        lane = lanes[0]
        if lane.latency_ms is not None:
            parts.append(f"{_ms(lane.latency_ms)} own time")
    parts.append(_queued(lanes) if timeline.kind == "batch" else _queued_turn(lanes[0]))
    parts.append(_count(steps, "model", "model call") or "0 model calls")
    parts += [p for p in (_count(steps, "tool", "tool call"), _count(steps, "retry", "retry")) if p]
    tokens_in, tokens_out = sum(lane.input_tokens for lane in lanes), sum(lane.output_tokens for lane in lanes)
    parts += [f"{tokens_in}+{tokens_out} tokens", _dollars(timeline.cost)]
    return " · ".join(p for p in parts if p)


def _queued(lanes: Sequence[Lane]) -> str:
    """A batch's wait for workers (or the pacer) per row, ``"queued per row: median 12.00 s, max 23.16 s"``; empty
    when no row waited a millisecond. Rows wait at the same time, so their sum says nothing next to the wall time."""
    waits = [lane.queue_ms for lane in lanes]
    if max(waits, default=0.0) < 1.0:
        return ""
    return f"queued per row: median {_ms(statistics.median(waits))}, max {_ms(max(waits))}"


def _queued_turn(lane: Lane) -> str:
    return f"{_ms(lane.queue_ms)} queued" if lane.queue_ms else ""


def _legend(timeline: _View) -> str:
    kinds = [k for k in COLOURS if any(s.kind == k for s in timeline.steps)]
    swatches = "".join(
        f"<span style='margin-right:10px'><span style='display:inline-block;width:10px;height:10px;"
        f"background:{COLOURS[k]};margin-right:3px'></span>{k}</span>"
        for k in kinds
    )
    return f"<div style='opacity:.8;margin-top:4px'>{swatches}</div>" if swatches else ""


def _head(names: list[str], numbers: int) -> str:
    """The header row: ``names``, the ``numbers`` before the last one right-aligned over their columns."""
    styles = [CELL] * (len(names) - numbers - 1) + [NUMBER] * numbers + [CELL]
    cells = "".join(
        f"<th style='{style};opacity:.7;font-weight:500'>{html.escape(n)}</th>"
        for n, style in zip(names, styles, strict=True)
    )
    return f"<tr>{cells}</tr>"


def _count(steps: Iterable[Step], kind: str, noun: str) -> str:
    """``"2 tool calls"``: how many of ``steps`` are of ``kind``; empty for none."""
    n = sum(s.kind == kind for s in steps)
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return "" if n == 0 else f"{n} {noun if n == 1 else plural}"


def _ms(value: float) -> str:
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.1f} ms" if value < 10 else f"{value:.0f} ms"


def _dollars(value: float) -> str:
    return f"${value:.5f}"


def _short(text: str) -> str:
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 1] + "…"
