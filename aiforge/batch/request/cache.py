"""The response cache at turn level: a turn whose whole context was answered before is served from the store.

The key is ``store.reply_fingerprint`` of the provider name, its endpoint (public URL), the model, the
generation parameters and tool protocol, the turn's full context (system prompt, summary, history, the user
message), the tool specs and the output schema. Tool-call ids in the history are random, so they are
numbered in order before hashing: the same conversation gives the same key in every process.

Only complete, successful turns are stored: an error stores nothing (it raises), and neither a turn stopped
by ``max_tool_iterations``, nor a reply cut by a token limit, nor a refusal, nor a reply whose model call
gave no finish reason (a provider that cannot tell a whole reply from a cut one) is stored. Turns that ran a tool
are never stored: a tool's result may change between runs (``current_time``, a database, a web page), so
replaying it would answer from stale data; such turns run every time. A hit makes no request, costs 0, and
its ``ChatResponse`` says ``cached=True`` with the original cost in ``cached_cost``; nothing reaches the
cost tracker. The trace holds one ``cache`` record with the original tokens and cost.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from aiforge.batch.request.outcome import CACHE_STEP, TurnOutcome
from aiforge.core.output import OutputSpec
from aiforge.core.tokens import TOKEN_LIMIT_FINISH_REASONS
from aiforge.core.types import Message, TraceRecord
from aiforge.core.waits import stamped
from aiforge.store import ResponseCache, reply_fingerprint
from aiforge.store.fingerprint import numbered_tool_ids

if TYPE_CHECKING:
    from aiforge.batch.request.call import AgentRuntime

@dataclass(frozen=True, slots=True)
class TurnKeyBase:
    """What every turn of one agent puts into its cache key besides the messages and the output schema."""

    provider: str
    endpoint: str | None
    model: str
    params: dict[str, Any]
    tools: list[dict[str, Any]]
    image_detail: str = "auto"
    """``IMAGE_DETAIL``: in the key of a turn whose messages carry a file (what its images are sent at)."""

    @classmethod
    def of(
        cls, runtime: AgentRuntime, endpoint: str | None, *, native_tools: bool, image_detail: str = "auto"
    ) -> TurnKeyBase:
        params = runtime.params
        return cls(
            runtime.provider_name,
            endpoint,
            params.model,
            {
                "temperature": params.temperature,
                "max_tokens": params.max_tokens,
                "tool_protocol": "native" if native_tools else "prompted",
            },
            [dict(spec) for spec in runtime.toolset.specs or ()],
            image_detail,
        )

    def scored(self) -> TurnKeyBase:
        """The key base of a turn answered by scoring its labels: never the same entry as a generated answer."""
        return replace(self, params={**self.params, "answered_by": "score_labels"})


@dataclass(slots=True)
class CachedTurn:
    """One turn's cache key and, on a hit, the stored reply as the outcome of the turn."""

    cache: ResponseCache
    key: str
    outcome: TurnOutcome | None

    def store(self, outcome: TurnOutcome, cost: float) -> None:
        """Store ``outcome`` if it is a complete, successful reply that ran no tool (see the module doc)."""
        trace = outcome.trace
        if outcome.tool_results or any(
            r.get("stopped_by_limit") or r.get("refusal") is not None
            or r.get("finish_reason") in TOKEN_LIMIT_FINISH_REASONS or _unfinished(r)
            for r in trace
        ):
            return
        payload = {
            "reply": outcome.reply,
            "model": outcome.model,
            "input_tokens": outcome.input_tokens,
            "output_tokens": outcome.output_tokens,
        }
        if outcome.label_probabilities is not None:  # a scored answer's (``scored``)
            payload.update(confidence=outcome.confidence, label_probabilities=outcome.label_probabilities)
        self.cache.put(self.key, payload, cost=cost)


def _unfinished(record: TraceRecord) -> bool:
    """True for a model call of the reply that did not say why it ended: it may be cut short (a broken stream)."""
    return record.get("step") == "model" and record.get("node") != "summary" and record.get("finish_reason") is None


def with_detail(params: dict[str, Any], image_detail: str, texts: list[str]) -> dict[str, Any]:
    """``params`` with ``image_detail`` when one of ``texts`` carries a file's marker (a text-only prompt keeps the key
    it had before files existed)."""
    from aiforge.core.file_markers import has_markers

    return {**params, "image_detail": image_detail} if any(has_markers(text) for text in texts) else params


def lookup(
    cache: ResponseCache, base: TurnKeyBase, messages: list[Message], spec: OutputSpec | None
) -> CachedTurn:
    """The cache entry of a turn sending ``messages``; ``.outcome`` is set on a hit."""
    started = time.perf_counter()
    key = reply_fingerprint(
        provider=base.provider,
        endpoint=base.endpoint,
        model=base.model,
        params=with_detail(base.params, base.image_detail, [str(m.get("content") or "") for m in messages]),
        messages=numbered_tool_ids(messages),
        tools=base.tools,
        output_schema=None if spec is None else spec.wire_schema,
    )
    entry = cache.entry(key)
    if entry is None:
        return CachedTurn(cache, key, None)
    payload, cost = entry
    reply = payload["reply"]
    outcome = TurnOutcome(
        produced=[{"role": "assistant", "content": reply}],
        reply=reply,
        output=None if spec is None else spec.validate(reply),
        model=payload["model"],
        confidence=payload.get("confidence"),
        label_probabilities=payload.get("label_probabilities"),
        trace=[
            stamped({
                "step": CACHE_STEP, "node": CACHE_STEP, "name": "hit", "model": payload["model"],
                "input_tokens": payload["input_tokens"], "output_tokens": payload["output_tokens"],
                "cost": 0.0, "cached_cost": cost, "latency_ms": (time.perf_counter() - started) * 1000.0,
            }, started)
        ],
    )
    return CachedTurn(cache, key, outcome)
