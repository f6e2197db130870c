"""What a test scripts and what it observes: Reply, Fault, ToolCallSpec, RecordedRequest.

``LLMServer.enqueue()`` takes ``Reply``/``Fault`` items (one FIFO queue shared by both protocols),
``LLMServer.default`` returns one for a ``RecordedRequest`` when the queue is empty, and every
request is recorded as a ``RecordedRequest`` (``LLMServer.requests``). ``estimate_input_tokens``
is the deterministic token count the server reports and rate-limits on; ``sample_output`` makes a
small valid answer for a JSON schema. Each protocol module renders a Reply in its own wire shape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from fakellm.embeddings import input_tokens
from fakellm.file_blocks import file_tokens
from fakellm.wire import _ENCODER

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
    # OpenAI: the service_tier the answer says served it; None answers the tier asked for ("auto" -> "default").
    service_tier: str | None = None
    # OpenAI token log-probabilities, sent when the request has logprobs=true (else null; also null when this is
    # None, like a server that ignores logprobs): per answer token a {token: logprob} dict, the first key the token
    # sent, every key a candidate of its top_logprobs (the request's count of the likeliest).
    logprobs: list[dict[str, float]] | None = None

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
    """input tokens = (chars of all message contents + system) // 4 + 1, plus the images' and documents' tokens by
    the vendors' published rules (``file_blocks.file_tokens``); an embeddings request's, its inputs'."""
    if not isinstance(body, dict):
        return 1
    if "input" in body and "messages" not in body:
        return sum(input_tokens(body["input"]))
    return (_chars(body.get("messages")) + _chars(body.get("system"))) // 4 + 1 + file_tokens(body)


_SAMPLE_STRINGS = {"date-time": "2024-01-01T00:00:00Z", "date": "2024-01-01", "time": "00:00:00", "email": "a@b.co"}


def sample_output(schema: dict, defs: dict | None = None) -> Any:
    """A small value that satisfies ``schema`` (first enum value, lowest allowed number, an array of choices
    distinct, ...).

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
        items, count = schema.get("items") or {}, schema.get("minItems") or 0
        choices = (defs.get(items["$ref"].rsplit("/", 1)[-1], {}) if "$ref" in items else items).get("enum") or []
        if len(choices) >= count > 1:  # distinct values where the items are a choice (a ranking's ids, say)
            return list(choices[:count])
        return [sample_output(items, defs) for _ in range(count)]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1)
        return int(low) if kind == "integer" else float(low)
    if kind == "string":
        return _SAMPLE_STRINGS.get(schema.get("format"), "x" * (schema.get("minLength") or 1))
    return {"boolean": True, "null": None}.get(kind, {})
