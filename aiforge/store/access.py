"""The store as the user sees it: ``aiforge.logs()``, session export and import, for the ``STORE`` setting.

Each function takes ``store=`` (True, a path, ``"memory"``) to read another store than the one the settings
name (``STORE``: environment, ``aiforge.yaml``, default a file in the user's data directory).
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiforge.core.types import ConfigError
from aiforge.store.db import Store
from aiforge.store.log import TurnLog
from aiforge.store.sessions import Sessions
from aiforge.store.transcripts import export_session as _export
from aiforge.store.transcripts import import_session as _import

if TYPE_CHECKING:
    import pandas as pd


def store_of(store: Any = None) -> Store:
    """The ``Store`` that ``store`` names, or the ``STORE`` setting's when None; ``ConfigError`` when off."""
    if store is None:
        from aiforge.core.settings import load_settings

        store = load_settings().STORE
    opened = Store.for_setting(store, kind="data")
    if opened is None:
        raise ConfigError("The STORE setting is off (False): there are no sessions and no log to read.")
    return opened


def logs(
    session: str | None = None,
    *,
    model: str | None = None,
    since: datetime | str | float | None = None,
    until: datetime | str | float | None = None,
    search: str | None = None,
    conversation_id: str | None = None,
    limit: int | None = None,
    store: Any = None,
) -> pd.DataFrame:
    """Every logged turn, newest first, as a DataFrame; ``.costs_by_day()`` sums cost and tokens per day.

    Filters: ``session``, ``model``, ``conversation_id``, ``since`` / ``until`` (datetime, ISO text such as
    ``"2026-12-01"``, or epoch seconds; ``until`` excluded) and ``search`` over the prompt and the reply:
    words, all of which must occur (``"doesn't"``, ``"non-stick e-mail"``, ``"#4411"``, as typed), or an SQLite
    FTS5 query when the text is a valid one (``"refund OR return"``, ``'"exact phrase"'``, ``"refu*"``); a
    search with no word in it is a ``UsageError``.
    Columns: id, time, session, conversation_id, kind (chat or batch), provider, model, prompt, reply,
    messages_in, messages_out, tool_calls, input_tokens, output_tokens, cost, latency_ms (the turn's own time),
    trace_id, trace, queue_ms (what it waited for its turn: a batch's free worker, the rate pacer, the local
    model's queue).
    """
    return TurnLog(store_of(store)).frame(
        session=session, conversation_id=conversation_id, model=model, since=since, until=until, search=search,
        limit=limit,
    )


def sessions(*, store: Any = None) -> list[str]:
    """The saved session names, most recently used first."""
    return Sessions(store_of(store)).names()


def export_session(
    name: str, path: str | os.PathLike[str], *, format: str | None = None, store: Any = None
) -> Path:
    """Write session ``name``'s conversation to ``path``: Markdown (``.md``) or JSONL (``.jsonl``)."""
    return _export(Sessions(store_of(store)), name, path, format=format)


def import_session(path: str | os.PathLike[str], name: str | None = None, *, store: Any = None) -> str:
    """Make a JSONL export a session again (``name`` or its original name); ``ChatAgent(session=name)`` continues it."""
    return _import(Sessions(store_of(store)), path, name)
