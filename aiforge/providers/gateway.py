"""The ``internal_gateway`` provider: any OpenAI-compatible server (vLLM, Ollama, LiteLLM, a company proxy)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, ClassVar

from aiforge.core.types import BadRequestError, CallParams, Completion, LabelScores, Message, ToolSpec
from aiforge.providers.base import StreamEvent
from aiforge.providers.openai_output import JSON_OBJECT_ONLY, rejects_json_schema, strict_schema_of
from aiforge.providers.openai_scoring import score_by_logprobs
from aiforge.providers.openai_wire import ChatCompletionsProvider
from aiforge.providers.sdk import Endpoint

if TYPE_CHECKING:
    from aiforge.core.file_inputs import FileRules
    from aiforge.core.files import FileKind
    from aiforge.providers.batch_api import BatchLimits
    from aiforge.providers.openai_batch import OpenAIBatchAPI


class GatewayProvider(ChatCompletionsProvider):
    """Chat Completions at ``GATEWAY_BASE_URL``; ``GATEWAY_API_KEY`` and ``GATEWAY_MODEL`` are optional.

    Structured output goes as strict ``json_schema``; a server that answers that with a 400 gets
    ``json_object`` and the schema as instructions instead, at once and on every later call (the
    endpoint is remembered for the process), so only the first call costs an extra request.
    """

    name: ClassVar[str] = "internal_gateway"
    endpoint: ClassVar[Endpoint] = Endpoint(
        "internal_gateway",
        "GATEWAY_BASE_URL",
        "GATEWAY_API_KEY",
        "default",
        needs_key=False,
        model_setting="GATEWAY_MODEL",
    )
    # Gateways implement the long-standing parameter; not all know max_completion_tokens.
    max_tokens_field: ClassVar[str] = "max_tokens"
    scores_labels: ClassVar[bool] = True
    reads_files: tuple[FileKind, ...] = ("image", "pdf")  # an OpenAI-compatible gateway to its models
    file_rules: FileRules | None = "openai"

    def batch_api(self, limits: BatchLimits | None = None) -> OpenAIBatchAPI:
        """The Files + Batches API (``agent.submit_batch``); the server must serve ``/v1/files`` and ``/v1/batches``."""
        from aiforge.providers.openai_batch import OpenAIBatchAPI

        return OpenAIBatchAPI(self, limits)

    async def score_labels(self, messages: list[Message], labels: Sequence[str], params: CallParams) -> LabelScores:
        """Each label's probability from the first answer token's ``top_logprobs`` (``openai_scoring``)."""
        return await score_by_logprobs(self, messages, labels, params)

    def json_object_only(self, model: str) -> bool:
        return (self.base_url, model) in JSON_OBJECT_ONLY

    async def complete(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> Completion:
        sends_json_schema = self._sends_json_schema(params)
        try:
            return await super().complete(messages, tools, params)
        except BadRequestError as exc:
            if not (sends_json_schema and self._remember_rejection(exc, params)):
                raise
        return await super().complete(messages, tools, params)

    async def stream(
        self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams
    ) -> AsyncGenerator[StreamEvent, None]:
        sends_json_schema, started = self._sends_json_schema(params), False
        try:
            async with aclosing(super().stream(messages, tools, params)) as events:
                async for event in events:
                    started = True
                    yield event
            return
        except BadRequestError as exc:
            # The 400 comes before any event; a failure after some cannot be undone by asking again.
            if started or not (sends_json_schema and self._remember_rejection(exc, params)):
                raise
        async with aclosing(super().stream(messages, tools, params)) as events:
            async for event in events:
                yield event

    def _sends_json_schema(self, params: CallParams) -> bool:
        if params.output is None or strict_schema_of(params.output) is None:
            return False
        return not self.json_object_only(params.model or self.default_model)

    def _remember_rejection(self, error: BadRequestError, params: CallParams) -> bool:
        """True (and the endpoint remembered) when ``error`` is the server refusing a ``json_schema`` request."""
        if not rejects_json_schema(error):
            return False
        JSON_OBJECT_ONLY.remember(self.base_url, params.model or self.default_model)
        return True
