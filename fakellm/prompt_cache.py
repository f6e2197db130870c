"""Anthropic's prompt cache, as the Messages API bills it: ``srv.prompt_cache``.

A request whose tools or system blocks carry ``cache_control`` has a cacheable prefix: everything in the
API's order (tools, then system) up to the last marked block. When that prefix is at least ``min_tokens``
long, the first request with it writes it (``cache_creation_input_tokens``) and later ones with the same
model and prefix read it (``cache_read_input_tokens``) until ``ttl`` seconds pass unused; a shorter prefix
is never cached. A prefix is available once its first answer is being written, so requests that arrive
together with the first one (within the server's latency) write it too, as they do at Anthropic.

A ``Reply`` that scripts cache counts (``cached_tokens``, ``cache_creation_tokens`` or the usage keys)
keeps them; OpenAI requests are not simulated.

    srv.prompt_cache.min_tokens = 1024  # the prefix length below which nothing is cached
    srv.prompt_cache.ttl = 300.0        # seconds a prefix stays cached after its last use
"""

from __future__ import annotations

import threading
import time
from typing import Any

from fakellm.wire import _ENCODER


class PromptCache:
    """The prefixes cached so far, by model and prefix; see the module docstring for the knobs."""

    def __init__(self) -> None:
        self.min_tokens = 1024
        self.ttl = 300.0
        self._seen: dict = {}  # (model, prefix JSON) -> (when first written, last use), time.monotonic()
        self._lock = threading.Lock()

    def usage(self, body: Any, input_tokens: int, arrived: float) -> tuple[int, int]:
        """``(read, written)`` tokens of ``body``'s marked prefix (at most ``input_tokens``), recording its use.

        ``arrived`` is when the request came in (``time.monotonic()``): a request that arrived before the prefix
        was first written cannot read it.
        """
        prefix = _marked_prefix(body)
        if not prefix:
            return 0, 0
        tokens = min(sum(len(_text(part)) for part in prefix) // 4, input_tokens)
        if tokens < self.min_tokens:
            return 0, 0
        key = (body.get("model"), _ENCODER.encode(prefix))
        now = time.monotonic()
        with self._lock:
            written, last_use = self._seen.get(key, (None, 0.0))
            if written is not None and now - last_use > self.ttl:
                written = None  # expired: written again
            hit = written is not None and arrived >= written
            self._seen[key] = (now if written is None else written, now)
        return (tokens, 0) if hit else (0, tokens)

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()


def _marked_prefix(body: Any) -> list:
    """Tools then system blocks, up to and including the last one with ``cache_control`` ([] if none is)."""
    if not isinstance(body, dict):
        return []
    system = body.get("system")
    parts = list(body.get("tools") or []) + (system if isinstance(system, list) else [])
    marked = [i for i, part in enumerate(parts) if isinstance(part, dict) and part.get("cache_control")]
    return parts[: marked[-1] + 1] if marked else []


def _text(part: Any) -> str:
    """What a prefix part counts as: a system block's text, a tool's JSON."""
    if isinstance(part, dict) and part.get("type") == "text":
        return str(part.get("text") or "")
    return _ENCODER.encode({k: v for k, v in part.items() if k != "cache_control"}) if isinstance(part, dict) else ""
