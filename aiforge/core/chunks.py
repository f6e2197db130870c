"""Long documents cut into chunks a request can hold: by page, or by tokens with overlap, each with its lineage.

A document is a list of page texts (a PDF's, from ``core.pdfs``; a plain text is one page, or one a form feed
``\\f`` apart, as ``pdftotext`` writes them). ``split_pages`` cuts it into ``Chunk``s of at most ``size`` tokens as
``count`` says, so ``count(chunk.text) <= size`` always holds. ``count`` is the repo's estimate by default
(``core.tokens.estimate_tokens``: characters / 4, for English); ``df.aiforge.split`` passes the model's tokenizer
where the provider has one, else ``core.tokens.token_bound``, which no tokenizer measured exceeds:

- ``by="tokens"``: the pages joined by a blank line and cut every ``size`` tokens, across pages;
- ``by="page"``: one chunk a page, a page longer than ``size`` cut further (its pieces keep the page's number);
  a page with no text (a scan without a text layer) gives no chunk.

A cut falls at a paragraph break in the chunk's second half if there is one, else after a sentence's end there,
else at the last space; never inside a word unless one word is longer than a whole chunk. ``overlap`` tokens of
each chunk's end start the next (rounded to a word start, so up to ``overlap``), within a page for ``by="page"``.

Lineage: ``page`` is the page where the chunk starts, ``last_page`` where it ends (1-based, as a reader counts);
``chunk`` is its number within the document, from 0. ``gather`` adds a ``context`` string beside the text (never
inside it): ``"tail"`` the previous chunk's last ``gather_tokens`` tokens (from a word start; empty for the first
chunk), ``"heading"`` the nearest heading at or above the chunk's start (empty before the first one).

A heading is a line that is a Markdown heading (``#`` to ``######`` then a space: the text after the marks), or a
short title-like line: at most ``HEADING_WORDS`` words and ``HEADING_CHARS`` characters, starting with a capital
or a digit, ending without ``. , ; : ! ?``, and every word of four letters or more capitalised (``Results``,
``3.2 Error Analysis``, ``TERMS AND CONDITIONS``); sentences wrapped across lines rarely pass all of it.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aiforge.core.errors import FileInputError, UsageError
from aiforge.core.tokens import CHARS_PER_TOKEN, estimate_tokens

SplitBy = Literal["page", "tokens"]
Gather = Literal["tail", "heading"]

PAGE_JOIN = "\n\n"
"""What stands between two pages when ``by="tokens"`` joins them."""
DEFAULT_GATHER_TOKENS = 64
"""Tokens of ``context`` by default: a tail of a few sentences, or any heading."""
HEADING_WORDS = 12
HEADING_CHARS = 80

_MARKDOWN_HEADING = re.compile(r"#{1,6}\s+(\S.*?)\s*#*\s*$")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]?\s")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece of a document and where it came from."""

    text: str
    page: int
    """The page where the chunk starts, from 1."""
    last_page: int
    """The page where it ends."""
    chunk: int
    """Its number within the document, from 0."""
    context: str = ""
    """What ``gather`` adds: the previous chunk's tail, or the heading above; empty without ``gather``."""
    tokens: int = 0
    """Its tokens as ``split_pages`` counted them (``count``)."""


def document_pages(value: Any) -> list[str]:
    """The page texts of a document cell: a ``str`` is text (pages at form feeds), a ``File``, path or bytes is read
    (a PDF's text page by page). ``FileInputError`` naming the file when it is missing, unreadable, an encrypted or
    broken PDF, or an image (no text to split)."""
    from aiforge.core.files import is_file_value, read_file

    if isinstance(value, str):
        if _names_a_file(value):
            raise UsageError(
                f"split: {value!r} is a str, so it is split as text; a file is a pathlib.Path or an aiforge.File: "
                "df['doc'].map(pathlib.Path)."
            )
        return value.split("\f")
    if not is_file_value(value):
        raise UsageError(
            f"split reads text (str) or files (aiforge.File, pathlib.Path, bytes), got {type(value).__name__}."
        )
    read = read_file(value)
    if read.kind != "pdf":
        raise FileInputError(f"{read.name}: an image ({read.mime}) has no text to split; split PDFs or texts.")
    from aiforge.core.pdfs import pdf_page_texts

    return pdf_page_texts(read.data, read.name)


def _names_a_file(text: str) -> bool:
    """Whether ``text`` is one line naming a PDF or an image that exists: a path meant as a file, not text."""
    suffixes = (".pdf", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".tif", ".tiff", ".bmp")
    if "\n" in text or len(text) > 4096 or not text.strip().lower().endswith(suffixes):
        return False
    return os.path.isfile(text.strip())


def split_pages(
    pages: Sequence[str],
    size: int,
    *,
    by: SplitBy = "tokens",
    overlap: int = 0,
    gather: Gather | None = None,
    gather_tokens: int = DEFAULT_GATHER_TOKENS,
    count: Callable[[str], int] = estimate_tokens,
) -> list[Chunk]:
    """``pages`` cut into chunks of at most ``size`` tokens by ``count`` (see the module's docstring); a ``context``
    is at most ``gather_tokens`` by it too.

    >>> pages = ["one two three", "four five"]
    >>> [(c.text, c.page, c.last_page) for c in split_pages(pages, 3)]
    [('one two', 1, 1), ('three\\n\\nfour', 1, 2), ('five', 2, 2)]
    >>> [(c.text, c.page, c.chunk) for c in split_pages(pages, 3, by="page")]
    [('one two', 1, 0), ('three', 1, 1), ('four five', 2, 2)]
    >>> [c.context for c in split_pages(["# Intro", "Some words"], 2, by="page", gather="heading")]
    ['Intro', 'Intro', 'Intro']
    """
    check_split(by, size, overlap, gather, gather_tokens)
    text, starts = _joined(pages)
    ends = [start + len(page) for start, page in zip(starts, pages, strict=True)]
    max_chars, overlap_chars = size * CHARS_PER_TOKEN, overlap * CHARS_PER_TOKEN
    if by == "page":
        spans = [
            span
            for lo, hi in zip(starts, ends, strict=True)
            for span in _spans(text, lo, hi, max_chars, overlap_chars, _fits(count, size))
        ]
    else:
        spans = _spans(text, 0, len(text), max_chars, overlap_chars, _fits(count, size))
    headings = _headings(text) if gather == "heading" else []
    heading_starts = [at for at, _ in headings]
    chunks: list[Chunk] = []
    for number, (start, end) in enumerate(spans):
        context = ""
        if gather == "tail" and chunks:
            context = _tail(chunks[-1].text, gather_tokens * CHARS_PER_TOKEN)
        elif gather == "heading":
            above = bisect.bisect_right(heading_starts, start)
            context = headings[above - 1][1][: gather_tokens * CHARS_PER_TOKEN] if above else ""
        context = _within(context, count, gather_tokens)
        piece = text[start:end]
        chunks.append(Chunk(piece, _page_of(starts, start), _page_of(starts, end - 1), number, context, count(piece)))
    return chunks


Fits = Callable[[str], float]
"""A text's tokens over the most a chunk may hold (at most 1.0: it fits)."""


def _fits(count: Callable[[str], int], size: int) -> Fits:
    return lambda text: count(text) / size


def _within(context: str, count: Callable[[str], int], tokens: int) -> str:
    """``context`` shortened from its start (at a word) until ``count`` says it is at most ``tokens``."""
    while context and count(context) > tokens:
        context = _tail(context, len(context) * 3 // 4)
    return context


def check_split(by: Any, size: Any, overlap: Any, gather: Any, gather_tokens: Any) -> None:
    """A one-line ``UsageError`` naming the argument of ``split`` that cannot be used, and what can."""
    if by not in ("page", "tokens"):
        raise UsageError(f'split: by= is "page" or "tokens", got {by!r}.')
    if gather not in (None, "tail", "heading"):
        raise UsageError(f'split: gather= is None, "tail" or "heading", got {gather!r}.')
    for name, value, least in (("size", size, 1), ("overlap", overlap, 0), ("gather_tokens", gather_tokens, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise UsageError(f"split: {name}= is a whole number of tokens of at least {least}, got {value!r}.")
    if overlap >= size:
        raise UsageError(f"split: overlap={overlap} must be less than the chunk size ({size} tokens).")


def _joined(pages: Sequence[str]) -> tuple[str, list[int]]:
    starts, at = [], 0
    for page in pages:
        starts.append(at)
        at += len(page) + len(PAGE_JOIN)
    return PAGE_JOIN.join(pages), starts


def _page_of(starts: Sequence[int], offset: int) -> int:
    return max(bisect.bisect_right(starts, offset), 1)


def _spans(text: str, lo: int, hi: int, max_chars: int, overlap_chars: int, fits: Fits) -> list[tuple[int, int]]:
    """``text[lo:hi]`` cut into ``(start, end)`` spans of at most ``max_chars`` that ``fits``, none starting or
    ending in spaces: a span over is cut again, shorter in proportion to how far over it is."""
    spans: list[tuple[int, int]] = []
    start = _skip_spaces(text, lo, hi)
    while start < hi:
        limit = start + max_chars
        while True:
            end = hi if hi <= limit else _break(text, start, limit)
            trimmed = end
            while trimmed > start and text[trimmed - 1].isspace():
                trimmed -= 1
            over = fits(text[start:trimmed])
            if over <= 1 or trimmed - start <= 1:
                break
            limit = start + max(min(int((trimmed - start) / over * 0.95), trimmed - start - 1), 1)
        if trimmed > start:
            spans.append((start, trimmed))
        if end >= hi:
            break
        start = _skip_spaces(text, _overlap_start(text, start, end, overlap_chars), hi)
    return spans


def _break(text: str, start: int, limit: int) -> int:
    """Where a chunk from ``start`` ends, at most ``limit``: a paragraph break, a sentence end, a space, else
    ``limit`` (a word longer than the chunk)."""
    half = start + (limit - start) // 2
    paragraph = text.rfind("\n\n", half, limit + 1)
    if paragraph > start:
        return paragraph
    sentence = [m.end() - 1 for m in _SENTENCE_END.finditer(text, half, limit + 1)]
    if sentence:
        return sentence[-1]
    for at in range(limit, start, -1):
        if text[at].isspace():
            return at
    return limit


def _overlap_start(text: str, start: int, end: int, overlap_chars: int) -> int:
    """Where the chunk after ``text[start:end]`` starts: ``overlap_chars`` back from its end, moved on to a word's
    start, and always after ``start``."""
    if not overlap_chars:
        return end
    at = max(end - overlap_chars, start + 1)
    while at < end and not text[at - 1].isspace():
        at += 1
    return at


def _skip_spaces(text: str, at: int, hi: int) -> int:
    while at < hi and text[at].isspace():
        at += 1
    return at


def _tail(text: str, chars: int) -> str:
    """The last ``chars`` characters of ``text`` or fewer, from a word's start."""
    if len(text) <= chars:
        return text
    at = len(text) - chars
    while at < len(text) and not text[at - 1].isspace():
        at += 1
    return text[at:].lstrip()


def _headings(text: str) -> list[tuple[int, str]]:
    """Each heading line of ``text``: where its line starts, and its text."""
    found = []
    at = 0
    for line in text.split("\n"):
        heading = heading_text(line)
        if heading is not None:
            found.append((at, heading))
        at += len(line) + 1
    return found


def heading_text(line: str) -> str | None:
    """The heading ``line`` is (see the module's docstring), or None for a line that is not one.

    >>> heading_text("## Results"), heading_text("3.2 Error Analysis"), heading_text("It rained today.")
    ('Results', '3.2 Error Analysis', None)
    """
    line = line.strip()
    markdown = _MARKDOWN_HEADING.fullmatch(line)
    if markdown:
        return markdown.group(1)
    words = line.split()
    if not words or len(words) > HEADING_WORDS or len(line) > HEADING_CHARS or line[-1] in ".,;:!?":
        return None
    if not (line[0].isupper() or line[0].isdigit()) or not any(c.isalpha() for c in line):
        return None
    if any(len(word) >= 4 and word[0].isalpha() and not word[0].isupper() for word in words):
        return None
    return line
