"""A scriptable fake LLM HTTP server speaking the OpenAI and Anthropic wire protocols.

``LLMServer`` runs the HTTP server of ``fakellm.handler`` in a background thread on 127.0.0.1 and
holds what the handler threads share: the queue of scripted ``Reply``/``Fault`` items, the recorded
requests and counters (observation), the per-key rate-limit buckets, the Batch APIs' state, and
``close()``, which wakes every sleeping or hanging handler and shuts its connection.

    with LLMServer() as srv:
        srv.enqueue(Reply(text="Paris."))
        client = OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0)

Run standalone with ``python -m fakellm`` (see ``main``).
"""

from __future__ import annotations

import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from fakellm.batches import BatchAPI
from fakellm.handler import _Handler, _HTTPServer
from fakellm.prompt_cache import PromptCache
from fakellm.scripting import Fault, RecordedRequest, Reply, estimate_input_tokens, sample_output


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
      burst:       the requests a key's bucket holds (it starts with them and refills up to them at ``rpm`` per
                   window), as a server that smooths its limit allows only a few requests at once; None = ``rpm``
      rate_window: the limits' "minute" in seconds (tests shrink it)
      rate_headers: send the protocol's rate-limit headers (limit/remaining/reset) on every answer
                   while a limit is set
      embedder:    callable(text) -> list of floats, the vectors of ``/v1/embeddings``; None = hashed words and
                   trigrams (``fakellm.embeddings``). An embeddings request takes a queued ``Fault`` at the head of
                   the queue (and answers with it), never a ``Reply``.
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
        burst: int | None = None,
        rate_window: float = 60.0,
        rate_headers: bool = True,
        embedder: Callable[[str], Any] | None = None,
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
        self.burst = burst
        self.rate_window = rate_window
        self.rate_headers = rate_headers
        self.embedder = embedder
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
        self.prompt_cache = PromptCache()  # Anthropic's cache_control, billed as the API bills it
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

    def _next_fault(self) -> Fault | None:
        """The queued ``Fault`` at the head of the queue, taken; None (and nothing taken) when the head is a Reply."""
        with self._lock:
            if self._queue and isinstance(self._queue[0], Fault):
                return self._queue.popleft()
        return None

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


def _capacity(llm: LLMServer, kind: str, limit: int) -> float:
    """What a bucket holds: ``burst`` requests when set, else a window's limit."""
    return float(llm.burst) if kind == "requests" and llm.burst else float(limit)


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
            capacity = _capacity(llm, kind, limit)
            bucket = llm._buckets.setdefault((key, kind), [capacity, now])
            bucket[0] = min(capacity, bucket[0] + (now - bucket[1]) * limit / llm.rate_window)
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
        capacity = _capacity(llm, kind, limit)
        with llm._lock:
            level, stamp = llm._buckets.get((key, kind), (capacity, now))
        level = min(capacity, level + (now - stamp) * limit / llm.rate_window)
        reset = (capacity - level) * llm.rate_window / limit
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

    python -m fakellm --port 8089 --latency 0.01
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
