"""OpenAI's embeddings endpoint, ``POST /v1/embeddings``: strict checks, deterministic vectors, the answer.

``input`` is a string, a list of strings, a list of token ids or a list of such lists (as the real API takes);
``encoding_format`` ``float`` (the API's default) or ``base64`` (little-endian float32s, what the openai SDK asks
for); ``dimensions`` shortens the vectors. ``usage.prompt_tokens`` counts each text as characters // 4 + 1 (a
token array as its length), the same count as the chat endpoints and as aiforge's scripted provider.

Vectors are hashed words and character trigrams (see ``hashed_embedding``), the same as aiforge's scripted
provider computes, so texts sharing words are close; ``srv.embedder`` (a function of one text returning its
vector) scripts them instead. A token array is embedded as the text of its ids joined by spaces.

In strict mode a request is refused as the real API refuses it: no model, an empty string, more than 2048 inputs,
a text over 8192 tokens, over 300 000 tokens in one request, an unknown ``encoding_format``, ``dimensions`` below
1 or on a model without them (``text-embedding-ada-002``).
"""

from __future__ import annotations

import array
import base64
import hashlib
import math
import re
import sys
from collections.abc import Iterable
from typing import Any

from fakellm.wire import _Invalid

MAX_INPUTS = 2048
MAX_INPUT_TOKENS = 8192
MAX_REQUEST_TOKENS = 300_000
TRIGRAM_WEIGHT = 0.25
_WORD = re.compile(r"\w+")
_INVALID_INPUT = "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."


def model_dimensions(model: str) -> int:
    """The length of a model's vectors when ``dimensions`` is not sent (OpenAI's: 3072 for -large, else 1536)."""
    return 3072 if model.endswith("-large") else 1536


def embedding_texts(value: Any) -> list[str] | None:
    """The texts of ``input`` (token arrays as their ids joined by spaces); None when it is not a valid shape."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not value:
        return None
    if all(isinstance(item, int) and not isinstance(item, bool) for item in value):
        return [" ".join(map(str, value))]
    texts = []
    for item in value:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, list) and item and all(isinstance(i, int) and not isinstance(i, bool) for i in item):
            texts.append(" ".join(map(str, item)))
        else:
            return None
    return texts


def input_tokens(value: Any) -> list[int]:
    """Tokens of each input: a text's characters // 4 + 1, a token array's length."""
    if isinstance(value, str):
        return [len(value) // 4 + 1]
    if not isinstance(value, list):
        return [0]
    if value and all(isinstance(item, int) for item in value):
        return [len(value)]
    return [len(item) // 4 + 1 if isinstance(item, str) else len(item) if isinstance(item, list) else 0
            for item in value]


def validate_embeddings(body: dict) -> None:
    """Refuse what OpenAI's ``/v1/embeddings`` refuses (strict mode)."""
    if not body.get("model"):
        raise _Invalid("you must provide a model parameter")
    value = body.get("input")
    if value is None:
        raise _Invalid("Missing required parameter: 'input'.", param="input")
    if value == "" or (isinstance(value, list) and any(item in ("", []) for item in value)):
        raise _Invalid(_INVALID_INPUT, param="input")
    if isinstance(value, list) and len(value) > MAX_INPUTS and not all(isinstance(i, int) for i in value):
        raise _Invalid(f"Too many inputs. The max number of inputs is {MAX_INPUTS}.", param="input")
    if embedding_texts(value) is None:
        raise _Invalid(_INVALID_INPUT, param="input")
    tokens = input_tokens(value)
    longest = max(tokens)
    if longest > MAX_INPUT_TOKENS:
        raise _Invalid(
            f"This model's maximum context length is {MAX_INPUT_TOKENS} tokens, however you requested {longest} "
            f"tokens ({longest} in your prompt; 0 for the completion). "
            "Please reduce your prompt; or completion length.",
            param="input",
        )
    if sum(tokens) > MAX_REQUEST_TOKENS:
        raise _Invalid(f"Requested {sum(tokens)} tokens, max {MAX_REQUEST_TOKENS} tokens per request", param="input")
    fmt = body.get("encoding_format", "float")
    if fmt not in ("float", "base64"):
        raise _Invalid(f"Invalid value: '{fmt}'. Supported values are: 'float' and 'base64'.", param="encoding_format")
    dimensions = body.get("dimensions")
    if dimensions is not None:
        if str(body["model"]).endswith("ada-002"):
            raise _Invalid("This model does not support specifying dimensions.", param="dimensions")
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
            raise _Invalid(f"Invalid 'dimensions': integer below minimum value. Expected a value >= 1, but got "
                           f"{dimensions} instead.", param="dimensions")


def _features(text: str) -> Iterable[tuple[str, float]]:
    words = _WORD.findall(text.lower())
    if not words:
        yield "text:" + text, 1.0
    for word in words:
        yield "word:" + word, 1.0
        padded = f" {word} "
        for start in range(len(padded) - 2):
            yield "tri:" + padded[start : start + 3], TRIGRAM_WEIGHT


def hashed_embedding(text: str, dim: int) -> list[float]:
    """The unit vector of ``text``'s hashed words and trigrams (aiforge's ``scripted_embeddings``, recomputed)."""
    vector = [0.0] * dim
    for feature, weight in _features(text):
        digest = int.from_bytes(hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8).digest())
        vector[digest % dim] += weight if digest >> 63 else -weight
    norm = math.sqrt(sum(value * value for value in vector))
    return [value / norm for value in vector] if norm else vector


def encoded(vector: list[float], fmt: str) -> Any:
    """A vector as the API sends it: a list of floats, or base64 of little-endian float32s."""
    if fmt != "base64":
        return vector
    packed = array.array("f", vector)
    if sys.byteorder != "little":
        packed.byteswap()
    return base64.b64encode(packed.tobytes()).decode("ascii")


def embeddings_response(body: dict, embedder: Any) -> dict:
    """The ``list`` object answering ``body`` (valid or leniently read); vectors by ``embedder`` or hashed."""
    model = str(body.get("model") or "unknown")
    texts = embedding_texts(body.get("input")) or []
    dim = body.get("dimensions") or model_dimensions(model)
    fmt = body.get("encoding_format") or "float"
    data = []
    for index, text in enumerate(texts):
        vector = [float(v) for v in embedder(text)] if embedder is not None else hashed_embedding(text, dim)
        data.append({"object": "embedding", "index": index, "embedding": encoded(vector, fmt)})
    tokens = sum(input_tokens(body.get("input")))
    return {"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
