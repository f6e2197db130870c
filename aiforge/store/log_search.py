"""What the log's ``search=`` means: an FTS5 query when the text is one, else the words it contains.

Users type ordinary text (``doesn't``, ``non-stick``, ``e-mail``, ``#4411``) that FTS5 reads as syntax and
rejects (``fts5: syntax error near "'"``, ``no such column: stick``). So a search is tried as FTS5 first, on
an empty table of the log's columns (parsing is all it costs, microseconds): a valid query (``refund OR
return``, ``"a phrase"``, ``refu*``, ``prompt:refund``) keeps its meaning; any other text is searched as its
words, each quoted so FTS5 reads it as text, every word required. Nothing a user types reaches SQLite as a
syntax error.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from aiforge.core.types import UsageError

_WORD = re.compile(r"\w")


def match_expression(search: Any) -> str:
    """The FTS5 ``MATCH`` expression for ``search``; ``UsageError`` for a search with no word in it."""
    if not isinstance(search, str):
        raise UsageError(f"search= takes text (words or an FTS5 query), not {type(search).__name__}")
    text = search.strip()
    if _valid_fts(text) and _WORD.search(text):
        return text
    words = [word for word in text.split() if _WORD.search(word)]
    if not words:
        raise UsageError(f"search={search!r} has no word to look for (no letter or digit)")
    # A double quote inside an FTS5 string is written twice; the tokenizer then drops it like any punctuation.
    return " ".join('"' + word.replace('"', '""') + '"' for word in words)


def _valid_fts(text: str) -> bool:
    """Whether FTS5 parses ``text`` as a query over the log's columns (prompt, reply)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE log_text USING fts5(prompt, reply)")
        conn.execute("SELECT rowid FROM log_text WHERE log_text MATCH ?", (text,)).fetchall()
    except sqlite3.Error:
        return False
    finally:
        conn.close()
    return True
