"""One decoding on the embedded engine: the request's state shared by llama.cpp's worker thread and the event loop
(``DecodingRun``), its text deltas streamed to the loop (``decode``), the ``Completion`` it ends with
(``completion``), and an engine error as aiforge's (``engine_error``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncGenerator
from typing import Any

from aiforge.core.tokens import LOOP_FINISH_REASON
from aiforge.core.types import BadRequestError, Completion, ContextWindowExceededError, ProviderError, ToolCall, Usage
from aiforge.core.waits import waited
from aiforge.providers.local.engine import LocalEngine
from aiforge.providers.local.loops import LoopGuard


class DecodingRun:
    """One request: written by the worker thread's callback, read on the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.deltas: asyncio.Queue[str | None] = asyncio.Queue()
        self.stop = threading.Event()
        self.usage = Usage()
        self.finish_reason: str | None = None
        self.error: dict[str, Any] | None = None
        self.chunks = 0  # about one token each; the usage count when decoding was stopped before it

    def on_chunk(self, chunk: dict[str, Any]) -> bool:
        if "error" in chunk:
            self.error = chunk["error"] if isinstance(chunk["error"], dict) else {"message": str(chunk["error"])}
            return True
        for choice in chunk.get("choices") or ():
            content = (choice.get("delta") or {}).get("content")
            if content:
                self.chunks += 1
                self.loop.call_soon_threadsafe(self.deltas.put_nowait, content)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        usage = chunk.get("usage")
        if usage:
            self.usage = Usage(
                input_tokens=usage.get("prompt_tokens", 0),
                output_tokens=usage.get("completion_tokens", 0),
                cached_input_tokens=(usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0),
            )
        return self.stop.is_set()

    def final_usage(self) -> Usage:
        """The engine's usage, or the chunks counted when decoding stopped before it was sent."""
        return self.usage if self.usage.output_tokens else Usage(output_tokens=self.chunks)


async def decode(engine: LocalEngine, run: DecodingRun, request: dict[str, Any]) -> AsyncGenerator[str, None]:
    """Yield the raw text deltas of one request as ``engine``'s worker thread decodes them."""
    queued = time.perf_counter()
    started: list[float] = []

    def generate() -> None:
        started.append(time.perf_counter())  # the engine's slot is free: the wait in its queue ends
        engine.generate(request, run.on_chunk)

    future = run.loop.run_in_executor(engine.executor, generate)
    future.add_done_callback(lambda _: run.deltas.put_nowait(None))
    try:
        while (delta := await run.deltas.get()) is not None:
            yield delta
        await future
    finally:
        # The consumer stopped early (closed, cancelled or failed): stop decoding for nobody.
        run.stop.set()
        future.cancel()
        waited((started[0] if started else time.perf_counter()) - queued, "engine", since=queued)  # queue_ms
    if run.error is not None:
        raise engine_error(run.error, engine.context_size)


def engine_error(error: dict[str, Any], context_size: int) -> ProviderError:
    """An error the engine reported as aiforge's: a request over the context window names the setting to raise."""
    message = str(error.get("message") or error)
    status = error.get("code")
    if error.get("type") == "exceed_context_size_error":
        message += (
            f"; raise LOCAL_CONTEXT_SIZE (now {context_size}, env AIFORGE_LOCAL_CONTEXT_SIZE "
            "or aiforge.yaml) or keep less history"
        )
        window, tokens = error.get("n_ctx"), error.get("n_prompt_tokens")
        return ContextWindowExceededError(
            f"the embedded model failed: {message}",
            provider="local",
            status_code=status,
            body=error,
            context_window=window if isinstance(window, int) else context_size,
            prompt_tokens=tokens if isinstance(tokens, int) else None,
        )
    cls = BadRequestError if status in (400, 422) else ProviderError
    return cls(f"the embedded model failed: {message}", provider="local", status_code=status, body=error)


def completion(
    run: DecodingRun, text: str, tool_calls: list[ToolCall], usage: Usage, guard: LoopGuard, model: str
) -> Completion:
    """The ``Completion`` of a decoding by ``model``: its calls, else its text as far as the loop guard let it show."""
    finish = "tool_calls" if tool_calls else LOOP_FINISH_REASON if guard.cut else run.finish_reason
    return Completion(
        text=guard.text if guard.cut and not tool_calls else text,
        tool_calls=tool_calls,
        usage=usage,
        model=model,
        finish_reason=finish,
    )
