"""Which provider makes an agent's vectors: ``EMBEDDING_PROVIDER``, apart from the chat provider (``PROVIDER``).

* ``EMBEDDING_PROVIDER`` unset: the chat provider embeds, except that when the chat provider is the embedded model
  (``local`` with its bundled SmolLM2 weights, a chat model whose vectors put every pair of texts close) and the
  ``[embeddings]`` extra is installed, the vectors come from sentence-transformers' ``all-MiniLM-L6-v2``: then
  ``embed``, ``dedup``, ``join`` and ``cluster`` compare real sentence vectors offline.
* ``"sentence-transformers"``: that library in process, with ``EMBEDDING_MODEL`` (``providers.sentence_vectors``).
* The name of a provider that embeds (``openai``, ``internal_gateway``, ``local``, a local server, ``scripted``):
  that provider, built from the same settings (chat on ``anthropic``, vectors from ``openai``: both keys set).

``check_embedding_settings`` says what is wrong (a provider that cannot embed, the extra missing, a model folder
that does not exist) in one line, when the agent is made: before any request.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from aiforge.core.settings import where_to_set
from aiforge.core.types import ConfigError
from aiforge.providers.sentence_vectors import (
    SENTENCE_TRANSFORMERS,
    SentenceTransformersProvider,
    bundled_model_zip,
    check_model,
    sentence_transformers_installed,
)

if TYPE_CHECKING:
    from aiforge.core.settings import AIForgeSettings
    from aiforge.providers.base import Provider

_sentence_provider: SentenceTransformersProvider | None = None
_lock = threading.Lock()


def embedding_provider_name(settings: AIForgeSettings, chat_name: str) -> str:
    """The provider that embeds for an agent whose chat provider is ``chat_name`` (see the module docstring)."""
    from aiforge.providers import is_embedded

    if settings.EMBEDDING_PROVIDER:
        return settings.EMBEDDING_PROVIDER
    if (
        is_embedded(chat_name)
        and not settings.LOCAL_MODEL_PATH
        and sentence_transformers_installed()
        and bundled_model_zip() is not None
    ):
        return SENTENCE_TRANSFORMERS
    return chat_name


def check_embedding_settings(settings: AIForgeSettings, chat_name: str) -> None:
    """Returns when ``EMBEDDING_PROVIDER`` (and ``EMBEDDING_MODEL`` for sentence-transformers) can be used; else one
    ``ConfigError`` naming the setting and the fix. Cheap: reads package metadata and the disk, loads nothing."""
    from aiforge.providers import available_providers, builtin_class, embedding_providers

    chosen = settings.EMBEDDING_PROVIDER
    if embedding_provider_name(settings, chat_name) == SENTENCE_TRANSFORMERS:
        check_model(settings.EMBEDDING_MODEL)
        return
    if not chosen or chosen == chat_name:
        return
    embedders = [SENTENCE_TRANSFORMERS, *embedding_providers()]
    where = where_to_set("EMBEDDING_PROVIDER")
    if chosen not in available_providers():
        raise ConfigError(
            f"EMBEDDING_PROVIDER {chosen!r} is no provider; choose one that embeds: {', '.join(embedders)} ({where})"
        )
    try:
        embeds = builtin_class(chosen).embeds
    except KeyError:  # a registered provider: what it can do is known once it is built
        return
    if not embeds:
        raise ConfigError(
            f"EMBEDDING_PROVIDER {chosen!r} cannot embed texts (no embeddings API); choose one that does: "
            f"{', '.join(embedders)} ({where})"
        )


def embedding_provider(settings: AIForgeSettings, chat_provider: Provider, chat_name: str) -> tuple[Provider, str]:
    """The provider that embeds for an agent (its own when it is the one chosen) and the name it is cached and
    priced under."""
    from aiforge.providers import create_provider

    name = embedding_provider_name(settings, chat_name)
    if name == chat_name:
        return chat_provider, chat_name
    check_embedding_settings(settings, chat_name)
    if name == SENTENCE_TRANSFORMERS:
        return _sentence_transformers(), name
    return create_provider(settings, name), name


def _sentence_transformers() -> SentenceTransformersProvider:
    global _sentence_provider
    with _lock:
        if _sentence_provider is None:
            _sentence_provider = SentenceTransformersProvider()
        return _sentence_provider
