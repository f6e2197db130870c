"""Neutral types shared by every layer: errors, messages, tool calls, usage and completions.

Messages are plain dicts shaped by TypedDicts: cheap to copy, easy to show as a DataFrame.
Nothing here imports a provider SDK, LangGraph or IPython.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict

from aiforge.core.render import replace_lone_surrogates

if TYPE_CHECKING:
    from types import FrameType

    from aiforge.core.output import OutputSpec

# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# Messages and tools
# ---------------------------------------------------------------------------

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(TypedDict):
    """One tool invocation requested by the model."""

    id: str
    name: str
    arguments: dict[str, Any]
    # Set when the model's arguments were not a JSON object: the raw text, kept so the
    # agent can answer the call with a clear error instead of running the tool.
    invalid_arguments: NotRequired[str]


class Message(TypedDict):
    """A conversation message in aiforge's neutral shape."""

    role: Role
    content: str
    tool_calls: NotRequired[list[ToolCall]]
    tool_call_id: NotRequired[str]
    name: NotRequired[str]


def parse_tool_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """``(arguments, invalid_arguments)``: a JSON object, or ``{}`` and the raw text when it is not one."""
    if isinstance(raw, dict):
        return _checked_arguments(raw, json.dumps(raw, default=str))
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None  # a call to a tool without parameters
    if not isinstance(raw, str):
        return {}, json.dumps(raw, default=str)
    try:
        value = json.loads(raw)
    except ValueError:
        return {}, raw
    return _checked_arguments(value, raw)


def _checked_arguments(value: Any, raw: str) -> tuple[dict[str, Any], str | None]:
    """Arguments that can be sent back on the wire: a JSON object, finite numbers, UTF-8 text."""
    if not isinstance(value, dict):
        return {}, raw
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:  # NaN or Infinity: no provider accepts them back in the history
        return {}, raw
    cleaned = replace_lone_surrogates(text)
    return (value if cleaned is text else json.loads(cleaned)), None


def new_tool_call(name: str, raw_arguments: Any = None, call_id: str | None = None) -> ToolCall:
    """The one way to build a ``ToolCall``: arguments checked, a missing id (some gateways omit it) made fresh.

    ``raw_arguments`` is a dict or the JSON text a model produced; anything that is not a JSON
    object with finite numbers is kept as ``invalid_arguments`` so the agent can answer the call
    with a clear error instead of running the tool.
    """
    arguments, invalid = parse_tool_arguments(raw_arguments)
    call = ToolCall(id=call_id or f"call_{secrets.token_hex(12)}", name=name, arguments=arguments)
    if invalid is not None:
        call["invalid_arguments"] = invalid
    return call


class ToolSpec(TypedDict):
    """What a provider needs to offer a tool to the model: name, description, JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(slots=True)
class Usage:
    """Token counts of one model call. ``input_tokens`` includes the cached ones."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(slots=True)
class Completion:
    """The complete result of one model call."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    finish_reason: str | None = None
    # The model declined to answer a structured request (OpenAI ``refusal``, Anthropic stop reason
    # ``refusal``): its explanation, possibly empty. ``None`` when it did not refuse.
    refusal: str | None = None


@dataclass(frozen=True, slots=True)
class CallParams:
    """Per-call generation parameters handed to a provider."""

    model: str
    temperature: float | None = None
    max_tokens: int | None = None
    # The structured answer asked for (``aiforge.core.output.OutputSpec``), or None for free text.
    # A provider given one makes its final answer the JSON of that type by its own mechanism
    # (strict json_schema, output_config, constrained decoding, instructions); validation is above it.
    output: OutputSpec | None = None
