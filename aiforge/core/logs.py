"""Logging that cannot leak keys: ``setup_logging()`` and the redacting filter behind it.

Every key aiforge hands to an SDK client is registered here first; the filter replaces any
occurrence of a registered key (and anything shaped like a bearer token) in log records of
aiforge, httpx, httpcore, openai and anthropic with ``[REDACTED]``.
"""

from __future__ import annotations

import logging
import re
import threading

REDACTED = "[REDACTED]"
LOGGERS = ("aiforge", "httpx", "httpx2", "httpcore", "httpcore2", "openai", "anthropic")

_secrets: set[str] = set()
_lock = threading.Lock()
_pattern: re.Pattern[str] | None = None
# Authorization headers and x-api-key values, whatever the key looks like.
_HEADER = re.compile(r"(?i)((?:authorization|x-api-key)['\"]?\s*[:=,]\s*\(?['\"]?(?:bearer\s+)?)([^'\"\s,)]+)")


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


def redact(text: str) -> str:
    """``text`` with registered keys and auth header values replaced by ``[REDACTED]``."""
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    return _HEADER.sub(lambda m: m.group(1) + REDACTED, text)


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
