"""Checks of what a caller hands ``ChatAgent``: counts that must be positive, its options (a message a provider can
take is checked with the request, ``batch.request.answer.checked_message``)."""

from __future__ import annotations

from typing import Any

from aiforge.core.types import UsageError


def checked_positive(name: str, value: Any) -> int:
    """``value`` if it is an integer >= 1; a UsageError naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{name} must be an integer >= 1, got {value!r}")
    return value


def check_agent_options(memory: Any, modes: tuple[str, ...], output_retries: Any, system_prompt: Any) -> None:
    """``ChatAgent``'s memory mode, ``output_retries`` and ``system_prompt``; a UsageError naming a bad one."""
    if memory not in modes:
        raise UsageError(f"memory must be one of {', '.join(map(repr, modes))}; got {memory!r}")
    if isinstance(output_retries, bool) or not isinstance(output_retries, int) or output_retries < 0:
        raise UsageError(f"output_retries must be an integer >= 0, got {output_retries!r}")
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise UsageError(f"system_prompt must be a str or None, got {type(system_prompt).__name__}")
