"""Wire encoding shared by both protocols: compact JSON, HTTP/1.1 chunked frames, ids, strict-mode errors."""

from __future__ import annotations

import json
import os
from typing import Any

_ENCODER = json.JSONEncoder(separators=(",", ":"))  # reused: json.dumps(**kw) builds an encoder per call


def _new_id(prefix: str) -> str:
    return prefix + os.urandom(12).hex()


class _Invalid(Exception):
    """Strict-mode validation failure -> 400 in the protocol's error shape."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.param = param  # OpenAI's `error.param`
        self.code = code  # OpenAI's `error.code`
        self.status = status  # 400, or 413 for a request over a size limit


def _dumps(obj: Any) -> bytes:
    return _ENCODER.encode(obj).encode()


def _chunk(data: bytes) -> bytes:
    """One HTTP/1.1 chunked-transfer frame."""
    return b"%X\r\n%s\r\n" % (len(data), data)


_LAST_CHUNK = b"0\r\n\r\n"


def _pieces(s: str, size: int) -> list:
    size = max(1, size)
    return [s[i : i + size] for i in range(0, len(s), size)] or [""]
