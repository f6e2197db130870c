"""The HTTP side of ``LLMServer``: the threaded server and its per-connection request handler.

``_Handler`` reads a request, records it, routes it (Batch APIs to ``fakellm.batches``, count_tokens,
strict validation, rate limits), takes the next scripted item and answers with a ``Fault`` or with the
protocol's rendering of a ``Reply`` (``OpenAIWire`` / ``AnthropicWire``), streamed by ``_stream``.

* ThreadingHTTPServer + HTTP/1.1 keep-alive: one thread per connection, so SDK
  connection pools reuse sockets and concurrent requests really overlap.
* Responses are written with a single ``sendall`` (headers + body, or the whole
  SSE stream when ``chunk_delay == 0``) and TCP_NODELAY is set, to avoid
  Nagle/delayed-ACK stalls and keep per-request overhead low for benchmarks.
* Every wait (latency, chunk delay, hang) is interruptible, and the server's ``close()``
  shuts down all open sockets, so closing never waits for hanging requests.
"""

from __future__ import annotations

import http
import json
import select
import socket
import sys
import threading
import time
import traceback
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fakellm.anthropic_wire import _ANTHROPIC_ERROR_TYPES, AnthropicWire, _validate_anthropic
from fakellm.embeddings import embedding_texts, embeddings_response, validate_embeddings
from fakellm.openai_wire import _OPENAI_ERROR_CODES, _OPENAI_ERROR_TYPES, OpenAIWire, _validate_openai
from fakellm.scripting import Fault, RecordedRequest, Reply, estimate_input_tokens
from fakellm.wire import _LAST_CHUNK, _chunk, _dumps, _Invalid, _new_id


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # close() joins handler threads itself, with a timeout
    request_queue_size = 1024  # the default listen backlog (5) drops SYNs under load-test bursts
    llm: Any
    """The ``fakellm.server.LLMServer`` it serves (set by the server, which imports this module: not the reverse)."""

    def handle_error(self, request, client_address):  # pragma: no cover - diagnostics only
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError) or self.llm._stopping.is_set():
            return  # clients going away is normal for a fault-injection server
        traceback.print_exc()


class _Handler(OpenAIWire, AnthropicWire, BaseHTTPRequestHandler):
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

    def _answered_now(self) -> None:
        """The request is no longer in flight (``max_in_flight``), once: called just before its last bytes go out.

        Ending it only after they went out would let a client that reads the answer and sends its next request
        at once be counted twice when this thread is descheduled in between (a busy machine), although the
        client never had two requests open.
        """
        if not getattr(self, "_answered", True):
            self._answered = True
            self.server.llm._end()

    def _send_last(self, data: bytes) -> None:
        """Send the last bytes of the answer, the request ended first (``_answered_now``)."""
        self._answered_now()
        self._send(data)

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
            self._send_last(head + body)

    # ---- request entry point

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if self.server.llm.batches.handles(path):
            return self.server.llm.batches.serve(self, "GET", path, b"")
        self._send_last(self._head(404, {"Content-Length": "0"}))

    def do_POST(self):
        llm = self.server.llm
        path = self.path.split("?", 1)[0]
        if llm.batches.handles(path):  # the Batch APIs: fakellm/batches.py
            length = int(self.headers.get("Content-Length") or 0)
            return llm.batches.serve(self, "POST", path, self.rfile.read(length) if length else b"")
        if path.endswith("/chat/completions") or path.endswith("/embeddings"):
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
        self._answered = False
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
            self._answered_now()

    def _serve(self, req: RecordedRequest, protocol: str | None, path: str) -> None:
        llm = self.server.llm
        if protocol is None:
            return self._error(req, 404, f"Unknown path {path}", {}, proto="openai")
        if not isinstance(req.body, dict):
            return self._error(req, 400, "We could not parse the JSON body of your request.", {})
        if path.endswith("/embeddings"):
            return self._embeddings(req)
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
                return self._error(req, exc.status, str(exc), {}, param=exc.param, code=exc.code)
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

    # ---- embeddings (fakellm/embeddings.py)

    def _embeddings(self, req: RecordedRequest) -> None:
        """Answer ``POST /v1/embeddings``: strict checks, rate limits, a queued ``Fault`` at the head, latency."""
        llm = self.server.llm
        try:
            if llm.strict:
                validate_embeddings(req.body)
            elif embedding_texts(req.body.get("input")) is None:
                raise _Invalid("'$.input' is invalid.", param="input")
        except _Invalid as exc:
            return self._error(req, 400, str(exc), {}, param=exc.param)
        limited = llm._rate_limit(req)
        if limited is not None:
            return self._error(req, 429, limited[0], limited[1], code="rate_limit_exceeded")
        fault = llm._next_fault()
        latency = llm.latency() if callable(llm.latency) else llm.latency
        if not self._wait((latency or 0) + (fault.delay if fault is not None else 0.0)):
            return self._kill()
        if fault is not None:
            req.response = fault
            return self._fault(req, fault)
        headers = {"x-request-id": _new_id("req_"), "openai-processing-ms": "1"}
        if llm.rate_headers:
            headers.update(llm.rate_headers_for(req))
        req.status = 200
        self._respond_json(200, embeddings_response(req.body, llm.embedder), headers)

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
        if req.protocol == "anthropic" and not (cached or created or {"cached_tokens", "cache_read_input_tokens",
                                                                      "cache_creation_input_tokens"} & set(u)):
            cached, created = self.server.llm.prompt_cache.usage(req.body, inp, req.time)
        return inp, out, cached, created

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
            send = self._send_last if action == "end" else self._send
            send(head + b"".join(frames) + tail)  # one syscall for the whole stream
        else:
            self._send(head)
            for i, frame in enumerate(frames):
                if i and not self._wait(delay):
                    return self._kill()
                # the terminator rides with the last frame so clients can reuse the connection at once
                last = i == len(frames) - 1
                (self._send_last if last and action == "end" else self._send)(frame + tail if last else frame)
            if not frames:
                (self._send_last if action == "end" else self._send)(tail)
        if action == "drop":
            self._kill()
        elif action == "hang":
            self._hang()
