"""A session's conversation as a file: Markdown to read or share, JSONL to keep and import again.

JSONL: a first line ``{"aiforge_session": name, "conversation_id", "summary", "memory_mode"}``, then one
message per line exactly as the history holds it (tool calls and tool results included), so
``import_session`` rebuilds the same conversation.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from aiforge.core.types import ConfigError, UsageError
from aiforge.store.sessions import SessionRecord, Sessions


def export_session(
    sessions: Sessions, name: str, path: str | os.PathLike[str], *, format: str | None = None
) -> Path:
    """Write session ``name`` to ``path`` as ``"markdown"`` or ``"jsonl"`` (default: from the suffix)."""
    record = sessions.load(name)
    if record is None:
        raise ConfigError(f"There is no session {name!r} in {sessions.store.name}.")
    path = Path(path)
    kind = format or ("jsonl" if path.suffix == ".jsonl" else "markdown")
    if kind not in ("markdown", "jsonl"):
        raise UsageError(f"format must be 'markdown' or 'jsonl', not {format!r}")
    path.write_text(_jsonl(record) if kind == "jsonl" else _markdown(record), encoding="utf-8")
    return path


def import_session(sessions: Sessions, path: str | os.PathLike[str], name: str | None = None) -> str:
    """Save the conversation of a JSONL export as session ``name`` (default: its original name); the name."""
    lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    head = json.loads(lines[0]) if lines else {}
    if "aiforge_session" not in head:
        raise UsageError(f"{path} is not an aiforge session export (its first line has no 'aiforge_session').")
    history = [json.loads(line) for line in lines[1:]]
    name = name or head["aiforge_session"]
    sessions.save(
        name, conversation_id=head["conversation_id"], history=history, summary=head.get("summary"),
        memory_mode=head.get("memory_mode", "buffer"),
    )
    return name


def _jsonl(record: SessionRecord) -> str:
    head = {
        "aiforge_session": record.name, "conversation_id": record.conversation_id, "summary": record.summary,
        "memory_mode": record.memory_mode,
    }
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [head, *record.history])


def _markdown(record: SessionRecord) -> str:
    parts = [f"# Session {record.name}\n\nConversation `{record.conversation_id}`\n"]
    if record.summary:
        parts.append(f"\n> Summary of earlier messages: {record.summary}\n")
    for message in record.history:
        parts.append(f"\n## {message['role']}\n\n{_content(message)}\n")
    return "".join(parts)


def _content(message: dict[str, Any]) -> str:
    text = message.get("content") or ""
    calls = message.get("tool_calls") or ()
    lines = [f"- tool call `{call['name']}({json.dumps(call['arguments'])})`" for call in calls]
    if message["role"] == "tool":
        return f"`{message.get('name', 'tool')}` returned:\n\n```\n{text}\n```"
    return "\n".join([text, *lines]).strip()
