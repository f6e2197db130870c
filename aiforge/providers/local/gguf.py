"""What a GGUF file says it is, read from its header: whether it was converted as an embedding model.

llama.cpp's converter writes ``<architecture>.pooling_type`` for the models a sentence-embedding pooling was
trained on (bge, nomic-embed, gte, e5, Qwen3-Embedding...); a chat model such as the bundled SmolLM2-135M-Instruct
has none. The embedding server mean-pools either (``engine.py``), but only the first kind were trained for their
pooled vectors to be compared. Only the header's key-value pairs are read (the tokenizer's arrays are skipped
through), never the tensors.
"""

from __future__ import annotations

import functools
import struct
from pathlib import Path
from typing import BinaryIO

MAGIC = b"GGUF"
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
"""GGUF value types of fixed size, as ``struct`` formats (little-endian)."""
_STRING, _ARRAY = 8, 9


@functools.cache
def declares_pooling(path: Path) -> bool:
    """True when the GGUF file at ``path`` names a pooling type: it was converted as an embedding model.

    A file that cannot be read as GGUF raises ``ValueError`` (llama.cpp would not have loaded it either).
    """
    with path.open("rb") as file:
        if file.read(4) != MAGIC:
            raise ValueError(f"{path} is not a GGUF file")
        version, _tensors, pairs = struct.unpack("<IQQ", _exactly(file, 20))
        if version < 2:
            raise ValueError(f"{path} is GGUF version {version}; llama.cpp reads 2 and later")
        for _ in range(pairs):
            key = _string(file)
            (kind,) = struct.unpack("<I", _exactly(file, 4))
            if key.endswith(".pooling_type"):
                return True
            _skip_value(file, kind)
    return False


def _exactly(file: BinaryIO, size: int) -> bytes:
    data = file.read(size)
    if len(data) != size:
        raise ValueError("the GGUF header ends early")
    return data


def _string(file: BinaryIO) -> str:
    (size,) = struct.unpack("<Q", _exactly(file, 8))
    return _exactly(file, size).decode("utf-8", "replace")


def _skip_value(file: BinaryIO, kind: int) -> None:
    if kind in _SCALARS:
        file.seek(struct.calcsize("<" + _SCALARS[kind]), 1)
    elif kind == _STRING:
        (size,) = struct.unpack("<Q", _exactly(file, 8))
        file.seek(size, 1)
    elif kind == _ARRAY:
        item, count = struct.unpack("<IQ", _exactly(file, 12))
        if item in _SCALARS:
            file.seek(struct.calcsize("<" + _SCALARS[item]) * count, 1)
        else:
            for _ in range(count):
                _skip_value(file, item)
    else:
        raise ValueError(f"unknown GGUF value type {kind}")
