"""The one warning a label or extraction batch on the embedded model gives: its columns are not to be relied on.

The bundled SmolLM2-135M answers every API (that is what it is for: trying aiforge offline, the tutorials,
plumbing), but it labels reviews barely better than chance and gets facts and arithmetic wrong. A batch with
``output=`` (``classify``, ``extract``, ``filter``, ``map(output=...)``) on it says so once per process.
"""

from __future__ import annotations

import threading
import warnings
from typing import TYPE_CHECKING

from aiforge.core.costs import _caller_stacklevel

if TYPE_CHECKING:
    from aiforge.providers.base import Provider


class EmbeddedModelWarning(UserWarning):
    """A label or extraction batch runs on the embedded model, whose typed columns are often wrong."""


_warned = False
_lock = threading.Lock()


def warn_if_embedded(provider: Provider) -> None:
    """Warn once per process (``EmbeddedModelWarning``) when a typed batch is about to run on the embedded model."""
    global _warned
    if not provider.embedded:
        return
    with _lock:
        if _warned:
            return
        _warned = True
    warnings.warn(
        f"the embedded model ({provider.default_model}) is for trying aiforge offline: its labels and extracted "
        "fields are often wrong. Use a real provider (openai, anthropic, or a llama.cpp, vLLM or Ollama server "
        "with a larger model) for columns you rely on.",
        EmbeddedModelWarning,
        stacklevel=_caller_stacklevel(),
    )
