"""The Anthropic Messages wire protocol: strict checks, answers and SSE events.

``POST /v1/messages`` (and ``/v1/messages/count_tokens``, answered by the handler):
``_validate_anthropic`` rejects what the real API rejects (in strict mode: system roles, repeated
roles, orphan tool_use / tool_result blocks, ``tool_choice``, ``output_config`` schemas), and
``AnthropicWire._anthropic`` renders a ``Reply`` as a ``message`` or as the event stream
message_start, content_block_start/delta/stop, message_delta, message_stop. The error body shape
(``{"type": "error", ...}``) is written by the handler with the table here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fakellm.file_blocks import validate_anthropic_blocks
from fakellm.scripting import RecordedRequest, Reply
from fakellm.wire import _dumps, _Invalid, _new_id, _pieces

_TO_ANTHROPIC_STOP = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
    "function_call": "tool_use",
}

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


# --------------------------------------------------------------------------- strict validation
# Messages mimic the real APIs' wording so tests can match on the same substrings.


def _anthropic_unanswered(i: int, ids: list) -> _Invalid:
    return _Invalid(
        f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
        f"{', '.join(ids)}. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
    )


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
    validate_anthropic_blocks(msgs)
    _validate_tool_choice(body)
    _validate_output_config(body)


# --------------------------------------------------------------------------- structured output checks
# Anthropic's subset of JSON Schema is the one its SDK's transform_schema() produces.

_ANTHROPIC_SCHEMA_KEYWORDS = frozenset(
    "type properties required additionalProperties items anyOf allOf enum const $ref $defs description title "
    "format minItems".split()
)


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


class AnthropicWire:
    """The Messages half of the request handler (mixed into ``fakellm.handler._Handler``)."""

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
