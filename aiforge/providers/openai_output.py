"""Structured output on Chat Completions: the strict ``json_schema`` form, the ``json_object`` form, and
the gateways that only take the latter.

``openai`` always sends the strict form. A schema strict mode cannot express (free-form ``dict`` keys)
goes as ``json_object`` with the schema in the system message instead: the answer is still JSON, and
validation above the provider checks the rest. ``internal_gateway`` falls back to that same form when
its server rejects ``json_schema``, and remembers the server so later calls go straight to it.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from aiforge.core.types import ProviderError

if TYPE_CHECKING:
    from aiforge.core.output import OutputSpec

JSON_OBJECT_FORMAT = {"type": "json_object"}


def add_output_format(request: dict[str, Any], spec: OutputSpec, *, json_object: bool = False) -> None:
    """Ask ``request`` (Chat Completions, messages in wire shape) for the final answer as ``spec``'s JSON.

    ``json_object``: use the JSON mode with the schema as instructions even when strict mode could express it.
    """
    strict = None if json_object else strict_schema_of(spec)
    if strict is not None:
        request["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": spec.name, "strict": True, "schema": strict},
        }
        return
    request["response_format"] = JSON_OBJECT_FORMAT
    # JSON mode answers 400 unless the messages say "json"; the instructions do, and carry the schema.
    request["messages"] = with_system_text(request["messages"], spec.instructions())


@lru_cache(maxsize=256)  # one spec per type, so this is one strict schema per type
def strict_schema_of(spec: OutputSpec) -> dict[str, Any] | None:
    """``spec.strict_schema()``, or None when strict mode cannot express it (free-form keys)."""
    try:
        return spec.strict_schema()
    except ValueError:
        return None


def with_system_text(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """``messages`` with ``text`` appended to the leading system message (or as a new one)."""
    if messages and messages[0]["role"] == "system" and isinstance(messages[0]["content"], str):
        first = messages[0]
        return [{**first, "content": f"{first['content']}\n\n{text}" if first["content"] else text}, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def rejects_json_schema(error: ProviderError) -> bool:
    """True when a server refused a ``json_schema`` response format (so ``json_object`` is worth a try).

    Servers word it differently (the fake server and OpenAI-compatible proxies: "response_format
    type 'json_schema' is not supported"; LiteLLM: "does not support parameters: ['response_format']";
    vLLM and FastAPI-based servers validate with 400 or 422), so any client error naming the
    parameter counts.
    """
    if error.status_code not in (400, 422):
        return False
    text = f"{error.message} {error.body!r}".lower()
    return "response_format" in text or "json_schema" in text


class JsonObjectEndpoints:
    """The (base URL, model) pairs whose server rejected ``json_schema``: process-wide, thread-safe."""

    def __init__(self) -> None:
        self._endpoints: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def remember(self, base_url: str, model: str) -> None:
        with self._lock:
            self._endpoints.add((base_url, model))

    def __contains__(self, endpoint: object) -> bool:
        with self._lock:
            return endpoint in self._endpoints


JSON_OBJECT_ONLY = JsonObjectEndpoints()
"""Every gateway endpoint of this process that takes structured output only as ``json_object``."""
