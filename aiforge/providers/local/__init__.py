"""The embedded model: llama.cpp in-process through ``xllamacpp``, SmolLM2-135M-Instruct by default.

- ``weights.py``: which GGUF file to load (``LOCAL_MODEL_PATH`` or the bundled SmolLM2 weights);
  cheap enough to run while resolving ``PROVIDER=auto``.
- ``engine.py``: the llama.cpp server, loaded once per process on first use, and its worker thread.
- ``protocol.py``: the constrained-JSON reply protocol that gives a model without tool support
  native tool calls.
- ``structured.py``: the same protocol carrying an ``output=`` type's object as the answer.
- ``placeholders.py``: the worked examples the instructions show, and the checks that a reply did
  not copy them (a copy is decoded again, never shown).
- ``provider.py``: ``LocalProvider``, which puts the three together.

Nothing here imports ``xllamacpp`` until a model is loaded.
"""

from aiforge.providers.local.engine import SLOTS, LocalEngine, shared_engine
from aiforge.providers.local.provider import DEFAULT_MAX_TOKENS, LocalProvider
from aiforge.providers.local.reply import AnswerStream, JsonAnswerStream, parse_reply

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "SLOTS",
    "AnswerStream",
    "JsonAnswerStream",
    "LocalEngine",
    "LocalProvider",
    "parse_reply",
    "shared_engine",
]
