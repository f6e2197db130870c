"""``df.aiforge.split``: a column of documents to one row per chunk, on an index that leads back to each document.

Each cell is a document (``core.chunks.document_pages``): a ``str`` is text, an ``aiforge.File``, a
``pathlib.Path`` or PDF bytes is read page by page. It is cut by ``core.chunks.split_pages`` and each chunk is a row:
``document`` (the input's index label), ``page``, ``last_page``, ``text``, ``tokens`` (as counted), ``context``
(with ``gather=``) and ``error``; the kept columns (``keep=``) follow. The index is the input's level(s) then
``chunk`` (the chunk's number within its document, from 0), so answers about the chunks fold back onto the input:
``chunks.aiforge.agg(..., by="document")`` (or by the index level's name), or ``groupby(level=0)``.

The window. A chunk is never more than one request to the model can hold: ``size=None`` is the most tokens the
model's window leaves once the agent's system prompt, tools, the reserved answer (``MAX_TOKENS``), ``agg``'s
``SAFETY_MARGIN``, the prompt and the ``context`` are counted (``chunk_bound``), and a larger ``size`` is a
``UsageError`` naming that bound; the window is ``agg``'s (``CONTEXT_WINDOW``, the embedded engine's
``LOCAL_CONTEXT_SIZE``, the model's published one). A chunk's tokens are counted by the model's tokenizer where the
provider has it (``Provider.count_tokens``: the embedded model), else by ``core.tokens.token_bound``, which counts
Chinese, digits or German at least as high as SmolLM2's tokenizer does (characters / 4 undercounts them up to
8 times). Pass the prompt the chunks will be asked with (``prompt=``) to
count its text, and the longest value of each kept column it names, exactly; without it ``PROMPT_ALLOWANCE``
tokens are kept for it.

A document that cannot be read (a missing file, an encrypted or broken PDF, an image, a PDF with no text layer)
is one row of its own with ``text`` missing and the reason in ``error``; the others are split, and the call warns
once (``FailedRowsWarning``). Its missing text then fails that row alone in a ``map`` over the chunks. A missing
cell (None, NaN) gives no row, as pandas' reductions skip NA.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

import pandas as pd

from aiforge.chat.operation_agent import operation_agent
from aiforge.core.chunks import DEFAULT_GATHER_TOKENS, Chunk, check_split, document_pages, split_pages
from aiforge.core.costs import caller_stacklevel
from aiforge.core.errors import ConfigError, FailedRowsWarning, FileInputError, UsageError
from aiforge.core.files import File
from aiforge.core.templates import RowTemplate, no_such_column
from aiforge.core.tokens import token_bound
from aiforge.semantic.agg.chunks import ChunkBudget
from aiforge.semantic.agg.reduce import agent_context_window

if TYPE_CHECKING:
    from aiforge.chat.agent import ChatAgent

PROMPT_ALLOWANCE = 200
"""Tokens kept for the prompt the chunks will be asked with when ``split`` is not told it (``prompt=``)."""
MIN_CHUNK_TOKENS = 16
"""The least a chunk may hold: a window that leaves less is a ``ConfigError`` naming ``CONTEXT_WINDOW``."""
CHUNK_COLUMNS = ("document", "page", "last_page", "text", "tokens", "context", "error")
"""The columns of ``split``'s result (``context`` only with ``gather=``), before the kept ones."""


def chunk_bound(agent: ChatAgent, prompt: str | None, around: int) -> tuple[int, int]:
    """The most tokens a chunk may take in a request of ``agent`` with ``prompt`` and ``around`` tokens beside the
    chunk (its context, kept columns the prompt names), and the window it was counted under; a ``ConfigError``
    naming ``CONTEXT_WINDOW`` when that is too few."""
    window = agent_context_window(agent)
    budget = ChunkBudget.of(
        window,
        "",
        system_prompt=agent.request_context.system_prompt,
        tools=agent.request_context.tools,
        schema=None,
        max_tokens=agent.settings.MAX_TOKENS,
    )
    prompt_tokens = PROMPT_ALLOWANCE if prompt is None else token_counter(agent)(_bare(prompt))
    bound = budget.limit - budget.fixed_tokens - prompt_tokens - around
    if bound < MIN_CHUNK_TOKENS:
        raise ConfigError(
            f"CONTEXT_WINDOW={window} leaves {max(bound, 0)} tokens for a chunk once the prompt (~{prompt_tokens}), "
            f"the context and kept columns ({around}) and the reserved answer (MAX_TOKENS={budget.reserve}) are "
            "counted; raise CONTEXT_WINDOW or lower MAX_TOKENS.",
            setting="CONTEXT_WINDOW",
            problem="too small for a chunk",
        )
    return bound, window


def token_counter(agent: ChatAgent) -> Callable[[str], int]:
    """How ``agent``'s tokens are counted: its model's tokenizer (``Provider.count_tokens``: the embedded model's),
    else ``token_bound``, which no tokenizer measured exceeds."""
    provider = agent.provider

    def count(text: str) -> int:
        counted = provider.count_tokens(text)
        return token_bound(text) if counted is None else counted

    return count


def _named_tokens(data: pd.DataFrame, kept: list[Any], prompt: str | None) -> int:
    """The most tokens the kept columns ``prompt`` names take in one row (a title beside each chunk), by
    ``token_bound``."""
    named = [name for name in RowTemplate(prompt).fields if name in kept] if prompt else []
    return sum(max((token_bound(str(value)) for value in data[name].dropna()), default=0) for name in named)


def _bare(prompt: str) -> str:
    """``prompt``'s own text: its fields empty (their values are the chunk and context, counted apart)."""
    template = RowTemplate(prompt)
    return template.fill(dict.fromkeys(template.fields, ""))


def split_frame(
    data: pd.DataFrame,
    column: Any,
    *,
    by: Any = "tokens",
    size: int | None = None,
    overlap: int = 0,
    gather: Any = None,
    gather_tokens: int = DEFAULT_GATHER_TOKENS,
    prompt: str | None = None,
    keep: bool | Sequence[Any] = False,
    agent: ChatAgent | None = None,
    settings: dict[str, Any] | None = None,
) -> pd.DataFrame:
    """``data[column]``'s documents cut into chunks, one row each (see the module's docstring)."""
    kept = _kept(data, column, keep)
    if not data.index.is_unique:
        repeated = data.index[data.index.duplicated()][0]
        raise UsageError(
            f"split: each chunk leads back to its document by the index label, and the index repeats {repeated!r}: "
            "call it on df.reset_index() (or give the frame a unique index)."
        )
    check_split(by, size if size is not None else overlap + 1, overlap, gather, gather_tokens)
    around = (gather_tokens if gather else 0) + _named_tokens(data, kept, prompt)
    chosen = operation_agent(agent, dict(settings or {}))
    bound, window = chunk_bound(chosen, prompt, around)
    count = token_counter(chosen)
    if size is None:
        size = bound
    elif size > bound:
        raise UsageError(
            f"split: size={size} tokens is more than one request can hold: at most {bound} under "
            f"CONTEXT_WINDOW={window} with the prompt and the answer; lower size=, or leave it None for the most."
        )
    check_split(by, size, overlap, gather, gather_tokens)
    positions: list[int] = []
    rows: list[dict[str, Any]] = []
    failed: list[str] = []
    for position, value in enumerate(data[column].tolist()):
        if _missing(value):
            continue
        try:
            chunks = split_pages(
                document_pages(value),
                size,
                by=by,
                overlap=overlap,
                gather=gather,
                gather_tokens=gather_tokens,
                count=count,
            )
            if not chunks:
                raise FileInputError(
                    "the text is empty: nothing to split."
                    if isinstance(value, str)
                    else f"{_name(value)}: no text to split (a scan without a text layer?)."
                )
        except FileInputError as exc:
            failed.append(str(exc))
            positions.append(position)
            rows.append(_failed_row(str(exc)))
            continue
        positions.extend([position] * len(chunks))
        rows.extend(_row(chunk) for chunk in chunks)
    if failed:
        warnings.warn(
            f"split: {len(failed)} of {len(data)} document(s) could not be split; each is one row with no text and "
            f"the reason in 'error' (first: {failed[0]})",
            FailedRowsWarning,
            stacklevel=caller_stacklevel(),
        )
    return _frame(data, positions, rows, gather is not None, kept)


def _kept(data: pd.DataFrame, column: Any, keep: bool | Sequence[Any]) -> list[Any]:
    """The input columns ``keep`` asks to carry to each chunk's row; a ``UsageError`` for a name that cannot be."""
    _check_column(column, data.columns)
    if keep is True:
        kept = [name for name in data.columns if name != column]
    elif keep is False or keep is None:
        kept = []
    else:
        kept = [keep] if isinstance(keep, str) else list(keep)
        for name in kept:
            _check_column(name, data.columns)
    clash = [name for name in kept if name in CHUNK_COLUMNS]
    if clash:
        raise UsageError(
            f"split: keep= names {clash[0]!r}, a column split adds; rename it first: "
            f"df.rename(columns={{{clash[0]!r}: 'source_{clash[0]}'}})."
        )
    return kept


def _check_column(column: Any, columns: pd.Index) -> None:
    try:
        found = column in columns
    except TypeError:  # unhashable: a list, a Series
        found = False
    if not found:
        raise UsageError(no_such_column("split", column, columns))


def _missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # an array-like cell
        return False


def _name(value: Any) -> str:
    """How an error names a document: a file's or path's name, else the cell as text (a PDF's bytes: "the PDF")."""
    if isinstance(value, File | PurePath):
        return value.name
    return "the PDF" if isinstance(value, bytes | bytearray) else str(value)


def _row(chunk: Chunk) -> dict[str, Any]:
    return {
        "page": chunk.page,
        "last_page": chunk.last_page,
        "text": chunk.text,
        "tokens": chunk.tokens,
        "context": chunk.context,
        "error": None,
        "chunk": chunk.chunk,
    }


def _failed_row(error: str) -> dict[str, Any]:
    return {"page": None, "last_page": None, "text": None, "tokens": None, "context": None, "error": error, "chunk": 0}


def _frame(
    data: pd.DataFrame, positions: list[int], rows: list[dict[str, Any]], gather: bool, kept: list[Any]
) -> pd.DataFrame:
    """The chunks' frame: on the input's index levels then ``chunk``, with the document's label and kept columns."""
    levels = [data.index.get_level_values(level).take(positions) for level in range(data.index.nlevels)]
    index = pd.MultiIndex.from_arrays(
        [*levels, pd.Index([row["chunk"] for row in rows], dtype="int64")], names=[*data.index.names, "chunk"]
    )
    columns: dict[str, Any] = {}
    for name in CHUNK_COLUMNS:
        values = [row[name] for row in rows] if name != "document" else data.index.take(positions).tolist()
        if name in ("page", "last_page", "tokens"):
            columns[name] = pd.array(values, dtype="Int64")
        elif name != "context" or gather:
            columns[name] = pd.Series(values, dtype=object).to_numpy()
    frame = pd.DataFrame(columns, index=index)
    for name in kept:
        frame[name] = data[name].take(positions).to_numpy()
    return frame
