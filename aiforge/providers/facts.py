"""``provider_facts``: what the provider a set of settings chooses is, read from its class and files, built never.

Above ``providers/`` nothing looks a provider up by name: a caller that has settings but no agent (Dask's client,
which builds agents only on the workers) asks these facts instead of comparing ``PROVIDER`` with ``"local"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aiforge.core.file_inputs import FileRules
    from aiforge.core.files import FileKind
    from aiforge.core.settings import AIForgeSettings


@dataclass(frozen=True)
class ProviderFacts:
    """The chat provider ``settings`` choose and the one that makes their vectors, as data (no client, no model)."""

    name: str
    """The chat provider (``PROVIDER``, ``auto`` resolved)."""
    embedded: bool
    """Whether it is the embedded model, in this process (loaded once per worker, a warning for typed batches)."""
    vectors: str
    """The provider that embeds (``EMBEDDING_PROVIDER``, else the chat provider or sentence-transformers)."""
    chat_model_vectors: str | None
    """The chat model whose pooled hidden states would be the vectors (the embedded model's weights with no pooling
    declared), or None when the vectors come from an embedding model."""
    free: bool = False
    """Whether the chat provider's requests cost nothing (``Provider.free``: the embedded model, a local server, the
    scripted provider); a provider registered by the user counts as billed."""
    reads_files: tuple[FileKind, ...] = ()
    """The kinds of file the chat provider reads natively (``Provider.reads_files``); a user's provider: none."""
    file_rules: FileRules | None = None
    """Whose rules count and limit its files (``Provider.file_rules``); None: it sends text only."""


def provider_facts(settings: AIForgeSettings) -> ProviderFacts:
    """The facts of the providers ``settings`` choose; a ``ConfigError`` when none can be chosen."""
    from aiforge.providers import builtin_class, is_builtin, is_embedded, is_free, resolve_provider_name
    from aiforge.providers.embedding_choice import embedding_provider_name

    name = resolve_provider_name(settings)
    embedded = is_embedded(name)
    vectors = embedding_provider_name(settings, name)
    chat_model = None
    if embedded and vectors == name:
        from aiforge.providers.local.engine import model_name_for
        from aiforge.providers.local.gguf import declares_pooling
        from aiforge.providers.local.weights import resolve_model_path

        path = resolve_model_path(settings)
        chat_model = None if declares_pooling(path) else model_name_for(path)
    cls = builtin_class(name) if is_builtin(name) else None
    reads, rules = (cls.reads_files, cls.file_rules) if cls is not None else ((), None)
    return ProviderFacts(name, embedded, vectors, chat_model, is_free(name), reads, rules)
