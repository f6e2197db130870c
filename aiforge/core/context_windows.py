"""How many tokens one request may take, by model: what ``agg`` packs a column's rows under.

``CONTEXT_WINDOWS`` holds the published context windows (tokens, prompt and answer together) of the models in
the price table (``core.pricing``), as of ``PRICES_AS_OF``; names resolve as prices do (dated snapshots,
``-latest``, ``openai/`` prefixes). The ``CONTEXT_WINDOW`` setting overrides it for any model. The embedded
model's window is the context its llama.cpp engine is loaded with (``LOCAL_CONTEXT_SIZE``, one decoding slot,
so the whole of it: ``providers/local/engine.py``), not SmolLM2's trained 8192. A model aiforge does not know
gets ``DEFAULT_CONTEXT_WINDOW``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from aiforge.core.pricing import resolve_model_entry

DEFAULT_CONTEXT_WINDOW = 4096
"""The window of a model missing from the table: small enough for a local server's default context (Ollama
loads 4096 tokens unless told otherwise), so an unknown model is never sent more than it reads; set
``CONTEXT_WINDOW`` to use more of a larger one."""

_GPT_41 = 1_047_576
_CLAUDE = 200_000

CONTEXT_WINDOWS: Mapping[str, int] = MappingProxyType({
    # OpenAI model pages. GPT-5's window is 400 000 with at most 128 000 of it output, so a prompt may
    # take 272 000: that is its entry, as a request here is a prompt plus a reserved answer.
    "gpt-5": 272_000,
    "gpt-5-mini": 272_000,
    "gpt-5-nano": 272_000,
    "gpt-5-chat": 128_000,
    "gpt-4.1": _GPT_41,
    "gpt-4.1-mini": _GPT_41,
    "gpt-4.1-nano": _GPT_41,
    "gpt-4o": 128_000,
    "gpt-4o-2024-05-13": 128_000,
    "gpt-4o-mini": 128_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "o3-mini": 200_000,
    "o1": 200_000,
    "o1-mini": 128_000,
    # Anthropic: every current model reads 200 000 tokens (Sonnet's 1M window is a beta header aiforge does not send).
    "claude-opus-4-5": _CLAUDE,
    "claude-opus-4-1": _CLAUDE,
    "claude-opus-4": _CLAUDE,
    "claude-opus-4-0": _CLAUDE,
    "claude-sonnet-4-5": _CLAUDE,
    "claude-sonnet-4": _CLAUDE,
    "claude-sonnet-4-0": _CLAUDE,
    "claude-3-7-sonnet": _CLAUDE,
    "claude-haiku-4-5": _CLAUDE,
    "claude-3-5-haiku": _CLAUDE,
    "claude-3-haiku": _CLAUDE,
})
"""Published context windows in tokens, by model."""


def context_window(model: str | None, setting: int | None = None, *, embedded_context: int | None = None) -> int:
    """The tokens one request to ``model`` may take: the ``CONTEXT_WINDOW`` setting, else the embedded engine's
    context (``embedded_context``), else the table's entry, else ``DEFAULT_CONTEXT_WINDOW``.

    >>> context_window("gpt-4o-mini-2024-07-18"), context_window("my-model"), context_window("gpt-4o", 8000)
    (128000, 4096, 8000)
    """
    if setting is not None:
        return setting
    if embedded_context is not None:
        return embedded_context
    known = None if model is None else resolve_model_entry(model, CONTEXT_WINDOWS)
    return DEFAULT_CONTEXT_WINDOW if known is None else known
