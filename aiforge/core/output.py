"""Structured output: the JSON schema of an ``output=`` type, its provider forms, validation and feedback.

``OutputSpec.of(output)`` is built once per type. Providers take what their mechanism needs:
``wire_schema`` (always an object), ``strict_schema()`` (OpenAI's strict subset) or ``instructions()``
(the prompted form); every reply goes back through ``validate(text)``.

Non-object types (``list[str]``, ``bool``, ``Literal[...]``, ``dict[str, int]``...) travel wrapped as
``{"value": <the value>}``: OpenAI requires an object at the root of a strict schema and a forced tool's
input is an object too, so one wrapped form serves every provider, and ``validate`` unwraps it.

Pydantic only: no provider SDK is imported here.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

from aiforge.core.errors import OutputValidationError, UsageError
from aiforge.core.output_entry import checked_spec
from aiforge.core.schema_bounds import impossible_bounds

WRAPPER_KEY = "value"
MAX_FEEDBACK_ERRORS = 10

# OpenAI strict mode's documented subset (Structured Outputs guide, "Supported schemas"): keywords
# outside it get a 400 ("'default' is not permitted"), so they are moved into the description.
STRICT_KEYWORDS = frozenset(
    "type properties required additionalProperties items anyOf enum const $ref $defs description title "
    "pattern format minimum maximum exclusiveMinimum exclusiveMaximum multipleOf minItems maxItems".split()
)
STRICT_STRING_FORMATS = frozenset("date-time time date duration email hostname ipv4 ipv6 uuid".split())
_FENCED = re.compile(r"```[a-zA-Z]*[ \t]*\n?(.*?)```", re.DOTALL)
_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]+")


@dataclass(frozen=True, slots=True, eq=False)  # one instance per type (cached): identity is equality
class OutputSpec:
    """An ``output=`` type with its JSON schema; build it with ``OutputSpec.of(output)``."""

    output_type: Any
    name: str
    schema: dict[str, Any]
    is_object: bool
    adapter: TypeAdapter[Any] = field(repr=False, compare=False)

    @classmethod
    def of(cls, output: Any) -> OutputSpec:
        """The spec of ``output`` (a pydantic model class or any type pydantic validates); cached per type.

        The one conversion of every ``output=`` (chat, streams, batches, the accessor): a ``UsageError``
        naming the problem when ``output`` is no usable type, raised before any request.
        """
        if isinstance(output, OutputSpec):
            return output
        return checked_spec(output, _spec_of)

    @property
    def wire_schema(self) -> dict[str, Any]:
        """The schema as sent to a model: the type's own for objects, ``{"value": ...}`` around the others."""
        if self.is_object:
            return copy.deepcopy(self.schema)
        inner = copy.deepcopy(self.schema)
        defs = inner.pop("$defs", None)
        wrapped: dict[str, Any] = {
            "type": "object",
            "properties": {WRAPPER_KEY: inner},
            "required": [WRAPPER_KEY],
        }
        if defs:
            wrapped["$defs"] = defs
        return wrapped

    def strict_schema(self) -> dict[str, Any]:
        """``wire_schema`` in OpenAI's strict form.

        Every property required (optional ones made nullable; ``validate`` turns their nulls back into
        the defaults), ``additionalProperties: false`` on every object including ``$defs``, ``oneOf`` as
        ``anyOf``, a ``$ref`` with siblings inlined, unsupported keywords moved into the description.
        ValueError for free-form mappings (``dict[str, X]``), which strict mode cannot express.
        """
        root = self.wire_schema
        defs = root.get("$defs", {})
        strict = _strict(root, defs, path="")
        if defs:
            strict["$defs"] = {name: _strict(sub, defs, path=f"$defs.{name}") for name, sub in defs.items()}
        return strict

    def instructions(self) -> str:
        """The prompted form, for providers without a native mechanism: the schema and "JSON only"."""
        schema = json.dumps(self.wire_schema, ensure_ascii=False, separators=(",", ":"))
        return (
            "Answer with a single JSON object that matches this JSON schema, and nothing else "
            f"(no prose, no code fences):\n{schema}"
        )

    def validate(self, text: str) -> Any:
        """The reply as an instance of the output type; ``OutputValidationError`` on bad JSON or a mismatch.

        Tolerates a ```json fence around the JSON, and for non-object types both the wrapped
        ``{"value": ...}`` form and the bare value; for a label type (``Literal["positive", "negative"]``, a
        string ``Enum``) also one of its labels as it is, unquoted (``positive``): the answer is unambiguous.
        """
        try:
            data = json.loads(_unfenced(text))
        except ValueError as exc:
            if (label := self._bare_label(text)) is not None:
                return self.adapter.validate_json(json.dumps(label))
            errors: list[dict[str, Any]] = [
                {"type": "json_invalid", "loc": (), "msg": f"Invalid JSON: {exc}", "input": text}
            ]
            raise OutputValidationError(f"The reply is not valid JSON: {exc}", raw_text=text, errors=errors) from None
        prefix: tuple[Any, ...] = ()
        if not self.is_object and isinstance(data, dict) and set(data) == {WRAPPER_KEY}:
            data, prefix = data[WRAPPER_KEY], (WRAPPER_KEY,)
        data = _without_filled_nulls(data, self.schema, self.schema.get("$defs", {}))
        try:
            # JSON mode, not Python mode: dates, enums and strict models read as they would from the wire
            return self.adapter.validate_json(json.dumps(data))
        except ValidationError as exc:
            errors = [{**e, "loc": prefix + tuple(e["loc"])} for e in exc.errors(include_url=False)]
            summary = "; ".join(f"{_where(e['loc'])}: {e['msg']}" for e in errors[:3])
            raise OutputValidationError(
                f"The reply does not match {self.name}: {summary}", raw_text=text, errors=errors
            ) from None

    def _bare_label(self, text: str) -> str | None:
        """``text`` (stripped) when it is exactly one of a label type's string values; else None."""
        labels = None if self.is_object else self.schema.get("enum")
        answer = text.strip()
        return answer if isinstance(labels, list) and answer in labels else None

    def feedback(self, error: OutputValidationError) -> str:
        """The follow-up message telling the model what was wrong with its last reply."""
        if error.errors and error.errors[0]["type"] == "json_invalid":
            problems = [f"- {error.errors[0]['msg']}"]
        else:
            problems = [f"- {_where(e['loc'])}: {e['msg']}" for e in error.errors[:MAX_FEEDBACK_ERRORS]]
            if len(error.errors) > MAX_FEEDBACK_ERRORS:
                problems.append(f"- ... and {len(error.errors) - MAX_FEEDBACK_ERRORS} more")
        return (
            f"Your reply does not match the required {self.name} JSON schema:\n"
            + "\n".join(problems)
            + "\nAnswer again with only the corrected JSON."
        )


def _spec_of(output: Any) -> OutputSpec:
    try:
        return _cached_spec_of(output)
    except TypeError:  # an unhashable annotation (e.g. Annotated with a list): build it uncached
        return _build_spec(output)


@lru_cache(maxsize=256)
def _cached_spec_of(output: Any) -> OutputSpec:
    return _build_spec(output)


def _build_spec(output: Any) -> OutputSpec:
    adapter = TypeAdapter(output)
    schema = adapter.json_schema()
    target = resolve_ref(schema, schema.get("$defs", {}))
    is_object = target.get("type") == "object" and "properties" in target
    if is_object and "$ref" in schema:
        # pydantic puts a self-referencing model's root behind a $ref: bring its body to the root
        schema = {**copy.deepcopy(target), "$defs": schema["$defs"]}
    impossible = impossible_bounds(schema)
    if impossible:
        raise UsageError(
            f"output={_name_of(output)} can never validate: {'; '.join(impossible)}. Fix the field's bounds "
            "(e.g. Field(ge=..., le=...) with ge <= le)."
        )
    return OutputSpec(output, _name_of(output), schema, is_object, adapter)


def _name_of(output: Any) -> str:
    """A name OpenAI accepts for a schema (``^[a-zA-Z0-9_-]{1,64}$``)."""
    raw = output.__name__ if isinstance(output, type) else "output"
    return _NAME_UNSAFE.sub("_", raw)[:64] or "output"


def resolve_ref(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with a local ``#/$defs/`` reference followed (once is enough: pydantic never chains them)."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        resolved: dict[str, Any] = defs.get(ref.removeprefix("#/$defs/"), schema)
        return resolved
    return schema


def _allows_null(schema: dict[str, Any], defs: dict[str, Any]) -> bool:
    schema = resolve_ref(schema, defs)
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if "enum" in schema:
        return None in schema["enum"]
    if "const" in schema:
        return schema["const"] is None
    return any(_allows_null(s, defs) for s in schema.get("anyOf", schema.get("oneOf", [])))


def _strict(schema: dict[str, Any], defs: dict[str, Any], path: str) -> dict[str, Any]:
    schema = dict(schema)
    schema.pop("$defs", None)  # kept once, at the root
    if "$ref" in schema and len(schema) > 1:
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**resolve_ref({"$ref": schema["$ref"]}, defs), **siblings}
    if "oneOf" in schema:
        schema["anyOf"] = schema.pop("oneOf")
    if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
        schema = {**schema.pop("allOf")[0], **schema}
    if schema.get("default", 0) is None:
        del schema["default"]  # nullable already says it
    if schema.get("type") == "object" or "properties" in schema:
        if "properties" not in schema and schema.get("additionalProperties") is not False:
            raise UsageError(
                f"OpenAI strict mode cannot express free-form keys (at {path or 'the root'}): "
                "use a model or TypedDict with named fields instead of a dict type."
            )
        properties = schema.get("properties", {})
        required = set(schema.get("required", []))
        fixed = {}
        for key, sub in properties.items():
            sub = _strict(sub, defs, f"{path}.{key}".lstrip("."))
            if key not in required and not _allows_null(sub, defs):
                sub = {"anyOf": [sub, {"type": "null"}]}
            fixed[key] = sub
        schema["properties"] = fixed
        schema["required"] = list(fixed)
        schema["additionalProperties"] = False
    if isinstance(schema.get("items"), dict):
        schema["items"] = _strict(schema["items"], defs, f"{path}[]")
    if isinstance(schema.get("anyOf"), list):
        schema["anyOf"] = [_strict(s, defs, path) for s in schema["anyOf"]]
    if schema.get("format") is not None and schema["format"] not in STRICT_STRING_FORMATS:
        schema["x-format"] = schema.pop("format")
    moved = {k: schema.pop(k) for k in list(schema) if k not in STRICT_KEYWORDS}
    if moved:
        notes = ", ".join(f"{k.removeprefix('x-')}: {json.dumps(v, default=str)}" for k, v in moved.items())
        schema["description"] = f"{schema['description']} ({notes})" if schema.get("description") else f"({notes})"
    return schema


def _without_filled_nulls(data: Any, schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    """``data`` without the nulls strict mode forced into optional, non-nullable fields (so defaults apply)."""
    schema = resolve_ref(schema, defs)
    if isinstance(data, dict) and isinstance(schema.get("properties"), dict):
        required = set(schema.get("required", []))
        cleaned = {}
        for key, value in data.items():
            sub = schema["properties"].get(key)
            if sub is None:
                cleaned[key] = value
            elif value is None and key not in required and not _allows_null(sub, defs):
                continue
            else:
                cleaned[key] = _without_filled_nulls(value, sub, defs)
        return cleaned
    if isinstance(data, list) and isinstance(schema.get("items"), dict):
        return [_without_filled_nulls(item, schema["items"], defs) for item in data]
    branches = [s for s in schema.get("anyOf", []) if resolve_ref(s, defs).get("type") != "null"]
    if len(branches) == 1:  # Optional[X]: the only branch that data can be walked through
        return _without_filled_nulls(data, branches[0], defs)
    return data


def _unfenced(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith(("{", "[", '"')):
        return stripped
    fenced = _FENCED.search(stripped)
    return fenced.group(1).strip() if fenced else stripped


def _where(loc: Any) -> str:
    return ".".join(str(part) for part in loc) or "(root)"
