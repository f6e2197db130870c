"""The response of one chat turn, ``ChatResponse``, with its notebook views and its rows in a batch's table.

Each tool call of the turn is a ``ToolCallRecord`` (``chat.tool_call_record``, importable from here too).
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from aiforge.batch.request.scored import label_message
from aiforge.chat.tool_call_record import ToolCallRecord as ToolCallRecord
from aiforge.chat.tool_call_record import shortened

if TYPE_CHECKING:
    import pandas as pd

    from aiforge.core.output import OutputSpec
    from aiforge.core.timeline import Timeline
    from aiforge.core.types import TraceRecord
else:
    # What pydantic checks a record against: a dict, every key kept. (``TraceRecord`` is a dict at run time;
    # pydantic refuses a ``typing.TypedDict`` before Python 3.12, and would drop the keys a record's step lacks.)
    TraceRecord = dict[str, Any]

TRACE_COLUMNS = [
    "step", "node", "name", "model", "input", "output", "error",
    "input_tokens", "output_tokens", "cost", "latency_ms",
]

BATCH_COLUMNS = [
    "input", "message", "model", "input_tokens", "output_tokens", "cached_tokens", "cost", "priced",
    "latency_ms", "iterations", "tool_calls", "error", "trace_id", "cached", "truncated",
    "packed", "confidence",
]
"""The columns of ``BatchResult.to_dataframe`` for a batch of chat turns."""


class ChatResponse(BaseModel):
    """The result of one chat turn."""

    model_config = ConfigDict(frozen=True)

    message: str
    """The assistant's text reply (with ``output=``, the raw JSON text)."""
    output: Any = None
    """The reply validated as the turn's ``output=`` type; None without ``output=``."""
    conversation_id: str
    """Conversation session id (16-char hex)."""
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    iterations: int = 0
    """Tool-use loop iterations executed (0 if no tools)."""
    memory_mode: str = "buffer"
    cost: float = 0.0
    """Total cost in USD for this turn (summaries included)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    """Of ``input_tokens``, those read from the provider's prompt cache (billed at its cached-input rate)."""
    model: str = ""
    trace_id: str = ""
    """Trace id of this turn (16-char hex)."""
    latency_ms: float = 0.0
    """The turn's own time in milliseconds: from its start to the reply, its waits (``queue_ms``) left out."""
    queue_ms: float = 0.0
    """Milliseconds the turn waited for its turn: a batch item for a free worker (``concurrency``), a request
    for the rate pacer (``RPM`` / ``TPM``, a 429's pause) or for the embedded model's one decoding slot. A retry's
    backoff is not a wait for a turn: it is in ``latency_ms`` (``timeline()`` shows it as a ``retry`` step)."""
    provider: str = ""
    priced: bool = True
    """False when a model of this turn is missing from the price table (cost undercounted)."""
    stopped_by_limit: bool = False
    """True when the turn hit ``max_tool_iterations`` before a final answer."""
    cached: bool = False
    """True when the reply came from the response cache: no request was made and ``cost`` is 0."""
    cached_cost: float | None = None
    """For a cached reply, what it cost (USD) when it was made; None for a reply made now."""
    truncated: bool = False
    """True when the turn's final model call stopped at its token limit or repeated itself (the reply is cut)."""
    packed: bool = False
    """True when the answer came from a packed request (``run_batch(pack=k)``): cost and tokens are a share."""
    confidence: float | None = None
    """The answer's probability among the labels when the batch row was scored (``LABELS_BY``); None when generated."""
    label_probabilities: dict[str, float] | None = None
    """Each label's probability as the scored row's answer, as the model gave it (before ``calibrate=True``)."""
    trace: list[TraceRecord] = Field(default_factory=list, repr=False)
    """One record per step, in order: model calls, tool calls, and the retries and waits inside them
    (``core.types.TraceRecord``); ``timeline()`` shows them on a time axis."""

    def to_text(self) -> str:
        return self.message

    def to_row(self) -> dict[str, Any]:
        """This turn as a row of ``BatchResult.to_dataframe`` (``BATCH_COLUMNS`` but ``input``)."""
        return {
            "message": self.message,
            "model": self.model,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "cost": self.cost,
            "priced": self.priced,
            "latency_ms": self.latency_ms,
            "iterations": self.iterations,
            "tool_calls": len(self.tool_calls),
            "error": None,
            "trace_id": self.trace_id,
            "cached": self.cached,
            "truncated": self.truncated,
            "packed": self.packed,
            "confidence": self.confidence,
        }

    @classmethod
    def failed_row(cls, error: str) -> dict[str, Any]:
        """The row of a batch item whose turn failed with ``error``: no reply, nothing spent (so ``priced``)."""
        return {
            "message": None,
            "model": None,
            "input_tokens": 0,
            "output_tokens": 0,
            "cached_tokens": 0,
            "cost": 0.0,
            "priced": True,
            "latency_ms": None,
            "iterations": 0,
            "tool_calls": 0,
            "error": error,
            "trace_id": None,
            "cached": False,
            "truncated": False,
            "packed": False,
            "confidence": None,
        }

    def relabelled(self, value: Any, confidence: float) -> ChatResponse:
        """This scored row answering ``value`` at ``confidence`` instead (``batch.label_debiasing``)."""
        return self.model_copy(update={"message": label_message(value), "output": value, "confidence": confidence})

    def served_again(self) -> ChatResponse:
        """This reply for another row of the batch with the same prompt: no request, so ``cached`` and cost 0.

        ``cached_cost`` is what the reply cost when it was made; the trace is one ``cache`` record, as a hit's.
        """
        paid = self.cached_cost if self.cached else self.cost
        record: TraceRecord = {
            "step": "cache", "node": "cache", "name": "duplicate", "model": self.model,
            "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
            "cost": 0.0, "cached_cost": paid or 0.0, "latency_ms": 0.0,
        }
        update = {"cached": True, "cost": 0.0, "cached_cost": paid, "latency_ms": 0.0, "queue_ms": 0.0}
        return self.model_copy(update={**update, "trace": [record]})

    column_dtypes: ClassVar[dict[str, str]] = {"cached_tokens": "Int64", "confidence": "Float64"}
    """Batch columns given a pandas dtype (``BatchResult.to_dataframe``); the others are inferred."""

    def to_payload(self) -> dict[str, Any]:
        """This response as JSON for a batch checkpoint; ``output`` is rebuilt from ``message`` when read."""
        import pydantic_core

        payload: dict[str, Any] = pydantic_core.to_jsonable_python(self, exclude={"output"}, fallback=str)
        return payload

    @classmethod
    def from_payload(cls, payload: dict[str, Any], output: OutputSpec | None) -> ChatResponse:
        """The response ``to_payload`` wrote; its ``output`` validated from the JSON text in ``message``."""
        value = None if output is None else output.validate(payload["message"])
        return cls.model_validate({**payload, "output": value})

    def trace_dataframe(self) -> pd.DataFrame:
        """The trace as a DataFrame, one row per step."""
        import pandas as pd

        return pd.DataFrame([{c: rec.get(c) for c in TRACE_COLUMNS} for rec in self.trace], columns=TRACE_COLUMNS)

    def timeline(self) -> Timeline:
        """This turn's steps on a time axis (model calls, tools, retries, waits): HTML bars in a notebook.

        >>> response = agent.chat("What is 2*21?")          # doctest: +SKIP
        >>> response.timeline()                             # a cell shows the bars; .to_frame() the steps
        """
        from aiforge.core.timeline import turn_timeline

        return turn_timeline(self.trace, label=self.trace_id, latency_ms=self.latency_ms, queue_ms=self.queue_ms)

    def _footer(self) -> str:
        parts = [
            self.model or self.provider,
            f"{self.input_tokens}+{self.output_tokens} tokens",
            f"${self.cost:.5f}" + ("" if self.priced else " (unpriced)"),
            f"{self.latency_ms:.0f} ms",
        ]
        if self.tool_calls:
            parts.append(f"{len(self.tool_calls)} tool call{'s' if len(self.tool_calls) != 1 else ''}")
        if self.truncated:
            from aiforge.core.render import truncation_note

            if note := truncation_note(self):
                parts.append(note)
        if self.cached:
            parts.append(f"cached (was ${self.cached_cost or 0.0:.5f})")
        return " · ".join(parts)

    def _output_json(self) -> str:
        """``output`` as indented JSON (models, dataclasses, dates and enums included)."""
        import pydantic_core

        return pydantic_core.to_json(self.output, indent=2, fallback=repr).decode()

    def __repr__(self) -> str:
        output = f"output={shortened(repr(self.output), 120)}, " if self.output is not None else ""
        return (
            f"ChatResponse(message={shortened(self.message, 80)!r}, {output}model={self.model!r}, "
            f"tool_calls={len(self.tool_calls)}, cost={self.cost:.6f}, "
            f"tokens={self.input_tokens}+{self.output_tokens}, conversation_id={self.conversation_id!r})"
        )

    __str__ = __repr__

    def _repr_markdown_(self) -> str:
        from aiforge.core.render import safe_markdown

        tools = "".join(f"\n- {tc._repr_markdown_()}" for tc in self.tool_calls)
        body = safe_markdown(self.message) if self.output is None else self._output_markdown()
        return f"{body}\n{tools}\n\n<sub>{html.escape(self._footer())}</sub>"

    def _output_markdown(self) -> str:
        text = self._output_json()
        fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
        return f"**{html.escape(type(self.output).__name__)}**\n\n{fence}json\n{text}\n{fence}"

    def _repr_html_(self) -> str:
        tools = "".join(
            f"<li>{tc._repr_html_()}</li>" for tc in self.tool_calls
        )
        return (
            f"<div class='aiforge-response'>{self._body_html()}"
            + (f"<ul>{tools}</ul>" if tools else "")
            + f"<div style='opacity:.6;font-size:85%'>{html.escape(self._footer())}</div></div>"
        )

    def _body_html(self) -> str:
        if self.output is None:
            return f"<div style='white-space:pre-wrap'>{html.escape(self.message)}</div>"
        return (
            f"<div><b>{html.escape(type(self.output).__name__)}</b></div>"
            f"<pre>{html.escape(self._output_json())}</pre>"
        )
