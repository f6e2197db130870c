"""A scriptable fake LLM HTTP server speaking the OpenAI and Anthropic wire protocols.

Stdlib only. It is meant to be driven by the *unmodified* official SDKs, so the
JSON shapes, SSE framing, status codes and headers follow the real APIs closely
enough for the SDKs' parsers, stream helpers and error mapping to work.

    with LLMServer() as srv:
        srv.enqueue(Reply(text="Paris."))
        client = OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0)

Endpoints: ``POST /v1/chat/completions``, ``POST /v1/messages`` and
``POST /v1/messages/count_tokens``.  One FIFO queue of ``Reply``/``Fault`` items
is shared by both protocols; when it is empty ``srv.default(request)`` is asked,
and if that is unset (or returns None) the reply is ``"echo: <last user text>"``.

Design notes (why it looks like this):
* ThreadingHTTPServer + HTTP/1.1 keep-alive: one thread per connection, so SDK
  connection pools reuse sockets and concurrent requests really overlap.
* Responses are written with a single ``sendall`` (headers + body, or the whole
  SSE stream when ``chunk_delay == 0``) and TCP_NODELAY is set, to avoid
  Nagle/delayed-ACK stalls and keep per-request overhead low for benchmarks.
* Every wait (latency, chunk delay, hang) is interruptible, and ``close()``
  shuts down all open sockets, so closing never waits for hanging requests.
"""

from __future__ import annotations

import http
import json
import os
import select
import socket
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.batch_api import BatchAPI

__all__ = [
    "LLMServer",
    "Reply",
    "Fault",
    "ToolCallSpec",
    "RecordedRequest",
    "estimate_input_tokens",
    "sample_output",
]

_ENCODER = json.JSONEncoder(separators=(",", ":"))  # reused: json.dumps(**kw) builds an encoder per call


# --------------------------------------------------------------------------- scripting objects


@dataclass
class ToolCallSpec:
    """One tool call in a Reply. ``id=None`` generates ``call_...`` (OpenAI) / ``toolu_...`` (Anthropic)."""

    name: str
    arguments: dict | str = field(default_factory=dict)  # a str is sent verbatim (e.g. malformed JSON)
    id: str | None = None

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return _ENCODER.encode(self.arguments)

    def arguments_obj(self) -> Any:
        if not isinstance(self.arguments, str):
            return self.arguments
        try:
            return json.loads(self.arguments)
        except ValueError:
            return {}  # non-streaming Anthropic cannot carry invalid JSON in `input`


@dataclass
class Reply:
    """A successful model answer. Streaming/non-streaming is decided by the request.

    Chunk counters (``*_after_chunks``) count SSE events written (role/start/delta/stop
    events all count).  For non-streaming requests ``drop_after_chunks`` sends half
    the body and closes; the other ``*_after_chunks`` options are ignored.
    """

    text: str = ""
    tool_calls: list = field(default_factory=list)  # list[ToolCallSpec]
    # Either vocabulary is accepted and translated: end_turn/tool_use/max_tokens/stop_sequence
    # or stop/tool_calls/length/content_filter.  None -> derived from tool_calls.
    stop_reason: str | None = None
    # Partial usage override; keys in either vocabulary: input_tokens|prompt_tokens,
    # output_tokens|completion_tokens, cached_tokens|cache_read_input_tokens,
    # cache_creation_input_tokens.
    usage: dict | None = None
    cached_tokens: int = 0
    cache_creation_tokens: int = 0
    delay: float = 0.0  # extra seconds before responding (on top of server latency)
    headers: dict = field(default_factory=dict)  # extra response headers
    drop_after_chunks: int | None = None  # close the connection mid-stream
    hang_after_chunks: int | None = None  # stall mid-stream until client leaves / server closes
    anthropic_error_after_chunks: int | None = None  # `event: error` overloaded_error mid-stream
    openai_error_after_chunks: int | None = None  # `data: {"error": ...}` mid-stream
    # A broken upstream: the stream ends cleanly after this many events, before any finish reason (OpenAI: no
    # chunk with finish_reason, then `data: [DONE]` unless done=False; Anthropic: no message_delta/message_stop).
    end_after_chunks: int | None = None
    done: bool = True
    # A structured answer, rendered the way the request asked for one: the message text (OpenAI
    # response_format, Anthropic output_config) or, when an Anthropic request forces a tool with
    # tool_choice {"type": "tool"}, that tool's input.  JSON-encoded unless a str, which is sent
    # verbatim (invalid JSON on demand; "null" for a JSON null).
    output: Any = None
    # A refusal: OpenAI `message.refusal` (and `delta.refusal` when streaming) with null content;
    # Anthropic stop_reason "refusal" with the text as the content.
    refusal: str | None = None

    def __post_init__(self) -> None:
        self.text = self.text or ""  # tolerate Reply(text=None)

    def rendered_for(self, body: dict) -> Reply:
        """This reply with ``output`` turned into the text or forced tool call the request calls for."""
        if self.output is None:
            return self
        encoded = self.output if isinstance(self.output, str) else _ENCODER.encode(self.output)
        choice = body.get("tool_choice")
        if "max_tokens" in body and isinstance(choice, dict) and choice.get("type") == "tool":
            call = ToolCallSpec(choice.get("name") or "", encoded)
            return replace(self, output=None, text="", tool_calls=[call])
        return replace(self, output=None, text=encoded)


@dataclass
class Fault:
    """An error response (or a misbehaving connection)."""

    status: int = 500
    message: str | None = None  # default derived from status
    error_type: str | None = None  # default per protocol, e.g. rate_limit_error / server_error
    code: str | None = None  # OpenAI `error.code`
    retry_after: float | None = None  # sets the Retry-After header
    headers: dict = field(default_factory=dict)
    hang: bool = False  # read the request, never answer (until client leaves or server closes)
    drop: bool = False  # close the connection without any response
    delay: float = 0.0


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict  # lower-cased header names
    body: Any  # decoded JSON (None if the body was not JSON)
    protocol: str  # "openai" | "anthropic"
    time: float  # time.monotonic() when the request was read
    response: Any = None  # the Reply/Fault served (None if rejected before that)
    status: int | None = None  # HTTP status sent (None for hang/drop faults)
    client: tuple = ()  # (host, port) of the client socket: same port = reused keep-alive connection

    @property
    def json(self) -> Any:
        return self.body

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and bool(self.body.get("stream"))

    @property
    def messages(self) -> list:
        msgs = self.body.get("messages") if isinstance(self.body, dict) else None
        return msgs if isinstance(msgs, list) else []

    @property
    def tool_names(self) -> list:
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        names = []
        for t in tools or []:
            if isinstance(t, dict):
                names.append((t.get("function") or {}).get("name") or t.get("name"))
        return names

    @property
    def output_schema(self) -> dict | None:
        """The JSON schema the request asks the answer to follow, whatever the mechanism.

        OpenAI ``response_format`` json_schema, Anthropic ``output_config.format`` or the beta
        ``output_format``, or the input schema of the tool an Anthropic ``tool_choice`` forces.
        """
        body = self.body if isinstance(self.body, dict) else {}
        fmt = body.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            return (fmt.get("json_schema") or {}).get("schema")
        config = body.get("output_config")
        fmt = config.get("format") if isinstance(config, dict) else None
        fmt = fmt or body.get("output_format")
        if isinstance(fmt, dict):
            return fmt.get("schema")
        choice = body.get("tool_choice")
        if self.protocol == "anthropic" and isinstance(choice, dict) and choice.get("type") == "tool":
            for tool in body.get("tools") or []:
                if isinstance(tool, dict) and tool.get("name") == choice.get("name"):
                    return tool.get("input_schema")
        return None

    @property
    def last_user_text(self) -> str:
        """Text of the last user message that has text (tool results are skipped)."""
        for m in reversed(self.messages):
            if isinstance(m, dict) and m.get("role") == "user":
                text = _text_of(m.get("content"))
                if text:
                    return text
        return ""

    @property
    def last_message_is_tool_result(self) -> bool:
        if not self.messages or not isinstance(self.messages[-1], dict):
            return False
        last = self.messages[-1]
        if last.get("role") == "tool":
            return True
        content = last.get("content")
        return (
            last.get("role") == "user"
            and isinstance(content, list)
            and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
        )


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _chars(value: Any) -> int:
    """Characters of message content, used for the deterministic token estimate."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_chars(v) for v in value)
    if isinstance(value, dict):
        n = sum(_chars(value.get(k)) for k in ("content", "text", "arguments", "system") if k in value)
        if isinstance(value.get("input"), dict):
            n += len(_ENCODER.encode(value["input"]))
        if isinstance(value.get("function"), dict):
            n += _chars(value["function"])
        if isinstance(value.get("tool_calls"), list):
            n += _chars(value["tool_calls"])
        return n
    return 0


def estimate_input_tokens(body: Any) -> int:
    """input tokens = (chars of all message contents + system) // 4 + 1."""
    if not isinstance(body, dict):
        return 1
    return (_chars(body.get("messages")) + _chars(body.get("system"))) // 4 + 1


def _new_id(prefix: str) -> str:
    return prefix + os.urandom(12).hex()


_TO_OPENAI_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
    "pause_turn": "stop",
}
_TO_ANTHROPIC_STOP = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
    "function_call": "tool_use",
}

_OPENAI_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "invalid_request_error",
    404: "invalid_request_error",
    409: "invalid_request_error",
    422: "invalid_request_error",
    429: "requests",
}
_OPENAI_ERROR_CODES = {401: "invalid_api_key", 429: "rate_limit_exceeded"}
_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


# What OpenAI sends as an SSE `data:` line when generation fails mid-stream.
_OPENAI_STREAM_ERROR = {
    "error": {
        "message": "The server had an error while processing your request. Sorry about that!",
        "type": "server_error",
        "param": None,
        "code": None,
    }
}


class _Invalid(Exception):
    """Strict-mode validation failure -> 400 in the protocol's error shape."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param  # OpenAI's `error.param`


# --------------------------------------------------------------------------- strict validation
# Messages mimic the real APIs' wording so tests can match on the same substrings.


def _openai_unanswered(ids: list) -> _Invalid:
    return _Invalid(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        "'tool_call_id'. The following tool_call_ids did not have response messages: " + ", ".join(ids)
    )


def _anthropic_unanswered(i: int, ids: list) -> _Invalid:
    return _Invalid(
        f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
        f"{', '.join(ids)}. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
    )


def _validate_openai(body: dict) -> None:
    if not body.get("model"):
        raise _Invalid("you must provide a model parameter")
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise _Invalid(
            "Missing required parameter: 'messages'."
            if msgs is None
            else "Invalid 'messages': empty array. Expected an array with minimum length 1."
        )
    pending: list = []  # tool_call ids of the last assistant message still awaiting a `tool` message
    for i, m in enumerate(msgs):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool", "function"):
            raise _Invalid(
                f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', "
                f"'tool', 'function' and 'developer'. (messages[{i}].role)"
            )
        content = m.get("content")
        if role == "tool":
            tid = m.get("tool_call_id")
            if not tid:
                raise _Invalid(f"Missing required parameter: 'messages[{i}].tool_call_id'.")
            if tid not in pending:
                raise _Invalid(
                    f"Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                    f"message with 'tool_calls'. (messages[{i}], tool_call_id {tid!r})"
                )
            pending.remove(tid)
            if content is None:
                raise _Invalid(f"Missing required parameter: 'messages[{i}].content'.")
            continue
        if pending:
            raise _openai_unanswered(pending)
        if role == "assistant":
            calls = m.get("tool_calls") or []
            if not calls and content is None:
                raise _Invalid(f"Invalid value for 'messages[{i}].content': expected a string, got null.")
            for j, c in enumerate(calls):
                if not isinstance(c, dict) or not c.get("id") or not (c.get("function") or {}).get("name"):
                    raise _Invalid(f"Missing required parameter: 'messages[{i}].tool_calls[{j}].id/function.name'.")
                pending.append(c["id"])
            if len(set(pending)) != len(pending):
                raise _Invalid(f"Duplicate tool_call ids in messages[{i}].tool_calls.")
        elif content is None:
            raise _Invalid(f"Missing required parameter: 'messages[{i}].content'.")
        elif role == "user" and not _text_of(content) and not (isinstance(content, list) and content):
            raise _Invalid(
                f"Invalid 'messages[{i}].content': string too short. Expected a string with minimum "
                f"length 1, but got an empty string instead."
            )
    if pending:
        raise _openai_unanswered(pending)
    _validate_response_format(body)


def _validate_anthropic(body: dict) -> None:
    for name in ("model", "max_tokens", "messages"):
        if body.get(name) is None:
            raise _Invalid(f"{name}: Field required")
    if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
        raise _Invalid("max_tokens: Input should be greater than or equal to 1")
    msgs = body["messages"]
    if not isinstance(msgs, list) or not msgs:
        raise _Invalid("messages: at least one message is required")
    prev_role = None
    open_ids: list = []  # tool_use ids of the previous assistant message
    for i, m in enumerate(msgs):
        role = m.get("role") if isinstance(m, dict) else None
        if role == "system":
            raise _Invalid(
                'messages: Unexpected role "system". The Messages API accepts a top-level `system` '
                'parameter, not "system" as an input message role.'
            )
        if role not in ("user", "assistant"):
            raise _Invalid(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        if i == 0 and role != "user":
            raise _Invalid('messages: first message must use the "user" role')
        if role == prev_role:
            raise _Invalid(
                f'messages: roles must alternate between "user" and "assistant", but found multiple '
                f'"{role}" roles in a row'
            )
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            raise _Invalid(f"messages.{i}.content: Input should be a valid list")
        is_final_assistant = role == "assistant" and i == len(msgs) - 1
        if (not blocks or (isinstance(content, str) and not content)) and not is_final_assistant:
            raise _Invalid(
                f"messages.{i}: all messages must have non-empty content except for the optional "
                f"final assistant message"
            )
        answered = []
        new_ids = []
        for j, b in enumerate(blocks if isinstance(content, list) else []):
            btype = b.get("type") if isinstance(b, dict) else None
            if btype == "text" and not b.get("text"):
                raise _Invalid(f"messages.{i}.content.{j}.text: text content blocks must be non-empty")
            if btype == "tool_result":
                if role != "user":
                    raise _Invalid(f"messages.{i}.content.{j}: `tool_result` blocks are only allowed in user messages")
                tid = b.get("tool_use_id")
                if tid not in open_ids or tid in answered:
                    raise _Invalid(
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` "
                        f"blocks: {tid}. Each `tool_result` block must have a corresponding `tool_use` "
                        f"block in the previous message."
                    )
                answered.append(tid)
            if btype == "tool_use":
                if role != "assistant" or not b.get("id") or not b.get("name"):
                    raise _Invalid(f"messages.{i}.content.{j}: invalid `tool_use` block")
                new_ids.append(b["id"])
        missing = [t for t in open_ids if t not in answered]
        if missing:
            raise _anthropic_unanswered(i, missing)
        open_ids, prev_role = new_ids, role
    if open_ids:
        raise _anthropic_unanswered(len(msgs) - 1, open_ids)
    _validate_tool_choice(body)
    _validate_output_config(body)


# --------------------------------------------------------------------------- structured output checks
# OpenAI strict mode accepts a documented subset of JSON Schema (Structured Outputs guide, "Supported
# schemas"); Anthropic's subset is the one its SDK's transform_schema() produces.

_OPENAI_STRICT_KEYWORDS = frozenset(
    "type properties required additionalProperties items anyOf enum const $ref $defs description title "
    "pattern format minimum maximum exclusiveMinimum exclusiveMaximum multipleOf minItems maxItems".split()
)
_ANTHROPIC_SCHEMA_KEYWORDS = frozenset(
    "type properties required additionalProperties items anyOf allOf enum const $ref $defs description title "
    "format minItems".split()
)
_STRING_FORMATS = frozenset("date-time time date duration email hostname ipv4 ipv6 uuid".split())


def _openai_strict_problem(node: Any, ctx: tuple = ()) -> str | None:
    """The first reason OpenAI would reject ``node`` as a strict schema, worded like its 400s."""
    if not isinstance(node, dict):
        return f"In context={ctx}, schema must be an object."
    for key in node:
        if key not in _OPENAI_STRICT_KEYWORDS:
            return f"In context={ctx}, '{key}' is not permitted."
    if "$ref" in node and len(node) > 1:
        return f"In context={ctx}, $ref cannot have keywords {sorted(k for k in node if k != '$ref')}."
    if node.get("type") == "object" or "properties" in node:
        if node.get("additionalProperties") is not False:
            return f"In context={ctx}, 'additionalProperties' is required to be supplied and to be false."
        required = node.get("required") if isinstance(node.get("required"), list) else []
        missing = [k for k in node.get("properties") or {} if k not in required]
        if missing:
            return (
                f"In context={ctx}, 'required' is required to be supplied and to be an array including every "
                f"key in properties. Missing '{missing[0]}'."
            )
    if "format" in node and node["format"] not in _STRING_FORMATS:
        return f"In context={ctx}, '{node['format']}' is not a valid format."
    children = [(("properties", k), v) for k, v in (node.get("properties") or {}).items()]
    children += [(("$defs", k), v) for k, v in (node.get("$defs") or {}).items()]
    children += [(("anyOf", str(i)), v) for i, v in enumerate(node.get("anyOf") or [])]
    if "items" in node:
        children.append((("items",), node["items"]))
    for step, child in children:
        problem = _openai_strict_problem(child, ctx + step)
        if problem:
            return problem
    return None


def _validate_response_format(body: dict) -> None:
    fmt = body.get("response_format")
    if fmt is None:
        return
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind not in ("text", "json_object", "json_schema"):
        raise _Invalid(
            f"Invalid value: '{kind}'. Supported values are: 'text', 'json_object', and 'json_schema'.",
            "response_format.type",
        )
    if kind == "json_object" and "json" not in json.dumps(body.get("messages")).lower():
        raise _Invalid(
            "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
            "messages",
        )
    if kind != "json_schema":
        return
    spec = fmt.get("json_schema")
    if not isinstance(spec, dict) or not spec.get("name"):
        raise _Invalid("Missing required parameter: 'response_format.json_schema.name'.", "response_format")
    name = spec["name"]
    if not isinstance(name, str) or len(name) > 64 or not all(c.isascii() and (c.isalnum() or c in "_-") for c in name):
        raise _Invalid(
            "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that "
            "matches the pattern '^[a-zA-Z0-9_-]+$'.",
            "response_format.json_schema.name",
        )
    schema = spec.get("schema")
    if not spec.get("strict"):
        return
    if not isinstance(schema, dict) or schema.get("type") != "object":
        got = schema.get("type") if isinstance(schema, dict) else None
        problem = f"schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{got}\"'."
    else:
        problem = _openai_strict_problem(schema)
    if problem:
        raise _Invalid(f"Invalid schema for response_format '{name}': {problem}", "response_format")


def _validate_tool_choice(body: dict) -> None:
    choice = body.get("tool_choice")
    if choice is None:
        return
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind not in ("auto", "any", "tool", "none"):
        raise _Invalid("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'")
    if kind != "none" and not body.get("tools"):
        raise _Invalid("tool_choice may only be specified while providing tools.")
    if kind == "tool":
        name = choice.get("name")
        if not isinstance(name, str) or not name:
            raise _Invalid("tool_choice.tool.name: Field required")
        declared = [t.get("name") for t in body["tools"] if isinstance(t, dict)]
        if name not in declared:
            raise _Invalid(f"tool_choice.name: tool '{name}' is not one of the provided tools: {declared}")


def _anthropic_schema_problem(node: Any, where: str) -> str | None:
    if not isinstance(node, dict):
        return f"{where}: schema must be an object"
    for key in node:
        if key not in _ANTHROPIC_SCHEMA_KEYWORDS:
            return f"{where}: '{key}' is not supported"
    if node.get("type") == "object" and node.get("additionalProperties") is not False:
        return f"{where}: For 'object' type, 'additionalProperties' must be explicitly set to false"
    if "minItems" in node and node["minItems"] not in (0, 1):
        return f"{where}: 'minItems' values other than 0 or 1 are not supported"
    children = [(f"{where}.properties.{k}", v) for k, v in (node.get("properties") or {}).items()]
    children += [(f"{where}.$defs.{k}", v) for k, v in (node.get("$defs") or {}).items()]
    children += [(f"{where}.{kw}.{i}", v) for kw in ("anyOf", "allOf") for i, v in enumerate(node.get(kw) or [])]
    if "items" in node:
        children.append((f"{where}.items", node["items"]))
    for path, child in children:
        problem = _anthropic_schema_problem(child, path)
        if problem:
            return problem
    return None


def _validate_output_config(body: dict) -> None:
    """``output_config.format`` (GA) or the deprecated top-level ``output_format`` (beta)."""
    where, fmt = "output_format", body.get("output_format")
    config = body.get("output_config")
    if isinstance(config, dict) and config.get("format") is not None:
        if fmt is not None:
            raise _Invalid("Both output_format and output_config.format were provided; use output_config.format.")
        where, fmt = "output_config.format", config["format"]
    if fmt is None:
        return
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        raise _Invalid(f"{where}.type: Input should be 'json_schema'")
    if not isinstance(fmt.get("schema"), dict):
        raise _Invalid(f"{where}.schema: Field required")
    problem = _anthropic_schema_problem(fmt["schema"], f"{where}.schema")
    if problem:
        raise _Invalid(problem)


_SAMPLE_STRINGS = {"date-time": "2024-01-01T00:00:00Z", "date": "2024-01-01", "time": "00:00:00", "email": "a@b.co"}


def sample_output(schema: dict, defs: dict | None = None) -> Any:
    """A small value that satisfies ``schema`` (first enum value, lowest allowed number, ...).

    For scripting structured answers without writing them, e.g. in a benchmark:
    ``srv.default = lambda req: Reply(output=sample_output(req.output_schema)) if req.output_schema else None``
    """
    defs = schema.get("$defs", {}) if defs is None else defs
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return sample_output(defs[ref.rsplit("/", 1)[-1]], defs)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    branches = schema.get("anyOf") or schema.get("oneOf") or schema.get("allOf")
    if branches:
        usable = [b for b in branches if b.get("type") != "null"] or branches
        return sample_output(usable[0], defs)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        return {key: sample_output(sub, defs) for key, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [sample_output(schema.get("items") or {}, defs) for _ in range(schema.get("minItems") or 0)]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1)
        return int(low) if kind == "integer" else float(low)
    if kind == "string":
        return _SAMPLE_STRINGS.get(schema.get("format"), "x" * (schema.get("minLength") or 1))
    return {"boolean": True, "null": None}.get(kind, {})


# --------------------------------------------------------------------------- wire encoding helpers


def _dumps(obj: Any) -> bytes:
    return _ENCODER.encode(obj).encode()


def _chunk(data: bytes) -> bytes:
    """One HTTP/1.1 chunked-transfer frame."""
    return b"%X\r\n%s\r\n" % (len(data), data)


_LAST_CHUNK = b"0\r\n\r\n"


def _pieces(s: str, size: int) -> list:
    size = max(1, size)
    return [s[i : i + size] for i in range(0, len(s), size)] or [""]


# --------------------------------------------------------------------------- server


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # close() joins handler threads itself, with a timeout
    request_queue_size = 1024  # the default listen backlog (5) drops SYNs under load-test bursts
    llm: LLMServer

    def handle_error(self, request, client_address):  # pragma: no cover - diagnostics only
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError) or self.llm._stopping.is_set():
            return  # clients going away is normal for a fault-injection server
        traceback.print_exc()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    server: _HTTPServer

    def log_message(self, format, *args):  # silence per-request logging
        pass

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        llm = self.server.llm
        with llm._lock:
            llm._conns[self.connection] = threading.current_thread()
        if llm._stopping.is_set():
            self._kill()

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass
        with self.server.llm._lock:
            self.server.llm._conns.pop(self.connection, None)

    # ---- socket helpers

    def _send(self, data: bytes) -> None:
        self.connection.sendall(data)

    def _kill(self) -> None:
        """Close the TCP connection (FIN) without finishing the response."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _wait(self, seconds: float) -> bool:
        """Sleep interruptibly; False if the server is stopping."""
        if seconds <= 0:
            return not self.server.llm._stopping.is_set()
        return not self.server.llm._stopping.wait(seconds)

    def _hang(self) -> None:
        """Block until the server stops or the client disconnects, then close."""
        stopping = self.server.llm._stopping
        while not stopping.is_set():
            try:
                readable, _, _ = select.select([self.connection], [], [], 0.05)
                if readable and not self.connection.recv(1, socket.MSG_PEEK):
                    break  # client gave up (e.g. its read timeout fired)
            except OSError:
                break
            if readable:
                stopping.wait(0.05)  # unexpected pipelined bytes: don't spin
        self._kill()

    def _head(self, status: int, headers: dict) -> bytes:
        try:
            phrase = http.HTTPStatus(status).phrase
        except ValueError:
            phrase = "Overloaded" if status == 529 else "Error"
        lines = [f"HTTP/1.1 {status} {phrase}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _respond_json(self, status: int, obj: Any, headers: dict, partial: bool = False) -> None:
        body = _dumps(obj)
        head = self._head(status, {"Content-Type": "application/json", "Content-Length": str(len(body)), **headers})
        if partial:  # simulate a connection dying mid-body
            self._send(head + body[: len(body) // 2])
            self._kill()
        else:
            self._send(head + body)

    # ---- request entry point

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if self.server.llm.batches.handles(path):
            return self.server.llm.batches.serve(self, "GET", path, b"")
        self._send(self._head(404, {"Content-Length": "0"}))

    def do_POST(self):
        llm = self.server.llm
        path = self.path.split("?", 1)[0]
        if llm.batches.handles(path):  # the Batch APIs: tests/support/batch_api.py
            length = int(self.headers.get("Content-Length") or 0)
            return llm.batches.serve(self, "POST", path, self.rfile.read(length) if length else b"")
        if path.endswith("/chat/completions"):
            protocol = "openai"
        elif path.endswith("/messages") or path.endswith("/messages/count_tokens"):
            protocol = "anthropic"
        else:
            protocol = None
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        req = RecordedRequest(
            self.command,
            self.path,
            {k.lower(): v for k, v in self.headers.items()},
            body,
            protocol or "unknown",
            time.monotonic(),
            client=self.client_address,
        )
        llm._begin(req)
        try:
            self._serve(req, protocol, path)
        except OSError:
            self.close_connection = True  # client went away mid-response
        except Exception as exc:  # noqa: BLE001 - a bug in a `default` hook or here: report it, answer 500
            traceback.print_exc()
            try:
                self._error(req, 500, f"fake server error: {exc!r}", {})
            except OSError:
                self.close_connection = True
        finally:
            llm._end()

    def _serve(self, req: RecordedRequest, protocol: str | None, path: str) -> None:
        llm = self.server.llm
        if protocol is None:
            return self._error(req, 404, f"Unknown path {path}", {}, proto="openai")
        if not isinstance(req.body, dict):
            return self._error(req, 400, "We could not parse the JSON body of your request.", {})
        if path.endswith("/count_tokens"):
            tokens = estimate_input_tokens(req.body)
            req.status = 200
            return self._respond_json(200, {"input_tokens": tokens}, {"request-id": _new_id("req_")})
        fmt = req.body.get("response_format")
        if not llm.json_schema_supported and isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            message = "response_format type 'json_schema' is not supported by this endpoint; use 'json_object'."
            return self._error(req, 400, message, {}, param="response_format")
        if llm.strict:
            try:
                (_validate_openai if protocol == "openai" else _validate_anthropic)(req.body)
            except _Invalid as exc:
                return self._error(req, 400, str(exc), {}, param=exc.param)
        limited = llm._rate_limit(req)
        if limited is not None:
            return self._error(req, 429, limited[0], limited[1], code="rate_limit_exceeded")
        item = llm._next_item(req)
        if llm.rate_headers:
            item = replace(item, headers={**llm.rate_headers_for(req), **item.headers})
        req.response = item
        latency = llm.latency() if callable(llm.latency) else llm.latency
        if not self._wait((latency or 0) + item.delay):
            return self._kill()
        if isinstance(item, Fault):
            return self._fault(req, item)
        if protocol == "openai":
            return self._openai(req, item)
        return self._anthropic(req, item)

    # ---- errors

    def _error(self, req, status, message, headers, proto=None, etype=None, code=None, param=None) -> None:
        proto = proto or req.protocol
        rid = _new_id("req_")
        if proto == "anthropic":
            etype = etype or _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
            body = {"type": "error", "error": {"type": etype, "message": message}, "request_id": rid}
            headers = {"request-id": rid, **headers}
        else:
            etype = etype or _OPENAI_ERROR_TYPES.get(status, "server_error")
            body = {
                "error": {
                    "message": message,
                    "type": etype,
                    "param": param,
                    "code": code or _OPENAI_ERROR_CODES.get(status),
                }
            }
            headers = {"x-request-id": rid, **headers}
        req.status = status
        self._respond_json(status, body, headers)

    def _fault(self, req: RecordedRequest, fault: Fault) -> None:
        if fault.hang:
            return self._hang()
        if fault.drop:
            return self._kill()
        headers = dict(fault.headers)
        if fault.retry_after is not None:
            ra = fault.retry_after
            headers["Retry-After"] = str(int(ra)) if float(ra).is_integer() else str(ra)
        try:
            default_msg = http.HTTPStatus(fault.status).phrase
        except ValueError:
            default_msg = "Overloaded" if fault.status == 529 else "Error"
        self._error(
            req,
            fault.status,
            fault.message or f"Injected fault: {default_msg}",
            headers,
            etype=fault.error_type,
            code=fault.code,
        )

    # ---- usage

    def _usage(self, req: RecordedRequest, reply: Reply) -> tuple:
        """(input, output, cache_read, cache_creation); OpenAI-style input, i.e. including cached."""
        out_chars = len(reply.text) + sum(len(tc.arguments_json()) for tc in reply.tool_calls)
        u = reply.usage or {}
        inp = u.get("input_tokens", u.get("prompt_tokens", estimate_input_tokens(req.body)))
        out = u.get("output_tokens", u.get("completion_tokens", out_chars // 4 + 1))
        cached = u.get("cached_tokens", u.get("cache_read_input_tokens", reply.cached_tokens))
        created = u.get("cache_creation_input_tokens", reply.cache_creation_tokens)
        return inp, out, cached, created

    # ---- OpenAI Chat Completions

    def _openai(self, req: RecordedRequest, reply: Reply) -> None:
        llm = self.server.llm
        body = req.body
        reply = reply.rendered_for(body)
        rid = _new_id("req_")
        cid = _new_id("chatcmpl-")
        created = int(time.time())
        model = body.get("model") or "unknown"
        finish = reply.stop_reason or ("tool_calls" if reply.tool_calls else "stop")
        finish = _TO_OPENAI_FINISH.get(finish, finish)
        calls = [(tc, tc.id or _new_id("call_")) for tc in reply.tool_calls]
        inp, out, cached, _ = self._usage(req, reply)
        usage = {
            "prompt_tokens": inp,
            "completion_tokens": out,
            "total_tokens": inp + out,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }
        headers = {"x-request-id": rid, "openai-processing-ms": "1", **reply.headers}
        req.status = 200

        if not body.get("stream"):
            message: dict = {
                "role": "assistant",
                "content": reply.text if ((reply.text or not calls) and reply.refusal is None) else None,
                "refusal": reply.refusal,
                "annotations": [],
            }
            if calls:
                message["tool_calls"] = [
                    {"id": i, "type": "function", "function": {"name": tc.name, "arguments": tc.arguments_json()}}
                    for tc, i in calls
                ]
            resp = {
                "id": cid,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
                "usage": usage,
                "service_tier": "default",
                "system_fingerprint": None,
            }
            return self._respond_json(200, resp, headers, partial=reply.drop_after_chunks is not None)

        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        base = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "service_tier": "default",
            "system_fingerprint": None,
        }
        if include_usage:
            base["usage"] = None  # the real API sends usage:null on every chunk but the last

        def chunk(delta: dict, finish_reason=None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            return b"data: " + _dumps({**base, "choices": [choice]}) + b"\n\n"

        size = llm.chunk_size
        first = "" if ((reply.text or not calls) and reply.refusal is None) else None
        events = [chunk({"role": "assistant", "content": first, "refusal": None})]
        if reply.refusal is not None:
            events += [chunk({"refusal": p}) for p in _pieces(reply.refusal, size)]
        elif reply.text:
            events += [chunk({"content": p}) for p in _pieces(reply.text, size)]
        for idx, (tc, call_id) in enumerate(calls):
            start = {"index": idx, "id": call_id, "type": "function", "function": {"name": tc.name, "arguments": ""}}
            events.append(chunk({"tool_calls": [start]}))
            args = tc.arguments_json()
            if args:
                events += [
                    chunk({"tool_calls": [{"index": idx, "function": {"arguments": p}}]}) for p in _pieces(args, size)
                ]
        events.append(chunk({}, finish))
        if include_usage:
            events.append(b"data: " + _dumps({**base, "choices": [], "usage": usage}) + b"\n\n")
        events.append(b"data: [DONE]\n\n")
        if reply.end_after_chunks is not None:
            events = events[: reply.end_after_chunks] + ([b"data: [DONE]\n\n"] if reply.done else [])
        error = None
        if reply.openai_error_after_chunks is not None:
            error = (reply.openai_error_after_chunks, b"data: " + _dumps(_OPENAI_STREAM_ERROR) + b"\n\n")
        self._stream(events, headers, reply, error)

    # ---- Anthropic Messages

    def _anthropic(self, req: RecordedRequest, reply: Reply) -> None:
        llm = self.server.llm
        body = req.body
        reply = reply.rendered_for(body)
        if reply.refusal is not None:
            reply = replace(reply, text=reply.text or reply.refusal, tool_calls=[], stop_reason="refusal")
        rid = _new_id("req_")
        model = body.get("model") or "unknown"
        stop = reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")
        stop = _TO_ANTHROPIC_STOP.get(stop, stop)
        calls = [(tc, tc.id or _new_id("toolu_")) for tc in reply.tool_calls]
        inp, out, cached, creation = self._usage(req, reply)
        # Anthropic's input_tokens excludes cache reads/writes (OpenAI's prompt_tokens includes them).
        usage = {
            "input_tokens": max(0, inp - cached - creation),
            "cache_creation_input_tokens": creation,
            "cache_read_input_tokens": cached,
            "output_tokens": out,
            "service_tier": "standard",
        }
        headers = {"request-id": rid, **reply.headers}
        msg = {
            "id": _new_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
        details = {"type": "refusal", "category": None, "explanation": reply.refusal} if reply.refusal else None
        with_text = bool(reply.text) or not calls
        req.status = 200

        if not body.get("stream"):
            content = [{"type": "text", "text": reply.text}] if with_text else []
            content += [{"type": "tool_use", "id": i, "name": tc.name, "input": tc.arguments_obj()} for tc, i in calls]
            resp = {**msg, "content": content, "stop_reason": stop, "stop_details": details}
            return self._respond_json(200, resp, headers, partial=reply.drop_after_chunks is not None)

        def event(type_: str, **fields: Any) -> bytes:
            return b"event: " + type_.encode() + b"\ndata: " + _dumps({"type": type_, **fields}) + b"\n\n"

        def block(index: int, start: dict, deltas: list) -> list:
            stop = event("content_block_stop", index=index)
            return [event("content_block_start", index=index, content_block=start), *deltas, stop]

        size = llm.chunk_size
        events = [event("message_start", message={**msg, "usage": {**usage, "output_tokens": 1}})]
        if with_text:
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(reply.text, size)] if reply.text else []
            deltas = [event("content_block_delta", index=0, delta=d) for d in deltas]
            events += block(0, {"type": "text", "text": ""}, deltas)
        for index, (tc, call_id) in enumerate(calls, start=int(with_text)):
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(tc.arguments_json(), size)]
            deltas = [event("content_block_delta", index=index, delta=d) for d in deltas]
            events += block(index, {"type": "tool_use", "id": call_id, "name": tc.name, "input": {}}, deltas)
        delta_usage = {k: v for k, v in usage.items() if k != "service_tier"}  # message_delta usage is cumulative
        delta = {"stop_reason": stop, "stop_sequence": None, "stop_details": details}
        events.append(event("message_delta", delta=delta, usage=delta_usage))
        events.append(event("message_stop"))
        if reply.end_after_chunks is not None:
            events = events[: reply.end_after_chunks]
        error = None
        if reply.anthropic_error_after_chunks is not None:
            overloaded = {"type": "overloaded_error", "message": "Overloaded"}
            error = (reply.anthropic_error_after_chunks, event("error", error=overloaded, request_id=rid))
        self._stream(events, headers, reply, error)

    # ---- SSE transport shared by both protocols

    def _stream(self, events: list, headers: dict, reply: Reply, error: tuple | None) -> None:
        """Write SSE events as HTTP chunks; apply drop/hang/error-after-N-events scripting."""
        llm = self.server.llm
        cut, tail = len(events), b""  # events[:cut] are sent, then `tail` action
        action = "end"
        for n, act in (
            (reply.drop_after_chunks, "drop"),
            (reply.hang_after_chunks, "hang"),
            (error[0] if error else None, "error"),
        ):
            if n is not None and n < cut:
                cut, action = n, act
        if action == "error":
            tail = _chunk(error[1]) + _LAST_CHUNK
        elif action == "end":
            tail = _LAST_CHUNK
        frames = [_chunk(e) for e in events[:cut]]
        head = self._head(
            200,
            {
                "Content-Type": "text/event-stream; charset=utf-8",
                "Transfer-Encoding": "chunked",
                "Cache-Control": "no-cache",
                **headers,
            },
        )
        delay = llm.chunk_delay
        if delay <= 0:
            self._send(head + b"".join(frames) + tail)  # one syscall for the whole stream
        else:
            self._send(head)
            for i, frame in enumerate(frames):
                if i and not self._wait(delay):
                    return self._kill()
                # the terminator rides with the last frame so clients can reuse the connection at once
                self._send(frame + tail if i == len(frames) - 1 else frame)
            if not frames:
                self._send(tail)
        if action == "drop":
            self._kill()
        elif action == "hang":
            self._hang()


class LLMServer:
    """Fake OpenAI + Anthropic server on 127.0.0.1 (random free port by default), run in a background thread.

    Options (constructor kwargs, also plain attributes you may change at any time):
      latency:     seconds, or zero-arg callable returning seconds, waited before each response
      chunk_delay: seconds between streamed SSE events (0 = write the whole stream at once)
      chunk_size:  characters per streamed text / argument fragment
      strict:      reject malformed conversations and structured-output requests with 400, like the real APIs
      json_schema_supported: False = behave as a gateway that answers 400 to any json_schema response_format
      default:     callable(RecordedRequest) -> Reply | Fault | None, used when the queue is empty
      record:      keep RecordedRequest objects in ``requests`` (disable for very long benchmarks)
      rpm / tpm:   enforce requests / tokens per ``rate_window`` seconds per API key (token buckets that
                   start full and refill continuously): over the limit is a 429 with Retry-After (and
                   retry-after-ms); None = no limit. ``rate_limited`` counts those 429s.
      rate_window: the limits' "minute" in seconds (tests shrink it)
      rate_headers: send the protocol's rate-limit headers (limit/remaining/reset) on every answer
                   while a limit is set
    """

    def __init__(
        self,
        *,
        latency: float | Callable[[], float] = 0.0,
        chunk_delay: float = 0.0,
        chunk_size: int = 4,
        strict: bool = False,
        json_schema_supported: bool = True,
        default: Callable[[RecordedRequest], Any] | None = None,
        record: bool = True,
        rpm: int | None = None,
        tpm: int | None = None,
        rate_window: float = 60.0,
        rate_headers: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.latency = latency
        self.chunk_delay = chunk_delay
        self.chunk_size = chunk_size
        self.strict = strict
        self.json_schema_supported = json_schema_supported
        self.default = default
        self.record = record
        self.rpm = rpm
        self.tpm = tpm
        self.rate_window = rate_window
        self.rate_headers = rate_headers
        self.rate_limited = 0
        self._buckets: dict = {}  # (api key, "requests"|"tokens") -> [level, stamp]
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._queue: deque = deque()
        self._requests: list = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._total = 0
        self._conns: dict = {}
        self._stopping = threading.Event()
        self._httpd = _HTTPServer((host, port), _Handler)
        self._httpd.llm = self
        self.batches = BatchAPI(self)
        self.host, self.port = self._httpd.server_address[:2]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=f"LLMServer:{self.port}", daemon=True
        )
        self._thread.start()

    # ---- URLs

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.base_url  # the anthropic SDK appends /v1/messages itself

    # ---- scripting

    def enqueue(self, *items: Reply | Fault) -> None:
        for item in items:
            if not isinstance(item, (Reply, Fault)):
                raise TypeError(f"enqueue() takes Reply or Fault, got {item!r}")
        with self._lock:
            self._queue.extend(items)

    @property
    def pending(self) -> int:
        """Number of queued items not yet served."""
        with self._lock:
            return len(self._queue)

    def reset(self) -> None:
        """Clear the queue, recorded requests and the max_in_flight high-water mark."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self._total = 0
            self._max_in_flight = self._in_flight
            self.rate_limited = 0
            self._buckets.clear()

    # ---- observation

    @property
    def requests(self) -> list:
        """Snapshot of recorded requests, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        """Requests received since start/reset (counted even when ``record=False``)."""
        with self._lock:
            return self._total

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        with self._lock:
            return self._max_in_flight

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> bool:
        """Block until at least ``count`` requests arrived since start/reset; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._total >= count, timeout)

    # ---- lifecycle

    def close(self) -> None:
        """Stop quickly: wakes hanging/sleeping handlers and closes every open connection."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._lock:
            conns = list(self._conns.items())
        for sock, _ in conns:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + 2.0
        for _, thread in conns:
            thread.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> LLMServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- internals used by the handler

    def _begin(self, req: RecordedRequest) -> None:
        with self._cond:
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
            self._total += 1
            if self.record:
                self._requests.append(req)
            self._cond.notify_all()

    def _end(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _rate_limit(self, req: RecordedRequest) -> tuple | None:
        return _rate_limit(self, req)

    def rate_headers_for(self, req: RecordedRequest) -> dict:
        """The rate-limit headers an answer to ``req`` carries now (empty without a limit)."""
        return _rate_headers(self, req)

    def _next_item(self, req: RecordedRequest) -> Reply | Fault:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        item = self.default(req) if self.default is not None else None
        return item if item is not None else Reply(text=f"echo: {req.last_user_text}")


# --------------------------------------------------------------------------- rate limits


def _api_key(req: RecordedRequest) -> str:
    auth = req.headers.get("authorization", "")
    return req.headers.get("x-api-key") or auth.removeprefix("Bearer ")


def _request_tokens(body: dict) -> int:
    """What a request counts against TPM when it arrives, as the real APIs do: prompt + max output."""
    limit = body.get("max_completion_tokens") or body.get("max_tokens") or 0
    return estimate_input_tokens(body) + int(limit)


def _reset_duration(seconds: float) -> str:
    """OpenAI's reset format: "1s", "6m0s", "20ms"."""
    if seconds < 1:
        return f"{max(0, int(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:.3g}s" if minutes else f"{rest:.3g}s"


def _limits_of(llm: LLMServer) -> list:
    return [(kind, limit) for kind, limit in (("requests", llm.rpm), ("tokens", llm.tpm)) if limit]


def _rate_limit(llm: LLMServer, req: RecordedRequest) -> tuple | None:
    """Take this request from its key's buckets; (message, headers) of a 429 when one is short."""
    limits = _limits_of(llm)
    if not limits:
        return None
    costs = {"requests": 1, "tokens": _request_tokens(req.body)}
    key = _api_key(req)
    now = time.monotonic()
    with llm._lock:
        levels = {}
        for kind, limit in limits:
            bucket = llm._buckets.setdefault((key, kind), [float(limit), now])
            bucket[0] = min(float(limit), bucket[0] + (now - bucket[1]) * limit / llm.rate_window)
            bucket[1] = now
            levels[kind] = bucket
        short = [(kind, limit) for kind, limit in limits if levels[kind][0] < costs[kind]]
        if not short:
            for kind, _ in limits:
                levels[kind][0] -= costs[kind]
            return None
        llm.rate_limited += 1
        kind, limit = short[0]
        wait = (costs[kind] - levels[kind][0]) * llm.rate_window / limit
    headers = llm.rate_headers_for(req) if llm.rate_headers else {}
    headers.update({"retry-after-ms": str(max(1, int(wait * 1000))), "Retry-After": str(max(1, int(wait + 0.999)))})
    per = "minute" if llm.rate_window == 60 else f"{llm.rate_window:g} s"
    return f"Rate limit reached for {kind} per {per}: Limit {limit}. Please try again later.", headers


def _rate_headers(llm: LLMServer, req: RecordedRequest) -> dict:
    """The protocol's limit / remaining / reset headers for the caller's key, as of now."""
    key = _api_key(req)
    now = time.monotonic()
    headers = {}
    for kind, limit in _limits_of(llm):
        with llm._lock:
            level, stamp = llm._buckets.get((key, kind), (float(limit), now))
        level = min(float(limit), level + (now - stamp) * limit / llm.rate_window)
        reset = (limit - level) * llm.rate_window / limit
        remaining = max(0, int(level))
        if req.protocol == "anthropic":
            at = datetime.fromtimestamp(time.time() + reset, UTC).isoformat(timespec="milliseconds")
            headers[f"anthropic-ratelimit-{kind}-limit"] = str(limit)
            headers[f"anthropic-ratelimit-{kind}-remaining"] = str(remaining)
            headers[f"anthropic-ratelimit-{kind}-reset"] = at.replace("+00:00", "Z")
        else:
            headers[f"x-ratelimit-limit-{kind}"] = str(limit)
            headers[f"x-ratelimit-remaining-{kind}"] = str(remaining)
            headers[f"x-ratelimit-reset-{kind}"] = _reset_duration(reset)
    return headers


def _sampled_reply(req: RecordedRequest) -> Reply | None:
    schema = req.output_schema
    return Reply(output=sample_output(schema)) if schema else None


def main(argv: list | None = None) -> None:
    """Run standalone (echo/default replies only), e.g. so a benchmark client does not share the server's GIL:

    python -m tests.support.llm_server --port 8089 --latency 0.01
    """
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--chunk-delay", type=float, default=0.0)
    ap.add_argument("--chunk-size", type=int, default=4)
    ap.add_argument("--strict", action="store_true")
    ap.add_argument("--no-json-schema", action="store_true", help="answer 400 to json_schema response_format")
    ap.add_argument("--structured", action="store_true", help="answer structured requests with sample_output()")
    args = ap.parse_args(argv)
    srv = LLMServer(
        host=args.host,
        port=args.port,
        latency=args.latency,
        chunk_delay=args.chunk_delay,
        chunk_size=args.chunk_size,
        strict=args.strict,
        json_schema_supported=not args.no_json_schema,
        default=_sampled_reply if args.structured else None,
        record=False,
    )
    print(f"listening on {srv.base_url}  (openai: {srv.openai_base_url})", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        srv.close()


if __name__ == "__main__":
    main()
