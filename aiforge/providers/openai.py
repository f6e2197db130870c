"""The ``openai`` provider: OpenAI's Chat Completions API (or anything at ``OPENAI_BASE_URL``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from aiforge.core.types import CallParams, LabelScores, Message
from aiforge.providers.openai_embeddings import DEFAULT_OPENAI_EMBEDDING_MODEL
from aiforge.providers.openai_scoring import score_by_logprobs
from aiforge.providers.openai_wire import ChatCompletionsProvider
from aiforge.providers.sdk import Endpoint

if TYPE_CHECKING:
    from aiforge.core.file_inputs import FileRules
    from aiforge.core.files import FileKind
    from aiforge.providers.batch_api import BatchLimits
    from aiforge.providers.openai_batch import OpenAIBatchAPI

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Reasoning models answer 400 to any temperature but the default, so none is sent to them.
_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")


class OpenAIProvider(ChatCompletionsProvider):
    """OpenAI through ``openai.AsyncOpenAI``; needs ``OPENAI_API_KEY``."""

    name: ClassVar[str] = "openai"
    endpoint: ClassVar[Endpoint] = Endpoint(
        "openai", "OPENAI_BASE_URL", "OPENAI_API_KEY", "gpt-4o-mini", default_url=DEFAULT_BASE_URL
    )
    scores_labels: ClassVar[bool] = True
    default_embedding_model: ClassVar[str | None] = DEFAULT_OPENAI_EMBEDDING_MODEL
    reads_files: tuple[FileKind, ...] = ("image", "pdf")  # image_url and file content parts
    file_rules: FileRules | None = "openai"

    def batch_api(self, limits: BatchLimits | None = None) -> OpenAIBatchAPI:
        """The Files + Batches API (``agent.submit_batch``)."""
        from aiforge.providers.openai_batch import OpenAIBatchAPI

        return OpenAIBatchAPI(self, limits)

    async def score_labels(self, messages: list[Message], labels: Sequence[str], params: CallParams) -> LabelScores:
        """Each label's probability from the first answer token's ``top_logprobs`` (``openai_scoring``)."""
        return await score_by_logprobs(self, messages, labels, params)

    def fixed_temperature(self, model: str) -> bool:
        name = model.rsplit("/", 1)[-1].lower()
        return name.startswith(_REASONING_PREFIXES) and not name.startswith("gpt-5-chat")
