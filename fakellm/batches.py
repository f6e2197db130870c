"""The OpenAI Files + Batches API and the Anthropic Message Batches API, for ``LLMServer``.

Stdlib only, driven by the unmodified SDKs. Each request of a batch is answered by the server's own
``/v1/chat/completions`` or ``/v1/messages`` (a real HTTP call marked ``x-fake-batch: 1``), so queued
``Reply``/``Fault`` items, ``default`` hooks and structured answers work as for live calls.

    srv.batches.polls = 3               # retrieves spent in_progress (items are answered across them)
    srv.batches.expire_after = 2        # the batch expires once 2 items are answered
    srv.batches.max_requests = 50       # a batch over this fails validation (OpenAI) / is a 400 (Anthropic)
    srv.batches.max_file_bytes = 10_000 # an upload over this is a 400
    srv.batches.calls                   # (method, path) of every Batch API call, in order

Lifecycle. OpenAI: validating (create) -> in_progress -> finalizing -> completed, or expired,
cancelling -> cancelled, failed (over ``max_requests``). Anthropic: in_progress -> ended, or
canceling -> ended. Every retrieve moves a batch one step; cancelling takes effect on the next one.
"""

from __future__ import annotations

import http.client
import itertools
import json
import math
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

_ids = itertools.count(1)


def _id(prefix: str) -> str:
    return f"{prefix}{next(_ids):08d}"


def _iso(stamp: float | None) -> str | None:
    return None if stamp is None else datetime.fromtimestamp(stamp, UTC).isoformat().replace("+00:00", "Z")


@dataclass
class FakeBatch:
    """One batch of either protocol; ``items`` are (custom_id, body), ``results`` by custom_id."""

    id: str
    protocol: str  # "openai" | "anthropic"
    items: list
    input_file_id: str | None = None
    metadata: dict | None = None
    status: str = "validating"
    results: dict = field(default_factory=dict)  # custom_id -> (status code, body)
    stamps: dict = field(default_factory=dict)
    polls_done: int = 0
    cancel_requested: bool = False
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: list | None = None


class BatchAPI:
    """The Batch APIs' state inside one ``LLMServer``; see the module docstring for the knobs."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self.polls = 1
        self.expire_after: int | None = None
        self.max_requests = 50_000
        self.max_file_bytes = 200 * 1024 * 1024
        self.calls: list = []
        self.files: dict = {}  # id -> {"meta": dict, "content": bytes}
        self.batches: dict = {}
        self._lock = threading.RLock()

    def handles(self, path: str) -> bool:
        return path.startswith("/v1/files") or path.startswith("/v1/batches") or path.startswith("/v1/messages/batches")

    # ---- entry point (called by the handler with the raw body)

    def serve(self, handler: Any, method: str, path: str, raw: bytes) -> None:
        with self._lock:
            self.calls.append((method, path))
        anthropic = path.startswith("/v1/messages/batches")
        try:
            status, body, content_type = self._route(handler, method, path, raw)
        except _APIError as exc:
            status, body, content_type = exc.status, _error_body(exc, anthropic), "application/json"
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        rid = _id("req_")
        head = {"Content-Type": content_type, "Content-Length": str(len(data))}
        head["request-id" if anthropic else "x-request-id"] = rid
        handler._send(handler._head(status, head) + data)

    def _route(self, handler: Any, method: str, path: str, raw: bytes) -> tuple:
        parts = path.strip("/").split("/")[1:]  # without "v1"
        if parts[0] == "files":
            if method == "POST" and len(parts) == 1:
                return 200, self._upload(handler.headers.get("Content-Type", ""), raw), "application/json"
            if method == "GET" and len(parts) == 3 and parts[2] == "content":
                file = self._file(parts[1])
                return 200, file["content"], "application/octet-stream"
            if method == "GET" and len(parts) == 2:
                return 200, self._file(parts[1])["meta"], "application/json"
        elif parts[0] == "batches":
            if method == "POST" and len(parts) == 1:
                return 200, self._create_openai(_json(raw)), "application/json"
            batch = self._batch(parts[1], "openai") if len(parts) > 1 else None
            if method == "GET" and len(parts) == 2:
                self._advance(batch)
                return 200, self._openai_view(batch), "application/json"
            if method == "POST" and parts[2:] == ["cancel"]:
                self._cancel(batch)
                return 200, self._openai_view(batch), "application/json"
        elif parts[:2] == ["messages", "batches"]:
            if method == "POST" and len(parts) == 2:
                return 200, self._create_anthropic(_json(raw)), "application/json"
            batch = self._batch(parts[2], "anthropic") if len(parts) > 2 else None
            if method == "GET" and len(parts) == 3:
                self._advance(batch)
                return 200, self._anthropic_view(batch, handler), "application/json"
            if method == "POST" and parts[3:] == ["cancel"]:
                self._cancel(batch)
                return 200, self._anthropic_view(batch, handler), "application/json"
            if method == "GET" and parts[3:] == ["results"]:
                if batch.status != "ended":
                    raise _APIError(400, f"Message Batch {batch.id} has not ended yet.")
                return 200, self._anthropic_results(batch), "application/binary"
        raise _APIError(404, f"Unknown path {path}")

    # ---- files

    def _upload(self, content_type: str, raw: bytes) -> dict:
        message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
        fields = {part.get_param("name", header="content-disposition"): part for part in message.iter_parts()}
        if "file" not in fields or "purpose" not in fields:
            raise _APIError(400, "Missing required parameter: 'file' and 'purpose' are required.")
        purpose = fields["purpose"].get_content().strip()
        content = fields["file"].get_payload(decode=True)
        if purpose != "batch":
            raise _APIError(400, f"Invalid purpose {purpose!r} for this fake: only 'batch'.")
        if len(content) > self.max_file_bytes:
            raise _APIError(400, f"File is too large: {len(content)} bytes, the limit is {self.max_file_bytes}.")
        return self._store_file(content, fields["file"].get_filename() or "upload.jsonl", purpose)

    def _store_file(self, content: bytes, filename: str, purpose: str) -> dict:
        meta = {"id": _id("file-"), "object": "file", "bytes": len(content), "created_at": int(time.time()),
                "filename": filename, "purpose": purpose, "status": "processed"}
        with self._lock:
            self.files[meta["id"]] = {"meta": meta, "content": content}
        return meta

    def _file(self, file_id: str) -> dict:
        with self._lock:
            if file_id not in self.files:
                raise _APIError(404, f"No such File object: {file_id}")
            return self.files[file_id]

    # ---- creating

    def _create_openai(self, body: dict) -> dict:
        if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            raise _APIError(400, "endpoint must be '/v1/chat/completions' and completion_window '24h' here.")
        lines = self._file(body.get("input_file_id", ""))["content"].decode().splitlines()
        items, seen = [], set()
        for number, line in enumerate(filter(None, lines), start=1):
            entry = json.loads(line)
            if entry.get("method") != "POST" or entry.get("url") != "/v1/chat/completions":
                raise _APIError(400, f"line {number}: method must be POST and url /v1/chat/completions")
            if entry["custom_id"] in seen:
                raise _APIError(400, f"line {number}: duplicate custom_id {entry['custom_id']!r}")
            seen.add(entry["custom_id"])
            items.append((entry["custom_id"], entry["body"]))
        batch = FakeBatch(_id("batch_"), "openai", items, body["input_file_id"], body.get("metadata"))
        batch.stamps["created_at"] = time.time()
        if len(items) > self.max_requests:
            batch.status, batch.errors = "failed", [{"code": "too_many_requests", "line": None,
                                                     "message": f"over {self.max_requests} requests"}]
            batch.stamps["failed_at"] = time.time()
        return self._register(batch, self._openai_view)

    def _create_anthropic(self, body: dict) -> dict:
        requests = body.get("requests") or []
        if len(requests) > self.max_requests:
            raise _APIError(400, f"A Message Batch takes at most {self.max_requests} requests.")
        if len(json.dumps(body)) > self.max_file_bytes:
            raise _APIError(413, "Message Batch is too large.")
        items = [(r["custom_id"], r["params"]) for r in requests]
        batch = FakeBatch(_id("msgbatch_"), "anthropic", items, status="in_progress")
        batch.stamps["created_at"] = time.time()
        return self._register(batch, lambda b: self._anthropic_view(b, None))

    def _register(self, batch: FakeBatch, view: Any) -> dict:
        with self._lock:
            self.batches[batch.id] = batch
            return view(batch)

    def _batch(self, batch_id: str, protocol: str) -> FakeBatch:
        with self._lock:
            batch = self.batches.get(batch_id)
        if batch is None or batch.protocol != protocol:
            raise _APIError(404, f"No batch found with id '{batch_id}'.")
        return batch

    # ---- progress

    def _advance(self, batch: FakeBatch) -> None:
        """One retrieve: move ``batch`` a step, answering a share of its items while in progress."""
        with self._lock:
            if batch.status in ("completed", "expired", "cancelled", "failed", "ended"):
                return
            if batch.cancel_requested:
                return self._finish(batch, "cancelled")
            if batch.status == "validating":
                batch.status = "in_progress"
                batch.stamps["in_progress_at"] = time.time()
                return None
            if batch.status == "finalizing":
                return self._finish(batch, "completed")
            batch.polls_done += 1
            share = math.ceil(len(batch.items) / max(self.polls, 1))
            todo = [item for item in batch.items if item[0] not in batch.results][:share]
        for custom_id, body in todo:
            if self.expire_after is not None and len(batch.results) >= self.expire_after:
                return self._finish(batch, "expired")
            batch.results[custom_id] = self._answer(batch.protocol, body)
        if len(batch.results) == len(batch.items):
            if batch.protocol == "openai":
                batch.status = "finalizing"
                batch.stamps["finalizing_at"] = time.time()
            else:
                self._finish(batch, "completed")
        return None

    def _cancel(self, batch: FakeBatch) -> None:
        with self._lock:
            if batch.status in ("completed", "expired", "cancelled", "failed", "ended"):
                raise _APIError(409, f"Cannot cancel a batch with status '{batch.status}'.")
            batch.cancel_requested = True
            batch.status = "cancelling" if batch.protocol == "openai" else "canceling"
            batch.stamps["cancelling_at"] = time.time()

    def _finish(self, batch: FakeBatch, how: str) -> None:
        with self._lock:
            now = time.time()
            batch.stamps[f"{how}_at"] = now
            batch.status = "ended" if batch.protocol == "anthropic" else how
            batch.stamps["ended"] = how
            if batch.protocol == "openai":
                self._write_files(batch, how)

    def _answer(self, protocol: str, body: dict) -> tuple:
        path = "/v1/chat/completions" if protocol == "openai" else "/v1/messages"
        headers = {"Content-Type": "application/json", "x-fake-batch": "1", "authorization": "Bearer batch",
                   "x-api-key": "batch", "anthropic-version": "2023-06-01"}
        conn = http.client.HTTPConnection(self.llm.host, self.llm.port, timeout=30)
        try:
            conn.request("POST", path, json.dumps({**body, "stream": False}), headers)
            response = conn.getresponse()
            return response.status, json.loads(response.read() or b"null")
        finally:
            conn.close()

    # ---- OpenAI views and files

    def _write_files(self, batch: FakeBatch, how: str) -> None:
        out, err = [], []
        for custom_id, _ in batch.items:
            line = {"id": _id("batch_req_"), "custom_id": custom_id, "response": None, "error": None}
            if custom_id in batch.results:
                status, body = batch.results[custom_id]
                line["response"] = {"status_code": status, "request_id": _id("req_"), "body": body}
                (out if status == 200 else err).append(line)
            elif how in ("expired", "cancelled"):
                code = "batch_expired" if how == "expired" else "batch_cancelled"
                message = f"This request could not be executed before the batch was {how}."
                line["error"] = {"code": code, "message": message}
                err.append(line)
        if out:
            batch.output_file_id = self._store_file(_jsonl(out), f"{batch.id}_output.jsonl", "batch_output")["id"]
        if err:
            batch.error_file_id = self._store_file(_jsonl(err), f"{batch.id}_error.jsonl", "batch_output")["id"]

    def _openai_view(self, batch: FakeBatch) -> dict:
        ok = sum(status == 200 for status, _ in batch.results.values())
        stamps = {k: int(v) for k, v in batch.stamps.items() if k.endswith("_at")}
        return {
            "id": batch.id, "object": "batch", "endpoint": "/v1/chat/completions", "errors":
            None if batch.errors is None else {"object": "list", "data": batch.errors},
            "input_file_id": batch.input_file_id, "completion_window": "24h", "status": batch.status,
            "output_file_id": batch.output_file_id, "error_file_id": batch.error_file_id,
            "expires_at": int(batch.stamps["created_at"]) + 86_400, **stamps,
            "request_counts": {"total": len(batch.items), "completed": ok, "failed": len(batch.results) - ok},
            "metadata": batch.metadata,
        }

    # ---- Anthropic views and results

    def _anthropic_view(self, batch: FakeBatch, handler: Any) -> dict:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for custom_id, _ in batch.items:
            counts[self._anthropic_result(batch, custom_id)["type"] if batch.status == "ended" or
                   custom_id in batch.results else "processing"] += 1
        created = batch.stamps["created_at"]
        ended = batch.stamps.get(f"{batch.stamps.get('ended')}_at")
        base = self.llm.base_url
        return {
            "id": batch.id, "type": "message_batch", "processing_status": batch.status, "request_counts": counts,
            "created_at": _iso(created), "expires_at": _iso(created + 86_400), "ended_at": _iso(ended),
            "archived_at": None, "cancel_initiated_at": _iso(batch.stamps.get("cancelling_at")),
            "results_url": f"{base}/v1/messages/batches/{batch.id}/results" if batch.status == "ended" else None,
        }

    def _anthropic_result(self, batch: FakeBatch, custom_id: str) -> dict:
        if custom_id not in batch.results:
            return {"type": "expired" if batch.stamps.get("ended") == "expired" else "canceled"}
        status, body = batch.results[custom_id]
        if status == 200:
            return {"type": "succeeded", "message": body}
        return {"type": "errored", "error": body}

    def _anthropic_results(self, batch: FakeBatch) -> bytes:
        return _jsonl([{"custom_id": cid, "result": self._anthropic_result(batch, cid)} for cid, _ in batch.items])


class _APIError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _error_body(exc: _APIError, anthropic: bool) -> dict:
    if anthropic:
        kind = {404: "not_found_error", 413: "request_too_large"}.get(exc.status, "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": str(exc)}}
    return {"error": {"message": str(exc), "type": "invalid_request_error", "param": None, "code": None}}


def _json(raw: bytes) -> dict:
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise _APIError(400, "We could not parse the JSON body of your request.")
    return body


def _jsonl(lines: list) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)

