"""A fake OpenAI + Anthropic HTTP server on 127.0.0.1 that speaks the real wire protocols, for tests and benchmarks.

Stdlib only. It is meant to be driven by the *unmodified* official SDKs, so the
JSON shapes, SSE framing, status codes and headers follow the real APIs closely
enough for the SDKs' parsers, stream helpers and error mapping to work.

    with LLMServer() as srv:
        srv.enqueue(Reply(text="Paris."))
        client = OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0)

Endpoints: ``POST /v1/chat/completions``, ``POST /v1/embeddings``, ``POST /v1/messages`` and
``POST /v1/messages/count_tokens``, plus the Batch APIs (OpenAI ``/v1/files`` and
``/v1/batches``, Anthropic ``/v1/messages/batches``).  One FIFO queue of ``Reply``/``Fault`` items
is shared by both protocols; when it is empty ``srv.default(request)`` is asked,
and if that is unset (or returns None) the reply is ``"echo: <last user text>"``.

Modules, by idea and protocol:
* ``scripting``: Reply, Fault, ToolCallSpec, RecordedRequest, estimate_input_tokens, sample_output
* ``openai_wire`` / ``anthropic_wire``: each protocol's strict checks, answers and SSE events
* ``embeddings``: OpenAI's ``/v1/embeddings`` (strict checks, deterministic vectors, float or base64)
* ``file_blocks``: image and document inputs (OpenAI ``image_url`` / ``file`` parts, Anthropic ``image`` / ``document``
  blocks): the vendors' checks and limits in strict mode, and their input tokens by the published rules in ``usage``
* ``wire``: the encoding both share (compact JSON, chunked frames, ids)
* ``handler``: the threaded HTTP server and request handler (routing, faults, streaming)
* ``server``: ``LLMServer`` (lifecycle, scripting queue, observation, rate limits) and its command line
* ``batches``: the OpenAI Files + Batches and Anthropic Message Batches APIs (``srv.batches``)
* ``prompt_cache``: Anthropic's prompt cache, cache writes and reads for ``cache_control`` (``srv.prompt_cache``)

Not part of aiforge: the wheel ships ``aiforge`` only. It lives at the top of the repository so that
``tests/`` and ``bench/`` both import it.
"""

from fakellm.scripting import Fault, RecordedRequest, Reply, ToolCallSpec, estimate_input_tokens, sample_output
from fakellm.server import LLMServer

__all__ = [
    "LLMServer",
    "Reply",
    "Fault",
    "ToolCallSpec",
    "RecordedRequest",
    "estimate_input_tokens",
    "sample_output",
]
