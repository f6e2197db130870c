"""The OpenAI Chat Completions wire protocol: strict checks, answers and SSE chunks.

``POST /v1/chat/completions``: ``_validate_openai`` rejects what the real API rejects (in strict
mode), ``_validate_response_format`` checks ``response_format`` (json_object, json_schema and its
strict subset of JSON Schema), and ``OpenAIWire._openai`` renders a ``Reply`` as a
``chat.completion`` or as a stream of ``chat.completion.chunk`` events ending in ``data: [DONE]``.
The error body shape (``{"error": {...}}``) is written by the handler with the tables here.
"""

from __future__ import annotations

import json
import time
from typing import Any

from fakellm.file_blocks import validate_openai_parts
from fakellm.scripting import RecordedRequest, Reply, _text_of
from fakellm.wire import _dumps, _Invalid, _new_id, _pieces

_TO_OPENAI_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
    "pause_turn": "stop",
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
_SERVED_TIERS = {"flex": "flex", "priority": "priority"}


# What OpenAI sends as an SSE `data:` line when generation fails mid-stream.
_OPENAI_STREAM_ERROR = {
    "error": {
        "message": "The server had an error while processing your request. Sorry about that!",
        "type": "server_error",
        "param": None,
        "code": None,
    }
}


# --------------------------------------------------------------------------- strict validation
# Messages mimic the real APIs' wording so tests can match on the same substrings.


def _openai_unanswered(ids: list) -> _Invalid:
    return _Invalid(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        "'tool_call_id'. The following tool_call_ids did not have response messages: " + ", ".join(ids)
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
    validate_openai_parts(msgs)
    top = body.get("top_logprobs")
    if top is not None and (not isinstance(top, int) or not 0 <= top <= 20):
        raise _Invalid(f"Invalid 'top_logprobs': expected an integer between 0 and 20, got {top!r}.", "top_logprobs")
    if top and not body.get("logprobs"):
        raise _Invalid("'logprobs' must be set to true when 'top_logprobs' is used.", "top_logprobs")
    _validate_response_format(body)


# --------------------------------------------------------------------------- structured output checks
# OpenAI strict mode accepts a documented subset of JSON Schema (Structured Outputs guide, "Supported
# schemas").

_OPENAI_STRICT_KEYWORDS = frozenset(
    "type properties required additionalProperties items anyOf enum const $ref $defs description title "
    "pattern format minimum maximum exclusiveMinimum exclusiveMaximum multipleOf minItems maxItems".split()
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


def _logprobs(reply: Reply, body: dict) -> dict | None:
    """The choice's ``logprobs`` (``ChoiceLogprobs``) for a request that asked for them and a reply scripting them."""
    if not body.get("logprobs") or reply.logprobs is None:
        return None

    def token(text: str, logprob: float) -> dict:
        return {"token": text, "logprob": logprob, "bytes": list(text.encode())}

    content = []
    for candidates in reply.logprobs:
        sent = next(iter(candidates.items()))
        likeliest = sorted(candidates.items(), key=lambda item: -item[1])[: body.get("top_logprobs") or 0]
        content.append({**token(*sent), "top_logprobs": [token(*item) for item in likeliest]})
    return {"content": content, "refusal": None}


class OpenAIWire:
    """The Chat Completions half of the request handler (mixed into ``fakellm.handler._Handler``)."""

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
        # The tier that served the call: the one asked for, "auto" resolving to "default" (no Scale Tier here).
        tier = reply.service_tier or _SERVED_TIERS.get(body.get("service_tier"), "default")
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
                "choices": [
                    {"index": 0, "message": message, "logprobs": _logprobs(reply, body), "finish_reason": finish}
                ],
                "usage": usage,
                "service_tier": tier,
                "system_fingerprint": None,
            }
            return self._respond_json(200, resp, headers, partial=reply.drop_after_chunks is not None)

        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        base = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "service_tier": tier,
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
