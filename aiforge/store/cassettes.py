"""Record and replay: provider exchanges kept in a JSONL cassette, so a notebook shows real answers without a key.

``REPLAY`` (with ``REPLAY_FILE``) wraps the provider an agent talks to, at the provider boundary
(``chat.replay.CassetteProvider``):

- ``"record"``: every exchange goes to the provider and is written to the file (rewritten by the first
  exchange of the process, so a re-recorded notebook holds one run);
- ``"replay"``: every reply comes from the file and no request is made; a request the file does not hold
  is a ``ReplayMismatchError`` naming what differs from the closest recorded request;
- ``"auto"``: replay when the file holds the request and no key is configured, else call and append.

A line holds the request (provider, model, generation parameters, messages with tool-call ids numbered in
order, tools, output schema), its fingerprint, the streamed chunks in order and the final completion. Never a
key or a header: the wrapper sits above the SDK and sees neither. The endpoint is not part of a request, so
a cassette recorded against a stand-in server (or a proxy) replays as the provider it stood in for.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any

from aiforge.core.errors import ReplayMismatchError
from aiforge.core.types import CallParams, Completion, Message, ToolSpec, Usage
from aiforge.store.fingerprint import fingerprint, numbered_tool_ids

_rewritten: set[Path] = set()
_files_lock = threading.Lock()


class Cassette:
    """The exchanges of one JSONL file, by request fingerprint; the n-th same request gets the n-th reply."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._entries: list[dict[str, Any]] = []
        if self.path.exists():
            lines = self.path.read_text(encoding="utf-8").splitlines()
            self._entries = [json.loads(line) for line in lines if line.strip()]
        self._served: dict[str, int] = {}

    def find(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """The next recorded exchange of ``request`` (the last one again once all were served), or None."""
        key = fingerprint(request)
        with self._lock:
            matches = [entry for entry in self._entries if entry["key"] == key]
            if not matches:
                return None
            served = self._served.get(key, 0)
            self._served[key] = served + 1
            return matches[min(served, len(matches) - 1)]

    def append(
        self, request: dict[str, Any], chunks: list[str] | None, completion: Completion, *, rewrite: bool
    ) -> None:
        """Write one exchange; ``rewrite`` starts the file over on this process's first write to it."""
        entry = {"key": fingerprint(request), "request": request, "chunks": chunks, "completion": asdict(completion)}
        with _files_lock, self._lock:
            fresh = rewrite and self.path.resolve() not in _rewritten
            _rewritten.add(self.path.resolve())
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("w" if fresh else "a", encoding="utf-8") as file:
                file.write(json.dumps(entry, ensure_ascii=False) + "\n")
            self._entries = [entry] if fresh else [*self._entries, entry]

    def mismatch(self, request: dict[str, Any]) -> ReplayMismatchError:
        """The error for a request the cassette does not hold, naming what differs from the closest request."""
        where = f"{self.path} (REPLAY_FILE)"
        if not self._entries:
            return ReplayMismatchError(f"REPLAY='replay' but {where} holds no recorded exchange: record it first.")
        closest = min(reversed(self._entries), key=lambda entry: len(_differences(entry["request"], request)))
        differences = "; ".join(_differences(closest["request"], request))
        return ReplayMismatchError(
            f"No exchange recorded in {where} matches this request. The closest recorded request differs in "
            f"{differences}. Record again (REPLAY='record', or 'auto' with a key), or undo the change."
        )


def _differences(recorded: dict[str, Any], now: dict[str, Any]) -> list[str]:
    found = []
    for field in ("provider", "model", "params", "tools", "output_schema"):
        if recorded.get(field) != now.get(field):
            found.append(f"{field}: recorded {_short(recorded.get(field))}, now {_short(now.get(field))}")
    old, new = recorded.get("messages", []), now.get("messages", [])
    for index in range(max(len(old), len(new))):
        before = old[index] if index < len(old) else None
        after = new[index] if index < len(new) else None
        if before != after:
            role = (after or before or {}).get("role")
            found.append(
                f"messages[{index}] ({role}): recorded {_short(before and before.get('content'))}, "
                f"now {_short(after and after.get('content'))}"
            )
            break
    return found


def _short(value: Any, width: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def request_of(
    provider: str, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams
) -> dict[str, Any]:
    """What identifies an exchange (never a key, a header or the endpoint)."""
    numbered = [dict(message) for message in numbered_tool_ids(messages)]
    return {
        "provider": provider,
        "model": params.model,
        "params": {"temperature": params.temperature, "max_tokens": params.max_tokens},
        "messages": numbered,
        "tools": list(tools or ()),
        "output_schema": None if params.output is None else params.output.wire_schema,
    }


def completion_of(data: dict[str, Any]) -> Completion:
    """The ``Completion`` a cassette line holds."""
    return Completion(**{**data, "usage": Usage(**data["usage"])})


_cassettes: dict[Path, Cassette] = {}


def cassette_at(path: str | os.PathLike[str]) -> Cassette:
    """The process-wide ``Cassette`` of a file (agents of one notebook share its replay order)."""
    resolved = Path(path).expanduser().resolve()
    with _files_lock:
        return _cassettes.setdefault(resolved, Cassette(resolved))
