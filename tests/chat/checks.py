"""Strict checks of conversation histories, as the real OpenAI and Anthropic APIs enforce them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def assert_valid_history(history: Sequence[dict[str, Any]]) -> None:
    """Fail unless ``history`` is a stored conversation every provider accepts.

    It starts with a user message; user messages are not blank; every assistant message with tool
    calls is followed by exactly one tool message per call, with the call's id, in call order,
    before anything else; there is no tool message without its call.
    """
    if not history:
        return
    assert history[0]["role"] == "user", f"history starts with {history[0]['role']!r}: {history[:2]}"
    i = 0
    while i < len(history):
        message = history[i]
        role = message["role"]
        assert role in ("user", "assistant"), f"message {i} is an orphan {role!r} message: {message}"
        assert isinstance(message["content"], str), f"message {i} has non-text content: {message}"
        if role == "user":
            assert message["content"].strip(), f"message {i} is a blank user message"
        i += 1
        calls = message.get("tool_calls") or []
        if role != "assistant" or not calls:
            continue
        ids = [call["id"] for call in calls]
        assert all(ids) and len(set(ids)) == len(ids), f"message {i - 1} has missing or duplicate call ids: {ids}"
        answered = []
        while i < len(history) and history[i]["role"] == "tool":
            answered.append(history[i].get("tool_call_id"))
            i += 1
        assert answered == ids, f"calls {ids} of message {i - 1 - len(answered)} are answered by {answered}"


def assert_valid_context(messages: Sequence[dict[str, Any]]) -> None:
    """Fail unless ``messages`` is a valid model request: system messages, a valid history, then
    the newest user message or tool results."""
    systems = 0
    while systems < len(messages) and messages[systems]["role"] == "system":
        systems += 1
    assert 1 <= systems <= 2, f"expected the system prompt (and maybe a summary) first, got {systems} system messages"
    rest = list(messages[systems:])
    assert rest, "a model request without a user message"
    assert all(m["role"] != "system" for m in rest), "a system message after the conversation started"
    assert rest[-1]["role"] in ("user", "tool"), f"a model request ending with {rest[-1]['role']!r}"
    assert_valid_history(rest)
