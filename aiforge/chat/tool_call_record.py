"""``ToolCallRecord``: one tool call of a chat turn (its tool, input, output), with its notebook views, and the
text helpers a ``ChatResponse``'s views share with it.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


def shortened(value: Any, limit: int = 200) -> str:
    """``value`` as text (JSON unless a str) of at most ``limit`` characters, cut with an ellipsis."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def code_span(text: str) -> str:
    """``text`` as a Markdown code span that no backtick inside it can close early."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


class ToolCallRecord(BaseModel):
    """One tool invocation within a turn."""

    model_config = ConfigDict(frozen=True)

    tool: str
    """The tool name that was called."""
    input: dict[str, Any] = Field(default_factory=dict)
    """The parameters passed to the tool."""
    output: str | None = None
    """The tool's result (or its error text); None if it has not returned."""
    id: str = ""
    """The provider's id of the call."""
    error: bool = False
    """True when ``output`` is an error (tool raised, unknown tool, bad arguments)."""

    def to_text(self) -> str:
        return f"{self.tool}({self.input}) → {self.output}"

    def __repr__(self) -> str:
        return f"ToolCallRecord(tool={self.tool!r}, input={self.input!r}, output={self.output!r})"

    __str__ = __repr__

    def _repr_markdown_(self) -> str:
        from aiforge.core.render import escape_markdown

        output = escape_markdown(shortened(self.output or ""))
        return f"{code_span(self.tool)} {code_span(shortened(self.input))} → {output}"

    def _repr_html_(self) -> str:
        return (
            f"<code>{html.escape(self.tool)}</code> <code>{html.escape(shortened(self.input))}</code>"
            f" → {html.escape(shortened(self.output or ''))}"
        )
