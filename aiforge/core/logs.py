"""One redactor for keys, and logging that cannot leak them: ``redact``, ``setup_logging()``.

Every key aiforge hands to an SDK client is registered here first. ``redact`` replaces keys
(the registered ones, or those a caller names), auth header values and anything shaped like a
key; the logging filter applies it to records of aiforge, httpx, httpcore, openai and anthropic,
provider errors to their messages and bodies, and the notebook layer to the errors it shows.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable

REDACTED = "[REDACTED]"
LOGGERS = ("aiforge", "httpx", "httpx2", "httpcore", "httpcore2", "openai", "anthropic")

_secrets: set[str] = set()
_lock = threading.Lock()
_pattern: re.Pattern[str] | None = None
# Authorization headers and x-api-key values, whatever the key looks like; the name stays.
_HEADER = re.compile(r"(?i)((?:authorization|x-api-key)['\"]?\s*[:=,]\s*\(?['\"]?(?:bearer\s+)?)([^'\"\s,)]+)")
# Keys nobody registered: OpenAI-style ``sk-`` keys (their first characters stay) and bearer tokens.
_KEY_SHAPED = re.compile(r"\b(sk-[A-Za-z0-9_-]{4})[A-Za-z0-9_-]{8,}|\b(Bearer\s+)\S+", re.I)


def register_secret(value: str | None) -> None:
    """Make ``value`` redacted from every aiforge-managed log record from now on."""
    global _pattern
    if not value or len(value) < 4:
        return
    with _lock:
        if value in _secrets:
            return
        _secrets.add(value)
        _pattern = re.compile("|".join(re.escape(s) for s in sorted(_secrets, key=len, reverse=True)))


def redact(text: str, secrets: Iterable[str] | None = None, *, mask: str = REDACTED) -> str:
    """``text`` with keys, auth header values and key-shaped tokens replaced by ``mask``.

    ``secrets`` are the keys to look for; None means every key given to ``register_secret``.
    """
    if secrets is None:
        pattern = _pattern
        if pattern is not None:
            text = pattern.sub(mask, text)
    else:
        for secret in sorted(secrets, key=len, reverse=True):  # a key containing another goes first
            if secret:
                text = text.replace(secret, mask)
    text = _HEADER.sub(lambda m: m.group(1) + mask, text)
    return _KEY_SHAPED.sub(lambda m: (m.group(1) or m.group(2)) + mask, text)


class RedactingFilter(logging.Filter):
    """Rewrites a record's message (arguments merged) with secrets redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is still logged, redacted
            message = str(record.msg)
        record.msg, record.args = redact(message), None
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


_installed: dict[str, logging.Handler] = {}


def setup_logging(level: int | str = logging.INFO, handler: logging.Handler | None = None) -> logging.Handler:
    """Log aiforge and its HTTP stack at ``level`` through one redacting handler.

    Returns the handler (a stderr StreamHandler unless one is given).
    """
    handler = handler or logging.StreamHandler()
    handler.addFilter(RedactingFilter())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for name in LOGGERS:
        logger = logging.getLogger(name)
        previous = _installed.pop(name, None)
        if previous is not None:
            logger.removeHandler(previous)
        logger.addHandler(handler)
        logger.setLevel(level)
        _installed[name] = handler
    return handler
