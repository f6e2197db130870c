"""The warnings the embedded model gives: its typed columns, and its vectors, are not to be relied on.

The bundled SmolLM2-135M answers every API (that is what it is for: trying aiforge offline, the tutorials,
plumbing), but it labels reviews barely better than chance and gets facts and arithmetic wrong. A batch with
``output=`` (``classify``, ``extract``, ``filter``, ``map(output=...)``) on it says so once per process
(``EmbeddedModelWarning``).

Its ``embed`` mean-pools a chat model's token states: every pair of texts scores high (22 unrelated product
reviews at cosine 0.70-0.93, different support tickets at 0.99-1.00), so a threshold or a nearest neighbour says
little. ``dedup``, ``join`` (when it embeds) and ``cluster`` on such vectors say so once per call
(``ChatModelVectorsWarning``, an ``EmbeddedModelWarning``); a GGUF embedding model in ``LOCAL_MODEL_PATH`` does not.
"""

from __future__ import annotations

import threading
import warnings
from typing import TYPE_CHECKING

from aiforge.core.costs import caller_stacklevel
from aiforge.core.errors import ChatModelVectorsWarning, EmbeddedModelWarning, FailedRowsWarning

if TYPE_CHECKING:
    from aiforge.providers.base import Provider


_warned = False
_lock = threading.Lock()


def warn_if_embedded(provider: Provider) -> None:
    """Warn once per process (``EmbeddedModelWarning``) when a typed batch is about to run on the embedded model."""
    if provider.embedded:
        warn_embedded_once(provider.default_model)


def warn_embedded_once(model: str | None = None) -> None:
    """The warning itself, once per process; ``model`` names the weights when known."""
    global _warned
    with _lock:
        if _warned:
            return
        _warned = True
    named = f" ({model})" if model else ""
    warnings.warn(
        f"the embedded model{named} is for trying aiforge offline: its labels and extracted "
        "fields are often wrong. Use a real provider (openai, anthropic, or a llama.cpp, vLLM or Ollama server "
        "with a larger model) for columns you rely on.",
        EmbeddedModelWarning,
        stacklevel=caller_stacklevel(),
    )


def warn_chat_model_vectors(operation: str, model: str) -> None:
    """The ``ChatModelVectorsWarning`` of one ``operation`` call on ``model``'s vectors (one line, every call)."""
    warnings.warn(
        f"{operation}: {model} is a chat model, and its vectors are not trained embedding vectors: similarities "
        "crowd near 1 (unrelated texts at 0.7-1.0), so a threshold or a nearest neighbour says little. Use an "
        "embedding model: provider='openai' (EMBEDDING_MODEL), an OpenAI-compatible server's /v1/embeddings, or "
        "LOCAL_MODEL_PATH set to a GGUF embedding model (bge, nomic-embed).",
        ChatModelVectorsWarning,
        stacklevel=caller_stacklevel(),
    )


def warn_if_chat_model_vectors(provider: Provider, operation: str) -> None:
    """``warn_chat_model_vectors`` when ``provider``'s ``embed`` pools a chat model (``embeds_chat_model``)."""
    if provider.embeds_chat_model:
        warn_chat_model_vectors(operation, provider.default_model)


def stay_quiet() -> None:
    """This process gives no such warning: a Dask worker, whose client warned once for all its workers."""
    global _warned
    with _lock:
        _warned = True


def _one_line(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, line: str | None = None
) -> str:
    """``EmbeddedModelWarning`` (``ChatModelVectorsWarning`` too) and ``FailedRowsWarning`` shown as one line (no
    file path, no echoed source line); others as Python shows them."""
    if issubclass(category, EmbeddedModelWarning | FailedRowsWarning):
        return f"{category.__name__}: {message}\n"
    return _python_format(message, category, filename, lineno, line)


_python_format = warnings.formatwarning
warnings.formatwarning = _one_line
