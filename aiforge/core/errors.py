"""The errors aiforge raises on purpose: one line in IPython (``%tb`` shows the frames), never an API key.

``aiforge.core.types`` re-exports every one of them (``from aiforge.core.types import ProviderError``).
Nothing here imports anything of aiforge, so every module, ``core.output`` included, can raise them.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import FrameType


def _short_traceback(exc: BaseException, name: str | None = None) -> list[str]:
    """IPython's ``_render_traceback_``: the error as one line, or the full traceback for ``%tb``."""
    # IPython calls the hook for the cell's output, for its history store and again for %tb;
    # only %tb (IPython.core.magics.execution's ``tb``) is a request for the frames.
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "tb" and code.co_filename.endswith(os.path.join("magics", "execution.py")):
            return [line.rstrip("\n") for line in traceback.format_exception(exc)]
        frame = frame.f_back
    return [f"{name or type(exc).__name__}: {exc}", "(%tb shows the full traceback)"]


class AIForgeError(Exception):
    """Base class of every error aiforge raises on purpose.

    In IPython it shows as one line (``ConfigError: ...``); ``%tb`` shows the full traceback.
    """

    def _render_traceback_(self) -> list[str]:
        return _short_traceback(self)


class ConfigError(AIForgeError, ValueError):
    """Invalid or missing configuration; the message names the setting and how to fix it.

    ``setting`` is the setting's name and ``problem`` what is wrong with its value, when the error
    is about one value (so a CLI can name its own flag instead of the keyword argument).
    """

    def __init__(self, message: str, *, setting: str | None = None, problem: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting
        self.problem = problem


class UsageError(AIForgeError, ValueError):
    """A call's arguments cannot work: a template naming a missing column, an ``output=`` that is no
    model, a frame where a column was expected. Raised before any request; the message names the
    argument and, where one is close, the right name. One line in IPython (``%tb`` shows the frames).
    """


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or a kernel interrupt) stopped an aiforge call, which was cancelled and cleaned up.

    Still a ``KeyboardInterrupt``, and IPython shows it as one: ``KeyboardInterrupt: <message>``.
    """

    def _render_traceback_(self) -> list[str]:
        return _short_traceback(self, "KeyboardInterrupt")


class ProviderError(AIForgeError):
    """An LLM provider failed to answer.

    The message never contains an API key. ``partial_text`` holds what a stream had already
    delivered when it failed (empty otherwise): the answer is incomplete.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        status_code: int | None = None,
        request_id: str | None = None,
        body: Any = None,
        partial_text: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.status_code = status_code
        self.request_id = request_id
        self.body = body
        self.partial_text = partial_text

    @property
    def incomplete(self) -> bool:
        """True when a stream delivered some text before failing."""
        return bool(self.partial_text)

    def __str__(self) -> str:
        parts = [self.message]
        if self.provider:
            parts.append(f"provider={self.provider}")
        if self.status_code is not None:
            parts.append(f"status={self.status_code}")
        if self.request_id:
            parts.append(f"request_id={self.request_id}")
        return " | ".join(parts)


class RateLimitError(ProviderError):
    """The provider answered 429 after every retry; ``retry_after`` is its last hint in seconds."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class APITimeoutError(ProviderError):
    """A request took longer than ``TIMEOUT`` seconds on every attempt."""


class APIConnectionError(ProviderError):
    """The provider could not be reached (refused, reset, DNS) on every attempt."""


class AuthenticationError(ProviderError):
    """The provider rejected the API key (401)."""


class PermissionDeniedError(ProviderError):
    """The key is valid but not allowed to do this (403)."""


class NotFoundError(ProviderError):
    """The model or endpoint does not exist (404)."""


class BadRequestError(ProviderError):
    """The provider rejected the request as malformed (400/422)."""


class ContextWindowExceededError(BadRequestError):
    """The server refused a request as longer than its context: the same request fails again, a shorter one fits.

    ``context_window`` is the context in tokens the server said it has (llama.cpp's ``n_ctx``, OpenAI's "maximum
    context length", Anthropic's "maximum"), ``prompt_tokens`` what it counted in the request; each None when it did
    not say. The message names the ``CONTEXT_WINDOW`` setting, the window ``agg`` packs its requests under.
    """

    def __init__(
        self, message: str, *, context_window: int | None = None, prompt_tokens: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(message, **kwargs)
        self.context_window = context_window
        self.prompt_tokens = prompt_tokens
