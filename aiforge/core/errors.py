"""Every error and warning a user can meet, in one home: one line in IPython (``%tb`` shows the frames), never an
API key.

``aiforge`` exports each of them (``except aiforge.BudgetExceededError``); ``aiforge.core.types`` re-exports the
configuration and provider errors (``from aiforge.core.types import ProviderError``). Nothing here imports anything
of aiforge, so every module of every layer can raise them: an error that carries a report (``AggregationError``,
``ComparisonFailedError``) is handed it by the operation that raises it.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
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


class BatchInterrupted(Interrupted):
    """Ctrl-C during ``run_batch``: the finished items are kept; the same call again runs only the rest.

    A ``KeyboardInterrupt`` that IPython shows as one line (``%tb`` keeps the frames). ``finished`` and
    ``total`` count the batch's items.
    """

    def __init__(self, message: str, *, finished: int = 0, total: int = 0) -> None:
        super().__init__(message)
        self.finished = finished
        self.total = total


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


class OutputValidationError(AIForgeError):
    """The model's reply is not valid JSON for the ``output=`` type, after every retry.

    ``raw_text`` is the reply as received; ``errors`` is pydantic's error list (``loc``, ``msg``, ``type``).
    """

    def __init__(self, message: str, *, raw_text: str, errors: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.raw_text = raw_text
        self.errors = errors


class OutputRefusedError(AIForgeError):
    """The model refused to answer (a refusal is not a validation error); ``refusal`` is its explanation."""

    def __init__(self, refusal: str) -> None:
        super().__init__(f"The model refused to answer: {refusal}" if refusal else "The model refused to answer.")
        self.refusal = refusal


class StoreError(ConfigError):
    """A store file aiforge cannot use (newer schema, another program's database, corrupt); says what to do."""


class CheckpointMismatchError(AIForgeError, ValueError):
    """The store holds the checkpoint of another batch; the message says what differs and how to start over."""


class ReplayMismatchError(AIForgeError):
    """A request in replay mode that the cassette does not hold; says what differs from the closest one."""


class MissingValueError(ValueError):
    """A batch row whose item or template field is None, NaN or ``pd.NA``: it fails without a call."""


class FileInputError(AIForgeError, ValueError):
    """A file a row names cannot be sent: missing, unreadable, an encrypted or broken PDF, a corrupt image, a TIFF of
    several pages, or over what the provider reads (bytes, pixels, pages, alone or with the row's other files in one
    request). Only that row fails; the message says which file and why."""


class BudgetExceededError(AIForgeError):
    """An item ``run_batch(max_cost=...)`` did not start: running it could have passed the budget."""


class ItemNotRunError(AIForgeError):
    """A batch request the provider never ran: the job expired, was cancelled or failed before reaching it.

    ``reason`` is ``"expired"``, ``"cancelled"`` or ``"failed"``; submitting the item again runs it.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"not run: the batch job was {reason}" + (f" ({detail})" if detail else ""))
        self.reason = reason


class JobNotFinishedError(AIForgeError):
    """``results()`` of a job that is still running; ``wait()`` first."""


class AggregationError(AIForgeError):
    """Chunks of an ``agg`` level failed (``failed``); the answered ones are kept, so the same call asks only those.

    ``failed`` holds the failed chunks' ``BatchFailure``s, ``report`` the ``AggReport`` of what ran.
    """

    def __init__(self, message: str, *, failed: Sequence[Any], report: Any) -> None:
        super().__init__(message)
        self.failed = list(failed)
        self.report = report


class ComparisonFailedError(AIForgeError):
    """A comparison that failed twice (after the agent's own retries): ``topk`` cannot rank without it."""

    def __init__(self, message: str, run: Any) -> None:
        super().__init__(message)
        self.run = run
        """What ran up to the failure (its ``TopKRun``: batches, cost and requests)."""


class FailedRowsWarning(UserWarning):
    """An operation returned with rows that failed: they are null in its result, their errors in ``.failed``."""


class EmbeddedModelWarning(UserWarning):
    """A label or extraction batch runs on the embedded model, whose typed columns are often wrong."""


class ChatModelVectorsWarning(EmbeddedModelWarning):
    """``dedup``, ``join`` or ``cluster`` compares a chat model's pooled vectors, not an embedding model's."""


class TruncatedRowWarning(UserWarning):
    """A row (or a partial answer) longer than one request can hold was cut to fit the context window."""
