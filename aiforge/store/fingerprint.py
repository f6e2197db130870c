"""Fingerprints: stable sha256 hex digests of what determines a reply, an input or a batch.

Every digest hashes ``SCHEME`` first, so changing how fingerprints are built (bump ``SCHEME``) can never
return a reply cached under the old scheme. The functions take explicit values, never a settings object or
headers, so an API key has no way in; an endpoint keeps only scheme, host, port and path.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from aiforge.core.types import Message

SCHEME = "aiforge-fingerprint/1"
"""Hashed into every fingerprint; bump it whenever what goes into one, or how, changes."""

_EXACT_INT_FLOAT = 2.0**53


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON: sorted keys, no whitespace, ``1.0`` written as ``1``, non-ASCII kept.

    Only JSON values are accepted (dicts with string keys, lists, tuples, str, int, float, bool, None): any
    other object raises ``TypeError`` rather than hashing a ``repr`` that may differ between runs or hold a
    secret. A NaN or infinite number raises ``ValueError``. Lone surrogates are kept as they are.
    """
    try:
        normal = _fast_normal(value)
    except _NotPlainJSON:
        normal = _normal(value, "value")  # the same walk, naming where the value is not JSON
    return json.dumps(normal, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(value: Any) -> str:
    """The sha256 hex digest of ``value``'s canonical JSON under ``SCHEME`` (e.g. a batch item's input)."""
    text = f"{SCHEME}\n{canonical_json(value)}"
    # surrogatepass: two different lone surrogates must give two different digests.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def reply_fingerprint(
    *,
    provider: str,
    endpoint: str | None,
    model: str,
    params: Mapping[str, Any],
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] = (),
    output_schema: Mapping[str, Any] | None = None,
) -> str:
    """The key of a reply: provider name, endpoint, model, generation parameters, messages, tools, schema.

    ``params`` holds generation parameters only (temperature, max_tokens, top_p, seed, ...); ``temperature=1``
    and ``1.0`` give the same key, a missing parameter and ``None`` do not. Tools keep their order, as the
    provider sees them.
    """
    return fingerprint(
        {
            "provider": provider,
            "endpoint": public_endpoint(endpoint),
            "model": model,
            "params": dict(params),
            "messages": list(messages),
            "tools": list(tools),
            "output_schema": output_schema,
        }
    )


def public_endpoint(url: str | None) -> str | None:
    """``url`` without what may carry a credential (user:password@, query, fragment), lower-cased host."""
    if not url:
        return None
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower()
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme.lower(), netloc, parts.path.rstrip("/"), "", ""))


@dataclass(frozen=True, slots=True)
class BatchFingerprint:
    """What identifies a batch for its checkpoint: the ordered item fingerprints and the settings' fingerprint."""

    items: tuple[str, ...]
    """One fingerprint per item, in input order."""
    settings: str
    """The fingerprint of the settings every item shares (provider, endpoint, model, parameters, prompt...)."""
    inputs: str = field(init=False)
    """One digest of all item fingerprints, in order."""
    key: str = field(init=False)
    """One digest of the whole batch: items, their order and the settings."""

    def __post_init__(self) -> None:
        # Computed once: hashing 100 000 item fingerprints takes tens of milliseconds.
        inputs = fingerprint(list(self.items))
        object.__setattr__(self, "inputs", inputs)
        object.__setattr__(self, "key", fingerprint({"items": inputs, "settings": self.settings}))


def batch_fingerprint(item_fingerprints: Sequence[str], settings: Mapping[str, Any]) -> BatchFingerprint:
    """The ``BatchFingerprint`` of items (each already a fingerprint, in order) run with ``settings``.

    ``settings`` holds explicit values (provider name, endpoint, model, parameters, system prompt, output
    schema...), never a settings object, so that no key is hashed or stored.
    """
    return BatchFingerprint(tuple(item_fingerprints), fingerprint(dict(settings)))


class _NotPlainJSON(Exception):
    """Raised by ``_fast_normal`` for anything ``_normal`` must look at (and report) itself."""


_PLAIN = (str, int, bool, type(None))


def _fast_normal(value: Any) -> Any:
    """``_normal`` for plain dicts, lists, strings and numbers without building a path per element.

    The cache-hit path fingerprints every turn's messages, and ``_normal``'s per-element path strings were
    most of its time; anything unusual (a non-str key, a non-finite float, another type) goes to ``_normal``.
    """
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is dict:
        normal = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlainJSON
            normal[key] = item if type(item) in _PLAIN else _fast_normal(item)
        return normal
    if kind is list or kind is tuple:
        return [item if type(item) in _PLAIN else _fast_normal(item) for item in value]
    if kind is float and math.isfinite(value):
        return int(value) if value.is_integer() and abs(value) < _EXACT_INT_FLOAT else value
    raise _NotPlainJSON


def _normal(value: Any, where: str) -> Any:
    """``value`` with tuples as lists and integral floats as ints; raises for anything that is not JSON."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"Cannot fingerprint {where}: {value} is not a finite number.")
        return int(value) if value.is_integer() and abs(value) < _EXACT_INT_FLOAT else value
    if isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value):
            raise TypeError(f"Cannot fingerprint {where}: its keys must be strings.")
        return {key: _normal(item, f"{where}.{key}") for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_normal(item, f"{where}[{i}]") for i, item in enumerate(value)]
    raise TypeError(f"Cannot fingerprint {where}: a {type(value).__name__} is not a JSON value.")


def numbered_tool_ids(messages: list[Message]) -> list[Message]:
    """``messages`` with tool-call ids replaced by their order of appearance (ids are random per call)."""
    if not any("tool_calls" in m or "tool_call_id" in m for m in messages):
        return messages
    ids: dict[str, str] = {}
    numbered: list[Message] = []
    for message in messages:
        message = message.copy()
        if message.get("tool_calls"):
            message["tool_calls"] = [
                {**call, "id": ids.setdefault(call["id"], f"call_{len(ids)}")} for call in message["tool_calls"]
            ]
        if "tool_call_id" in message:
            message["tool_call_id"] = ids.setdefault(message["tool_call_id"], f"call_{len(ids)}")
        numbered.append(message)
    return numbered
