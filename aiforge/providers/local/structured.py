"""Structured answers for the embedded model: the grammar schema and how the model is told about it.

With ``params.output`` set, the model's answer is ``{"answer": <object of spec.wire_schema>}``, with
or without tools (one reply protocol, one parser). llama.cpp turns the schema into a grammar, so the
answer always parses; whether it validates is decided above the provider, against the strict schema.
"""

from __future__ import annotations

import json
from typing import Any

from aiforge.core.output import OutputSpec, resolve_ref

GRAMMAR_MAX_ITEMS = 5
"""Items an array may hold in the grammar when the type sets no ``max_length``: SmolLM2-135M repeats
list items until ``max_tokens`` (measured on tests/data/reviews.csv: 9 of 10 rows ran away without it)."""
GRAMMAR_MAX_CHARS = 100
"""Characters a string may hold in the grammar when the type sets no ``max_length``, for the same reason."""
_MAX_DEPTH = 4  # placeholders of self-referencing models stop here

PLACEHOLDERS = {
    "string": "<text>",
    "number": "<number>",
    "integer": "<integer>",
    "boolean": "<true or false>",
    "array": "[...]",
    "object": "{...}",
    "null": "null",
}


def _for_grammar(schema: Any) -> Any:
    """``schema`` with the limits a small model needs; validation above keeps the type's own rules."""
    if isinstance(schema, list):
        return [_for_grammar(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _for_grammar(v) for k, v in schema.items() if k not in ("title", "default", "examples")}
    kind = out.get("type")
    if kind == "array" and "maxItems" not in out:
        out["maxItems"] = max(GRAMMAR_MAX_ITEMS, out.get("minItems", 0))
    if kind == "string" and not {"maxLength", "enum", "const", "pattern", "format"} & out.keys():
        out["maxLength"] = max(GRAMMAR_MAX_CHARS, out.get("minLength", 0))
    if "properties" in out:
        # llama.cpp's grammar otherwise lets the model add keys of its own after the declared ones
        out.setdefault("additionalProperties", False)
    return out


def answer_schema(spec: OutputSpec) -> dict[str, Any]:
    """The reply schema ``{"answer": <wire_schema>}``, ``$defs`` at its root (llama.cpp resolves only those)."""
    wire = _for_grammar(spec.wire_schema)
    defs = wire.pop("$defs", None)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"answer": wire},
        "required": ["answer"],
        "additionalProperties": False,
    }
    if defs:
        schema["$defs"] = defs
    return schema


def placeholder(schema: dict[str, Any], defs: dict[str, Any], depth: int = 0) -> str:
    """A compact picture of the JSON ``schema`` asks for, naming fields and labels: ``{"label": "a" or "b"}``."""
    schema = resolve_ref(schema, defs)
    if "enum" in schema:
        return " or ".join(json.dumps(value, ensure_ascii=False) for value in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches:
        return " or ".join(placeholder(branch, defs, depth) for branch in branches)
    kind = schema.get("type")
    if kind == "object" and "properties" in schema and depth < _MAX_DEPTH:
        fields = ", ".join(
            f"{json.dumps(name)}: {placeholder(sub, defs, depth + 1)}" for name, sub in schema["properties"].items()
        )
        return f"{{{fields}}}"
    if kind == "array" and isinstance(schema.get("items"), dict) and depth < _MAX_DEPTH:
        return f"[{placeholder(schema['items'], defs, depth + 1)}, ...]"
    if kind in ("integer", "number") and "minimum" in schema and "maximum" in schema:
        return f"<{kind} {schema['minimum']:g}-{schema['maximum']:g}>"
    return PLACEHOLDERS.get(kind if isinstance(kind, str) else "", "<value>")


def answer_placeholder(spec: OutputSpec) -> str:
    """The answer the model must write, as the instructions show it: ``{"answer": {...}}``."""
    wire = spec.wire_schema
    return f'{{"answer": {placeholder(wire, wire.get("$defs", {}))}}}'


def field_notes(spec: OutputSpec) -> list[str]:
    """One line per described field of the answer: what the type's author said each field means."""
    wire = spec.wire_schema
    properties = resolve_ref(wire, wire.get("$defs", {})).get("properties", {})
    return [
        f"    {name}: {sub['description']}"
        for name, sub in properties.items()
        if isinstance(sub, dict) and sub.get("description")
    ]


def output_instructions(spec: OutputSpec) -> str:
    """The system-message instructions for a structured answer without tools."""
    lines = [f"Reply with one JSON object and nothing else: {answer_placeholder(spec)}", *field_notes(spec)]
    return "\n".join(lines)
