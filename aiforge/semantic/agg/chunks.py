"""What ``agg`` sends: the instruction, the chunk prompts, and the packing of rows into chunks under the window.

A chunk prompt is the instruction, a line saying what follows, then the items: rows (``[1] text``, numbered
within the chunk) on the first level, the answers of the level below (``Answer for part 1:``) on every fold.
A chunk that is one of several says its answer will be combined with the others'; the last level's one chunk
asks for the answer itself.

``ChunkBudget`` keeps every request under the window by the repo's token estimate (``core.tokens``: characters /
4): the system prompt, the tools and the ``output=`` schema, a few tokens per message, the reserved answer
(``MAX_TOKENS``, else ``DEFAULT_OUTPUT_TOKENS``) and the chunk prompt together stay within ``SAFETY_MARGIN`` less
than ``CONTEXT_WINDOW``, which leaves room for text that runs denser than 4 characters a token. A row longer
than a whole chunk is cut to fit (``TruncatedRowWarning``); so is a fold's answer longer than half a chunk, so a
fold always holds at least two answers and every level is smaller than the one below.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aiforge.core.templates import RowTemplate
from aiforge.core.tokens import CHARS_PER_TOKEN, DEFAULT_OUTPUT_TOKENS, estimate_tokens
from aiforge.core.types import ConfigError, UsageError

Kind = Literal["rows", "answers"]
ROWS: Kind = "rows"
ANSWERS: Kind = "answers"

SAFETY_MARGIN = 0.2
"""Share of the window left unused: the estimate counts 4 characters a token, and text of 3.2 still fits."""
MESSAGE_TOKENS = 8
"""Tokens a chat message costs beyond its text (role and delimiters; OpenAI's are 3-4), per message."""
MESSAGES = 2
"""A chunk request is the system prompt and one user message."""
MIN_ROW_CHARS = 40
"""The least of a row a chunk must hold: a window that leaves less is a ``ConfigError``, not rows cut to nothing."""
CUT_MARK = " […]"
"""What ends a row or an answer cut to fit a chunk."""

_ROWS_FINAL = "Rows:"
_ROWS_PART = (
    "Rows (one part of a larger set, answered in parts; your answer will be combined with the answers for "
    "the other parts, so answer for these rows only and keep what a combined answer needs):"
)
_ANSWERS_FINAL = (
    "The rows were too many to read at once, so they were answered in parts. Combine the answers for the "
    "parts below into one answer for all the rows."
)
_ANSWERS_PART = (
    "The rows were too many to read at once, so they were answered in parts. Combine the answers for the "
    "parts below into one answer for the rows they cover; it will be combined again with the answers for "
    "other parts."
)


@dataclass(frozen=True)
class AggInstruction:
    """An ``agg`` prompt: the instruction the model reads, and the columns each row is rendered from.

    The prompt names columns as a row template does; in the instruction each ``{column}`` reads as its name
    (``"What do the {review}s complain about?"`` -> ``"What do the reviews complain about?"``), and each row is
    its values of those columns.
    """

    text: str
    fields: tuple[str, ...]

    @classmethod
    def of(cls, prompt: Any, shown: Mapping[str, str] | None = None) -> AggInstruction:
        """The instruction of ``prompt`` (a ``UsageError`` for one that is no template); ``shown`` renames
        fields in the instruction (a Series' ``{value}`` reads as its name)."""
        if not isinstance(prompt, str):
            raise UsageError(
                f"agg takes a prompt naming the columns to read, e.g. 'What do the {{review}}s complain about?', "
                f"got {type(prompt).__name__}."
            )
        if not prompt.strip():
            raise UsageError("agg: the prompt is empty; say what to find, e.g. 'Common complaints in {review}'.")
        template = RowTemplate(prompt)
        names = {field: (shown or {}).get(field, field) for field in template.fields}
        return cls(template.fill(names), template.fields)


def row_text(values: Sequence[Any], fields: Sequence[str]) -> str:
    """One row as the model reads it: its value of the one field, or ``field: value`` of each, ``|`` between."""
    if len(fields) == 1:
        return _text(values[0])
    return " | ".join(f"{field}: {_text(value)}" for field, value in zip(fields, values, strict=True))


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def chunk_prompt(instruction: str, kind: Kind, items: Sequence[str], *, final: bool) -> str:
    """The user message of one chunk: the instruction, what follows, then ``items`` labelled."""
    return _frame(instruction, kind, final=final) + _joiner(kind).join(
        _label(kind, k) + item for k, item in enumerate(items, start=1)
    )


def _frame(instruction: str, kind: Kind, *, final: bool) -> str:
    if kind == ROWS:
        return f"{instruction}\n\n{_ROWS_FINAL if final else _ROWS_PART}\n"
    return f"{instruction}\n\n{_ANSWERS_FINAL if final else _ANSWERS_PART}\n\n"


def _label(kind: Kind, k: int) -> str:
    return f"[{k}] " if kind == ROWS else f"Answer for part {k}:\n"


def _joiner(kind: Kind) -> str:
    return "\n" if kind == ROWS else "\n\n"


@dataclass(frozen=True)
class ChunkBudget:
    """How much of a request the items of a chunk may take, for one agent, instruction and window."""

    window: int
    """``CONTEXT_WINDOW``: the most tokens a request may take."""
    limit: int
    """The most tokens a request is estimated at: the window less ``SAFETY_MARGIN``."""
    fixed_tokens: int
    """Estimated tokens of everything but the chunk prompt: system prompt, tools, schema, messages, answer."""
    reserve: int
    """Tokens reserved for the answer: ``MAX_TOKENS``, else ``DEFAULT_OUTPUT_TOKENS``."""
    instruction: str

    @classmethod
    def of(
        cls, window: int, instruction: str, *, system_prompt: str, tools: Sequence[Any], schema: Any,
        max_tokens: int | None,
    ) -> ChunkBudget:
        """The budget of requests with this system prompt, tools and final ``output=`` schema (None: text)."""
        reserve = max_tokens or DEFAULT_OUTPUT_TOKENS
        extras = [*tools, *([] if schema is None else [schema])]
        fixed = (
            estimate_tokens(system_prompt)
            + sum(estimate_tokens(json.dumps(extra, default=str)) for extra in extras)
            + MESSAGES * MESSAGE_TOKENS
            + reserve
        )
        return cls(window, math.floor(window * (1 - SAFETY_MARGIN)), fixed, reserve, instruction)

    def room(self, kind: Kind) -> int:
        """Characters the items of one chunk of ``kind`` may take (labels and line breaks included)."""
        return (self.limit - self.fixed_tokens) * CHARS_PER_TOKEN - self._frame_chars(kind)

    def _frame_chars(self, kind: Kind) -> int:
        return max(len(_frame(self.instruction, kind, final=final)) for final in (True, False))

    def check(self) -> None:
        """A ``ConfigError`` naming ``CONTEXT_WINDOW`` when a chunk cannot hold a row, or a fold two answers."""
        short = [kind for kind, chars in self._needed().items() if self.room(kind) < chars]
        if not short:
            return
        what = "any row" if short[0] == ROWS else f"two partial answers of up to MAX_TOKENS={self.reserve} tokens"
        frame = -(-self._frame_chars(short[0]) // CHARS_PER_TOKEN)
        raise ConfigError(
            f"CONTEXT_WINDOW={self.window} leaves no room for {what}: the system prompt, instruction and "
            f"reserved answer (MAX_TOKENS={self.reserve}) take ~{self.fixed_tokens + frame} tokens of the "
            f"{self.limit} a request may use ({SAFETY_MARGIN:.0%} of the window is kept as a margin). "
            f"Raise CONTEXT_WINDOW to at least {self._smallest_window()}, or lower MAX_TOKENS.",
            setting="CONTEXT_WINDOW",
            problem="too small for the prompt",
        )

    def _needed(self) -> dict[Kind, int]:
        """The characters a chunk of each kind must have room for: one short row; two answers of ``reserve``."""
        answer = self.reserve * CHARS_PER_TOKEN + len(_label(ANSWERS, 99)) + len(_joiner(ANSWERS))
        return {ROWS: len(_label(ROWS, 9999)) + len(CUT_MARK) + MIN_ROW_CHARS, ANSWERS: 2 * answer}

    def _smallest_window(self) -> int:
        """The least ``CONTEXT_WINDOW`` whose chunks hold what ``_needed`` says."""
        limit = max(
            self.fixed_tokens + -(-(chars + self._frame_chars(kind)) // CHARS_PER_TOKEN)
            for kind, chars in self._needed().items()
        )
        window = math.ceil(limit / (1 - SAFETY_MARGIN))
        while math.floor(window * (1 - SAFETY_MARGIN)) < limit:
            window += 1
        return window

    def request_tokens(self, prompt: str) -> int:
        """The estimated tokens of a request with ``prompt`` as its user message, answer reserved."""
        return self.fixed_tokens + estimate_tokens(prompt)


@dataclass(frozen=True)
class Packed:
    """Items packed into chunks, and how many of them were cut to fit."""

    chunks: list[list[str]]
    truncated: int


def pack(items: Sequence[str], kind: Kind, room: int) -> Packed:
    """``items`` in order, as few chunks as fit ``room`` characters each; an item that alone exceeds its cap
    (``room``, half of it on a fold, so any two answers share a chunk) is cut to the cap."""
    cap = room if kind == ROWS else room // 2
    joiner = len(_joiner(kind))
    chunks: list[list[str]] = []
    current: list[str] = []
    used = truncated = 0
    for item in items:
        label = len(_label(kind, len(current) + 1))
        if label + len(item) + joiner > cap:
            item = item[: max(cap - label - joiner - len(CUT_MARK), 0)] + CUT_MARK
            truncated += 1
        if current and used + label + len(item) + joiner > room:
            chunks.append(current)
            current, used = [], 0
            label = len(_label(kind, 1))
        current.append(item)
        used += label + len(item) + joiner
    if current:
        chunks.append(current)
    return Packed(chunks, truncated)
