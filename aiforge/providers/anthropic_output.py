"""Structured output on the Messages API: ``output_config.format``, or a forced tool call for free-form keys.

``output_config`` (the API's structured outputs, allowed alongside tools) needs
``additionalProperties: false`` on every object, so a type with free-form keys (``dict[str, X]``)
cannot use it; its schema goes as the input schema of a tool the model must call instead, and that
call's input is the answer's JSON (never a tool call the agent would run).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiforge.core.output import OutputSpec


def add_output_format(request: dict[str, Any], spec: OutputSpec) -> None:
    """Ask ``request`` (Messages API, tools already in wire shape) for the final answer as ``spec``'s JSON."""
    output_format = output_format_of(spec)
    if output_format is not None:
        request["output_config"] = {"format": output_format}
        return
    tool = {
        "name": spec.name,
        "description": "Give your final answer by calling this tool: its input is the answer.",
        "input_schema": spec.wire_schema,
    }
    # With other tools the model must still be free to call them first: "any" forces a tool, not this one.
    request["tool_choice"] = {"type": "any"} if request.get("tools") else {"type": "tool", "name": spec.name}
    request["tools"] = [*request.get("tools", []), tool]


def output_tool_of(spec: OutputSpec | None) -> str | None:
    """The name of the tool whose input is the answer, when ``spec`` goes as a forced tool call."""
    if spec is None or output_format_of(spec) is not None:
        return None
    return spec.name


@lru_cache(maxsize=256)  # one spec per type, so this is one transformed schema per type
def output_format_of(spec: OutputSpec) -> dict[str, Any] | None:
    """``output_config.format`` for ``spec``, or None when its schema has free-form keys."""
    try:
        spec.strict_schema()  # the closed-objects check: it raises for free-form keys
    except ValueError:
        return None
    from anthropic import transform_schema  # the SDK's own reduction to the API's schema subset

    return {"type": "json_schema", "schema": transform_schema(spec.wire_schema)}


def refusal_text(stop_details: Any, text: str) -> str:
    """The explanation of a refusal: the API's own when it gives one, else what the model wrote."""
    explanation = getattr(stop_details, "explanation", None)
    return explanation if isinstance(explanation, str) and explanation else text
