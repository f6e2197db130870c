"""Prompt caching on the Messages API: ``cache_control`` at the end of the prefix every call of an agent repeats.

Anthropic caches a request's prefix, in its order tools, system, messages, up to the block marked
``cache_control: {"type": "ephemeral"}``, for five minutes from its last use; a write bills 1.25x the input
price, a read 0.1x (``core.pricing``). The shared part of an agent's calls is its tools (the forced output
tool included), its system prompt and its output format, so the first system message is marked (the last
block of that prefix), or the last tool when there is no system prompt. A memory summary or a later system
message goes in a block after it, so a summary that changes does not spoil the cached prefix.

A prefix shorter than the model's minimum is never cached, marked or not, so it is marked only when the
token estimate (``core.tokens``) reaches that minimum; short prompts are sent exactly as without caching.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from aiforge.core.tokens import estimate_tokens

EPHEMERAL: Mapping[str, str] = MappingProxyType({"type": "ephemeral"})

# Anthropic's "minimum cacheable prompt length" (prompt caching guide, platform.claude.com, as quoted in
# anthropics/anthropic-sdk-python#1194): 4096 tokens for Opus 4.6, Opus 4.5 and Haiku 4.5; 1024 for Sonnet 4.5,
# Opus 4.1, Opus 4, Sonnet 4 and Sonnet 3.7 (and the retired Sonnet 3.5 and Opus 3); 2048 for Haiku 3.5 and Haiku 3.
MIN_CACHEABLE_TOKENS: Mapping[str, int] = MappingProxyType({
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
    "claude-haiku-4-5": 4096,
    "claude-sonnet-4-5": 1024,
    "claude-opus-4-1": 1024,
    "claude-opus-4": 1024,
    "claude-opus-4-0": 1024,
    "claude-sonnet-4": 1024,
    "claude-sonnet-4-0": 1024,
    "claude-3-7-sonnet": 1024,
    "claude-3-5-sonnet": 1024,
    "claude-3-opus": 1024,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
})
DEFAULT_MIN_CACHEABLE_TOKENS = 4096
"""A model missing from the table is assumed to need the largest documented minimum."""

# A dated snapshot, an alias or a cloud's version tail: claude-sonnet-4-5-20250929, claude-3-5-haiku-latest,
# claude-3-5-haiku@20241022 (Vertex), anthropic.claude-3-7-sonnet-20250219-v1:0 (Bedrock).
_MODEL_TAIL = re.compile(r"(?:-\d{8}|@\d{8}|-latest)?(?:-v\d+(?::\d+)?)?$")


def min_cacheable_tokens(model: str) -> int:
    """The fewest prefix tokens ``model`` caches; ``DEFAULT_MIN_CACHEABLE_TOKENS`` for a model it does not know."""
    name = model.strip().lower().rsplit("/", 1)[-1].rsplit("anthropic.", 1)[-1]
    return MIN_CACHEABLE_TOKENS.get(_MODEL_TAIL.sub("", name), DEFAULT_MIN_CACHEABLE_TOKENS)


def mark_shared_prefix(request: dict[str, Any], system_parts: list[str]) -> None:
    """Set ``cache_control`` on the last block of ``request``'s shared prefix when it is long enough to cache.

    ``request`` is a Messages API request with its tools and output format in place; ``system_parts`` are its
    system messages in order, the first being the agent's system prompt.
    """
    tools: list[dict[str, Any]] = request.get("tools") or []
    shared = json.dumps(tools) + (system_parts[0] if system_parts else "")
    shared += json.dumps(request.get("output_config") or {})
    if estimate_tokens(shared) < min_cacheable_tokens(request["model"]):
        return
    if system_parts:
        blocks = [{"type": "text", "text": system_parts[0], "cache_control": dict(EPHEMERAL)}]
        if len(system_parts) > 1:
            blocks.append({"type": "text", "text": "\n\n".join(system_parts[1:])})
        request["system"] = blocks
    elif tools:
        request["tools"] = [*tools[:-1], {**tools[-1], "cache_control": dict(EPHEMERAL)}]
