"""What a ``ChatAgent`` keeps in the ``STORE``: its named session and the log of its turns.

A session is loaded when the agent is made and saved whole at the end of each turn that committed, after
the in-memory commit, in one transaction: a failed or cancelled turn saves nothing. Agents of one process
naming one session share one ``Conversation`` (and so its turn lock): their turns take turns. Before each
turn the stored version is compared with the one this process last saw; if another process saved the
session meanwhile, its conversation is loaded first. The save is conditional on that version: if another
process saved during the turn, its conversation is loaded and this turn's messages are added after it, so
two processes writing one session never lose each other's turns (each turn saw the history as it began).
"""

from __future__ import annotations

import logging
import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from aiforge.batch.request.call import new_conversation_id
from aiforge.chat.memory import Conversation, trim_to_units
from aiforge.core.errors import StoreError
from aiforge.core.types import ConfigError, Message, UsageError
from aiforge.store import Store
from aiforge.store.log import LogEntry, TurnLog
from aiforge.store.sessions import Sessions

if TYPE_CHECKING:
    from aiforge.chat.response import ChatResponse
    from aiforge.core.settings import AIForgeSettings

logger = logging.getLogger("aiforge.chat")


@dataclass(slots=True)
class _Shared:
    """One session's conversation in this process, and the stored version it reflects."""

    name: str
    conversation: Conversation
    version: int


# By store object: a store closed and opened again starts from what its file holds.
_shared: weakref.WeakKeyDictionary[Store, dict[str, _Shared]] = weakref.WeakKeyDictionary()
_shared_lock = threading.Lock()


def open_store(value: Any) -> Store | None:
    """The store the ``STORE`` setting names; the default location falls back to none (with a warning)."""
    try:
        return Store.for_setting(value, kind="data")
    except StoreError as exc:
        if value is not True:
            raise
        logger.warning("aiforge: sessions and the log are off: %s", exc)
        return None


def chat_store(settings: AIForgeSettings, session: str | None, *, log: bool) -> ChatStore | None:
    """The agent's ``ChatStore``; None when it keeps nothing (no session, and ``log=False`` or ``STORE`` off)."""
    if session is None and not log:
        return None
    store = open_store(settings.STORE)
    if store is None:
        if session is not None:
            raise ConfigError(f"session={session!r} needs the STORE setting on (True, a path or 'memory'), not off.")
        return None
    return ChatStore(store, session, log=log)


class ChatStore:
    """One agent's session (``name`` or None) and log in ``store``; ``log=False`` records no turn."""

    def __init__(self, store: Store, session: str | None, *, log: bool) -> None:
        self.sessions = Sessions(store)
        self.log = TurnLog(store) if log else None
        self.session = session
        self._shared: _Shared | None = None
        if session is not None:
            if not isinstance(session, str) or not session:
                raise UsageError(f"session must be a non-empty name (str), not {session!r}")
            with _shared_lock:
                of_store = _shared.setdefault(store, {})
                self._shared = of_store.get(session)
                if self._shared is None:
                    self._shared = of_store[session] = _Shared(session, Conversation(), 0)
                    self._reload(self._shared)

    @property
    def conversation(self) -> Conversation | None:
        """The session's conversation (shared by every agent of this process on it); None without a session."""
        return None if self._shared is None else self._shared.conversation

    def refresh(self, conversation: Conversation) -> None:
        """Load what another process saved since this one last saw the session; the turn lock is held."""
        shared = self._shared
        if shared is not None and conversation is shared.conversation:
            if self.sessions.version(shared.name) != shared.version:
                self._reload(shared)

    def commit(
        self, conversation: Conversation, memory_mode: str, added: list[Message], keep_messages: int | None = None
    ) -> None:
        """Save the conversation as the session's current one (after the in-memory commit).

        ``added`` is what this turn appended to the history. If another process saved the session during the
        turn, its conversation is loaded and ``added`` appended to it (trimmed to ``keep_messages`` messages, as
        buffer memory keeps), then saved again, until no other save comes between.
        """
        shared = self._shared
        if shared is None or conversation is not shared.conversation:
            return
        while True:
            version = self.sessions.save(
                shared.name, conversation_id=conversation.id, history=conversation.history,
                summary=conversation.summary, memory_mode=memory_mode, expected_version=shared.version,
            )
            if version is not None:
                shared.version = version
                return
            if not self._reload(shared):  # deleted since: saved as it is on the next pass
                shared.version = 0
                continue
            history = [*conversation.history, *added]
            conversation.history = history if keep_messages is None else trim_to_units(history, keep_messages)

    def reset(self, memory_mode: str) -> None:
        """Start a new conversation in the session; the old one stays in the log under its id."""
        shared = self._shared
        if shared is not None:
            conversation = shared.conversation
            conversation.id, conversation.history, conversation.summary = new_conversation_id(), [], None
            # A reset is deliberate: it replaces whatever another process saved.
            shared.version = self.sessions.save(
                shared.name,
                conversation_id=conversation.id, history=[], summary=None, memory_mode=memory_mode,
            ) or 0

    def record(
        self, response: ChatResponse, sent: list[Message], produced: list[Message], *, remember: bool
    ) -> None:
        """Log one turn: ``sent`` is the context sent, ``produced`` what it added; a batch item remembers nothing."""
        if self.log is None:
            return
        session, kind = (self.session, "chat") if remember else (None, "batch")
        self.log.record(LogEntry.of_turn(response, sent, produced, session=session, kind=kind))

    def _reload(self, shared: _Shared) -> bool:
        """Take the stored conversation into ``shared``; False if the session is not stored."""
        record = self.sessions.load(shared.name)
        if record is None:
            return False
        conversation = shared.conversation
        # The store keeps JSON (it knows no message type); what it holds is a Conversation's history, saved above.
        conversation.id, conversation.history, conversation.summary = (
            record.conversation_id, cast(list[Message], record.history), record.summary,
        )
        shared.version = record.version
        return True
