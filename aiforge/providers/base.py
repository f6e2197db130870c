"""The provider protocol: the one small surface every LLM backend implements."""

from __future__ import annotations

import threading
import warnings
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from aiforge.core.types import (
    CallParams,
    Completion,
    EmbeddingLimits,
    Embeddings,
    LabelScores,
    Message,
    ProviderError,
    ToolSpec,
)

if TYPE_CHECKING:
    from aiforge.core.file_inputs import FileRules
    from aiforge.core.files import FileKind
    from aiforge.providers.batch_api import BatchLimits, ProviderBatchAPI

StreamEvent = str | Completion
"""What ``Provider.stream`` yields: text deltas, then exactly one final ``Completion``."""

StructuredOutputMode = Literal["json_schema", "output_config", "grammar", "scripted", "prompted"]
"""How a provider answers a call with ``params.output`` (see ``Provider.structured_output``)."""


class Provider(ABC):
    """An LLM backend.

    Implement ``complete``; override ``stream`` when the backend streams. Messages and tool
    calls come and go in aiforge's neutral types; the provider translates its wire format.
    Retries, timeouts and error mapping happen inside the provider, so callers only ever see
    ``aiforge.core.types`` errors.

    What a provider is and can do is data on it (its profile): the layers above ``providers/``
    read these attributes and never ask a provider's class or name, nor probe it with ``getattr``.
    """

    name: ClassVar[str] = "custom"
    # supports_native_tools and free are set by a class, or per instance by a wrapper whose are those of the
    # provider it wraps (a cassette's): instance attributes with the class's value as default.
    supports_native_tools: bool = False
    supports_streaming: ClassVar[bool] = False
    #: Cost of this provider's calls is always zero (local models, fakes).
    free: bool = False
    #: Why this backend is sent no sampling temperature; None when it is sent ``TEMPERATURE``.
    temperature_unsent: ClassVar[str | None] = None
    service_tier_unsent: ClassVar[str | None] = "it has no service tiers to choose from"
    """Why this backend is sent no ``SERVICE_TIER``; None when it is sent as ``service_tier`` (Chat Completions)."""
    default_temperature: ClassVar[float | None] = None
    """The temperature this provider picks itself when the user set no ``TEMPERATURE``; None: it is sent the
    setting's default. A provider with one (the embedded model's measured greedy default) is sent
    ``temperature=None`` until the user sets ``TEMPERATURE``."""
    structured_output: ClassVar[StructuredOutputMode] = "prompted"
    """How this provider answers ``params.output``: ``"json_schema"`` (Chat Completions' strict response format),
    ``"output_config"`` (the Messages API's output format, or a forced tool), ``"grammar"`` (constrained decoding
    in process), ``"scripted"`` (a test's script) or ``"prompted"`` (the schema in the system prompt, by the
    ``PromptedTools`` wrapper an agent puts around a provider without native tool calling)."""
    embedded: ClassVar[bool] = False
    """This is the bundled in-process model (``provider="local"``): for trying aiforge offline, not for columns
    one relies on (``EmbeddedModelWarning``)."""
    scores_labels: ClassVar[bool] = False
    """``score_labels`` works here: the model's own likelihood of each label, read without generating (a
    cascade's cheap first pass asks it for its confidence)."""
    classifies_by_scoring: bool = False
    """``score_labels`` picks a label better than generating one under a grammar of the labels does, and faster
    (measured for the embedded model in ``bench/cost_label_scoring.py``): a label batch with this provider is
    answered by scoring unless ``LABELS_BY`` says otherwise (an instance may opt in: a scripted provider's)."""
    embeds: ClassVar[bool] = False
    """``embed`` works here: texts to vectors (``df.aiforge.embed``, ``aiforge.semantic.embed_texts``)."""
    default_embedding_model: ClassVar[str | None] = None
    """The model ``embed`` uses when neither the call nor ``EMBEDDING_MODEL`` names one; None: ``default_model``."""
    reads_files: tuple[FileKind, ...] = ()
    """The kinds of file (``"image"``, ``"pdf"``) this provider's models read natively: a file column's marker is sent
    as the vendor's block (``FILE_INPUT=auto``); the others take the text path (a PDF's text extracted locally)."""
    file_rules: FileRules | None = None
    """Whose published rules count and limit the files it is sent (``core.file_rules``): ``"openai"`` (Chat
    Completions' content parts), ``"anthropic"`` (the Messages API's blocks), None when it can send no file at all
    (``FILE_INPUT=native`` is refused)."""
    embedding_limits: EmbeddingLimits = EmbeddingLimits()
    """How many texts one ``embed`` call may carry; callers split longer lists into requests within these (an
    instance may have its own: a scripted provider's, to test splitting)."""
    base_url: str | None = None
    """The URL this provider's calls go to (part of what identifies a batch or a cached reply); None in process."""
    default_model: str = "default"

    @property
    def registry_name(self) -> str:
        """The name this provider is registered, priced and logged under (``PROVIDER=...``): ``name`` for a
        built-in; a function provider's or a cassette's own."""
        return self.name

    @classmethod
    def configured_model(cls, settings: Any) -> str:
        """The model an instance made from ``settings`` would call, without making one (no key needed)."""
        return cls.default_model

    @classmethod
    def configured_base_url(cls, settings: Any) -> str | None:
        """The ``base_url`` an instance made from ``settings`` would have, without making one (no key needed)."""
        return None

    @classmethod
    def connection_key(cls, settings: Any) -> tuple[Any, ...]:
        """Settings that make two instances of this provider different (see ``create_provider``)."""
        return ()

    @abstractmethod
    async def complete(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> Completion:
        """Run one model call and return its complete result."""

    async def stream(
        self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams
    ) -> AsyncIterator[StreamEvent]:
        """Yield text deltas as they arrive, then the final ``Completion``.

        The default runs ``complete`` and yields its text as one chunk.
        """
        completion = await self.complete(messages, tools, params)
        if completion.text:
            yield completion.text
        yield completion

    def batch_api(self, limits: BatchLimits | None = None) -> ProviderBatchAPI[Any]:
        """This provider's Batch API (``agent.submit_batch``); ``limits`` replaces its own (to test splitting).

        Raises ``ProviderError`` naming the providers that have one; a vendor with a Batch API overrides this.
        """
        name = self.registry_name
        raise ProviderError(
            f"the {name} provider has no Batch API; submit_batch works with openai, internal_gateway (a gateway "
            f"serving /v1/files and /v1/batches), anthropic and scripted. Use run_batch for {name}.",
            provider=name,
        )

    async def score_labels(self, messages: list[Message], labels: Sequence[str], params: CallParams) -> LabelScores:
        """The probability of each of ``labels`` being the whole answer to ``messages`` (``scores_labels``).

        Raises ``ProviderError`` by default; a backend that exposes its likelihoods overrides this.
        """
        name = self.registry_name
        raise ProviderError(f"the {name} provider cannot score labels (scores_labels is False)", provider=name)

    async def embed(self, texts: Sequence[str], model: str | None = None) -> Embeddings:
        """The vectors of ``texts`` from one request (``embeds``; at most ``embedding_limits`` of them).

        ``model`` None: ``embedding_model(None)``. Raises ``ProviderError`` by default; a backend with an
        embeddings API overrides this (``aiforge.providers.embedding_providers()`` lists the built-in ones).
        """
        name = self.registry_name
        raise ProviderError(
            f"the {name} provider has no embeddings API (embeds is False); "
            "aiforge.providers.embedding_providers() lists the providers that embed",
            provider=name,
        )

    def embedding_model(self, model: str | None) -> str:
        """The embeddings model a call with ``model`` uses: it, or ``default_embedding_model``, or ``default_model``."""
        return model or self.default_embedding_model or self.default_model

    @property
    def embeds_chat_model(self) -> bool:
        """``embed`` pools a chat model's token states rather than asking a model trained for embeddings: every
        pair of texts scores high, so ``dedup``, ``join`` and ``cluster`` warn (``ChatModelVectorsWarning``)."""
        return False

    def count_tokens(self, text: str) -> int | None:
        """``text``'s tokens by the model's own tokenizer; None where this provider has none at hand (callers then
        use ``core.tokens.token_bound``, an estimate never under the count)."""
        return None

    async def aclose(self) -> None:  # noqa: B027 - optional hook, most providers hold nothing
        """Release network clients; the provider may be used again afterwards."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r} model={self.default_model!r}>"


_warned_unsent: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def warn_of_unsent_settings(provider: Provider, settings: Any) -> None:
    """Warn once per process, provider and setting when the user set ``TEMPERATURE`` or ``SERVICE_TIER`` and
    ``provider`` never sends it."""
    unsent = {
        "TEMPERATURE": provider.temperature_unsent if "TEMPERATURE" in settings.model_fields_set else None,
        "SERVICE_TIER": provider.service_tier_unsent if settings.SERVICE_TIER is not None else None,
    }
    for setting, reason in unsent.items():
        if reason is None:
            continue
        with _warned_lock:
            if (setting, provider.name) in _warned_unsent:
                continue
            _warned_unsent.add((setting, provider.name))
        from aiforge.core.costs import caller_stacklevel

        warnings.warn(
            f"{setting}={getattr(settings, setting)} is not sent to the {provider.name} provider: {reason}.",
            UserWarning,
            stacklevel=caller_stacklevel(),
        )
