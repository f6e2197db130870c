"""Neutral types shared by every layer: messages, usage and completions (tool calls from ``tool_calls``, errors from
``errors``, re-exported here).

Messages are plain dicts shaped by TypedDicts: cheap to copy, easy to show as a DataFrame.
Nothing here imports a provider SDK, LangGraph or IPython.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict

from aiforge.core.errors import (
    AIForgeError,
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConfigError,
    ContextWindowExceededError,
    Interrupted,
    NotFoundError,
    PermissionDeniedError,
    ProviderError,
    RateLimitError,
    UsageError,
)
from aiforge.core.tool_calls import (
    ToolCall,
    ToolResult,
    ToolSpec,
    new_tool_call,
    parse_tool_arguments,
)

if TYPE_CHECKING:
    from aiforge.core.output import OutputSpec

__all__ = [
    "AIForgeError",
    "APIConnectionError",
    "APITimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "CallParams",
    "Completion",
    "ConfigError",
    "ContextWindowExceededError",
    "EmbeddingLimits",
    "Embeddings",
    "Interrupted",
    "Message",
    "new_tool_call",
    "NotFoundError",
    "parse_tool_arguments",
    "PermissionDeniedError",
    "ProviderError",
    "RateLimitError",
    "Role",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "TraceRecord",
    "TraceStep",
    "Usage",
    "UsageError",
]
"""The errors live in ``errors`` (which ``output`` imports too); importing them from here keeps working."""

# ---------------------------------------------------------------------------
# Messages (their tool calls: ``tool_calls``)
# ---------------------------------------------------------------------------

Role = Literal["system", "user", "assistant", "tool"]


class Message(TypedDict):
    """A conversation message in aiforge's neutral shape."""

    role: Role
    content: str
    tool_calls: NotRequired[list[ToolCall]]
    tool_call_id: NotRequired[str]
    name: NotRequired[str]


# ---------------------------------------------------------------------------
# Trace records
# ---------------------------------------------------------------------------

TraceStep = Literal["model", "tool", "cache", "validation", "context", "wait", "retry"]


class TraceRecord(TypedDict):
    """One step of a turn's trace (``ChatResponse.trace``): which keys a record has depends on its ``step``.

    - ``model``: a model call (``Turn.account``): ``model``, the token counts, ``cost``, ``finish_reason``,
      ``tool_calls`` (the names asked for); ``refusal`` when the model refused, ``stopped_by_limit`` when
      the tool cap answered its calls; a batch row answered by scoring its labels (``name`` ``score_labels``)
      has ``probabilities``, each label's.
    - ``tool``: a tool call (``Toolset.execute``): ``id``, ``input`` (the arguments), ``output``, ``error``.
    - ``cache``: a reply served from the response cache (``name`` ``hit``) or from an identical row of the same
      batch (``duplicate``): the original tokens and ``cached_cost``.
    - ``validation``: one check of a structured answer: ``attempt``, ``output``, ``error``, ``errors``.
    - ``context``: what ``%%chat`` sent for a ``{table}``: ``input`` (its shape), ``output``, ``input_tokens``.
    - ``wait``: time the turn waited for its turn (``core.waits``; ``queue_ms``, not ``latency_ms``): ``name``
      ``worker`` (a batch item for a free worker; it starts before the turn, at a negative ``start_ms``),
      ``pacer`` (the rate pacer) or ``engine`` (the embedded model's queue).
    - ``retry``: an attempt of a model call that failed and was sent again: ``name`` (the error class),
      ``attempt`` (the failed one, from 1), ``error``, ``latency_ms`` the backoff before the next attempt.

    ``start_ms`` is when the step started, in milliseconds from the turn's start (records of older traces
    lack it); ``latency_ms`` is how long it took. A model call's time covers its waits and retries.
    """

    step: TraceStep
    node: str
    name: str
    start_ms: NotRequired[float]
    latency_ms: NotRequired[float]
    model: NotRequired[str]
    input_tokens: NotRequired[int]
    output_tokens: NotRequired[int]
    cached_input_tokens: NotRequired[int]
    cost: NotRequired[float]
    cached_cost: NotRequired[float]
    finish_reason: NotRequired[str | None]
    tool_calls: NotRequired[list[str]]
    refusal: NotRequired[str]
    stopped_by_limit: NotRequired[bool]
    probabilities: NotRequired[dict[str, float]]
    id: NotRequired[str]
    input: NotRequired[Any]  # a tool's arguments; the shape of a table sent as context
    output: NotRequired[str]
    error: NotRequired[str | None]
    errors: NotRequired[list[Any]]
    attempt: NotRequired[int]


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
    # The service tier the response says served the call (OpenAI's ``service_tier``: ``default``, ``flex``,
    # ``priority``), which is what it is priced at; None when the response does not say.
    service_tier: str | None = None


@dataclass(slots=True)
class LabelScores:
    """How likely each label is as the whole answer to one request (``Provider.score_labels``).

    ``probabilities`` are normalised over the labels given (they sum to 1), in their order; the answer is the
    most likely label and ``confidence`` its probability: what a cascade sets its threshold on.
    """

    probabilities: dict[str, float]
    usage: Usage = field(default_factory=Usage)
    model: str = ""

    @property
    def answer(self) -> str:
        return max(self.probabilities, key=self.probabilities.__getitem__)

    @property
    def confidence(self) -> float:
        return self.probabilities[self.answer]


@dataclass(slots=True)
class Embeddings:
    """The vectors of one embeddings request (``Provider.embed``), one row per text in the texts' order."""

    vectors: Any
    """A float32 ``numpy.ndarray`` of shape ``(len(texts), dim)``, as the model returned them (not re-normalised)."""
    usage: Usage = field(default_factory=Usage)
    """Input tokens of the request (embeddings have no output tokens)."""
    model: str = ""


@dataclass(frozen=True, slots=True)
class EmbeddingLimits:
    """How many texts one embeddings request of a provider may carry (``Provider.embedding_limits``)."""

    max_inputs: int = 2048
    """Texts per request (OpenAI's limit on ``input``'s length)."""
    max_tokens: int = 300_000
    """Input tokens summed over a request (OpenAI's per-request limit), estimated high: a text's UTF-8 bytes / 3
    (English runs near 4 characters a token, Chinese or Japanese near one character of 3 bytes)."""


@dataclass(frozen=True, slots=True)
class CallParams:
    """Per-call generation parameters handed to a provider."""

    model: str
    temperature: float | None = None
    max_tokens: int | None = None
    # The processing tier to ask for (the ``SERVICE_TIER`` setting); None sends none. Only providers whose
    # ``service_tier_unsent`` is None send it.
    service_tier: str | None = None
    # Mark the shared prefix of a request (tools, system prompt) for the provider's prompt cache where the
    # provider has one that must be asked for (``PROMPT_CACHE``; Anthropic's ``cache_control``).
    prompt_cache: bool = True
    # The structured answer asked for (``aiforge.core.output.OutputSpec``), or None for free text.
    # A provider given one makes its final answer the JSON of that type by its own mechanism
    # (strict json_schema, output_config, constrained decoding, instructions); validation is above it.
    output: OutputSpec | None = None
