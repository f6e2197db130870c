"""The local servers data scientists already run, as endpoints: Ollama, LM Studio, vLLM and llama.cpp's llama-server.

Each speaks OpenAI's Chat Completions, needs no key (``LOCAL_SERVER_API_KEY`` is sent when set, for
a server started with ``--api-key``), passes ``MODEL`` through and costs nothing. None is ever
chosen by ``PROVIDER=auto``: a server that happens to run on this machine is not a configuration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlsplit

from aiforge.core.file_inputs import FileRules
from aiforge.core.types import CallParams, LabelScores, Message
from aiforge.providers.openai_scoring import score_by_logprobs
from aiforge.providers.openai_wire import ChatCompletionsProvider
from aiforge.providers.sdk import Endpoint

OLLAMA_PORT = 11434


def ollama_base_url(host: str | None) -> str:
    """The OpenAI-compatible URL of the Ollama at ``OLLAMA_HOST`` (``0.0.0.0:11434``, ``http://box``, ...)."""
    host = (host or "").strip() or f"localhost:{OLLAMA_PORT}"
    if "://" not in host:
        host = "http://" + host
    parts = urlsplit(host)
    hostname = parts.hostname or "localhost"
    if hostname == "0.0.0.0":  # noqa: S104 - where Ollama listens, not where to connect
        hostname = "127.0.0.1"
    if ":" in hostname:
        hostname = f"[{hostname}]"
    path = parts.path.rstrip("/")
    if not path.endswith("/v1"):
        path += "/v1"
    return f"{parts.scheme}://{hostname}:{parts.port or OLLAMA_PORT}{path}"


@dataclass(frozen=True, slots=True)
class OllamaEndpoint(Endpoint):
    """Ollama's own ``OLLAMA_HOST`` names a host (and port), not an API URL."""

    def base_url(self, settings: Any) -> str:
        return ollama_base_url(getattr(settings, self.url_setting))


def _endpoint(name: str, url_setting: str, url: str) -> Endpoint:
    return Endpoint(name, url_setting, "LOCAL_SERVER_API_KEY", "default", default_url=url, needs_key=False)


class LocalServerProvider(ChatCompletionsProvider):
    """Chat Completions at a server on this machine (or the network): free, keyless."""

    free = True
    # Local servers implement the long-standing parameter; not all know max_completion_tokens.
    max_tokens_field: ClassVar[str] = "max_tokens"
    scores_labels: ClassVar[bool] = True  # a server that returns no logprobs fails with ProviderError
    # Chat Completions' content parts, read only by a vision model the server may or may not have loaded: text by
    # default, FILE_INPUT="native" sends them.
    file_rules: FileRules | None = "openai"

    async def score_labels(self, messages: list[Message], labels: Sequence[str], params: CallParams) -> LabelScores:
        """Each label's probability from the first answer token's ``top_logprobs`` (``openai_scoring``)."""
        return await score_by_logprobs(self, messages, labels, params)


class OllamaProvider(LocalServerProvider):
    name: ClassVar[str] = "ollama"
    endpoint: ClassVar[Endpoint] = OllamaEndpoint(
        "ollama", "OLLAMA_HOST", "LOCAL_SERVER_API_KEY", "default", needs_key=False
    )


class LMStudioProvider(LocalServerProvider):
    name: ClassVar[str] = "lmstudio"
    endpoint: ClassVar[Endpoint] = _endpoint("lmstudio", "LMSTUDIO_BASE_URL", "http://localhost:1234/v1")


class VLLMProvider(LocalServerProvider):
    name: ClassVar[str] = "vllm"
    endpoint: ClassVar[Endpoint] = _endpoint("vllm", "VLLM_BASE_URL", "http://localhost:8000/v1")


class LlamaCppProvider(LocalServerProvider):
    name: ClassVar[str] = "llamacpp"
    endpoint: ClassVar[Endpoint] = _endpoint("llamacpp", "LLAMACPP_BASE_URL", "http://localhost:8080/v1")
