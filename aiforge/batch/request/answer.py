"""One turn's answer: the response cache, a label row scored, or the model asked, with ``output=`` validated and
retried with feedback; and a batch row of an agent without tools answered whole (``request_item``).

Validation lives here once, above the providers: a provider only makes its final answer the JSON text of
``params.output``. A reply that does not validate goes back to the model with ``OutputSpec.feedback`` and the
attempt runs again on the extended messages, up to ``retries`` more times. Failed replies and feedback never reach
the history (``TurnOutcome.produced``); they are in the trace, one ``validation`` record per attempt. An attempt is
the chat graph's run for a chat turn (its tools on the LangGraph loop), and ``model_step`` alone for a batch row of
an agent without tools.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, TypeVar

from aiforge.batch.request.cache import lookup
from aiforge.batch.request.call import (
    AgentRuntime,
    ChatAgentState,
    Turn,
    final_call_truncated,
    folded,
    model_step,
    new_conversation_id,
    turn_state,
)
from aiforge.batch.request.outcome import TurnOutcome, response_fields
from aiforge.batch.request.scored import scored_outcome
from aiforge.core import otel
from aiforge.core.errors import OutputRefusedError, OutputValidationError, ProviderError
from aiforge.core.output import OutputSpec
from aiforge.core.tokens import TOKEN_LIMIT_FINISH_REASONS
from aiforge.core.types import Message, TraceRecord, UsageError
from aiforge.core.waits import stamped
from aiforge.store.log import LogEntry

if TYPE_CHECKING:
    from aiforge.batch.request.cache import TurnKeyBase
    from aiforge.providers.base import Provider
    from aiforge.store import ResponseCache
    from aiforge.store.log import TurnLog

VALIDATION_STEP: Final = "validation"

Attempt = Callable[[ChatAgentState], Awaitable[ChatAgentState]]
"""One run of a turn over a state: its final state (the chat graph's run, or ``model_step`` alone)."""

_Result = TypeVar("_Result")


def output_spec(output: Any) -> OutputSpec | None:
    """The ``OutputSpec`` of an ``output=`` argument (None for None); a ``UsageError`` naming what was given.

    ``OutputSpec.of`` is the one conversion: a spec converted at the entrance (a batch) passes through.
    """
    return None if output is None else OutputSpec.of(output)


def checked_message(message: Any) -> str:
    """``message`` if it is non-blank text that can be sent as UTF-8; a UsageError saying why not otherwise."""
    if not isinstance(message, str):
        raise UsageError(f"message must be a str, got {type(message).__name__}")
    if not message.strip():
        raise UsageError("message must not be empty or whitespace-only")
    try:
        message.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError(
            f"message contains {message[exc.start]!r} at position {exc.start}, a lone surrogate that "
            "cannot be sent as UTF-8 (text decoded with errors='surrogateescape'?)"
        ) from None
    return message


async def in_agent_span(
    runtime: AgentRuntime, spec: OutputSpec | None, conversation_id: str, message: str,
    run: Callable[[], Awaitable[_Result]],
) -> _Result:
    """``run()``, the whole turn; with ``OTEL=True`` inside an ``invoke_agent`` span (``core.otel``), a hit included."""
    telemetry = runtime.telemetry
    if telemetry is None:
        return await run()
    params = replace(runtime.params, output=spec)
    user: list[Message] = [{"role": "user", "content": message}]
    with otel.agent_scope(telemetry, params, conversation_id=conversation_id, messages=user) as span:
        response = await run()
        otel.end_turn(span, telemetry, response)
    return response


@dataclass(frozen=True, slots=True)
class TurnPlan:
    """What every turn of one agent is answered with besides its messages and attempt: built once, with the agent."""

    key_base: TurnKeyBase
    provider: Provider
    """The agent's own provider (its ``score_labels``), not the graph's view of it."""
    model: str
    max_tool_iterations: int
    retries: int
    """``output_retries``: how many more answers a reply that does not validate may have."""


async def answer_turn(
    turn: Turn, plan: TurnPlan, messages: list[Message], spec: OutputSpec | None, attempt: Attempt, *,
    cache: ResponseCache | None, labels: Mapping[str, Any] | None,
) -> TurnOutcome:
    """The outcome of sending ``messages`` (the last one the user's): the cache's, a scored one, or ``attempt``'s."""
    key_base = plan.key_base if labels is None else plan.key_base.scored()
    cached = None if cache is None else lookup(cache, key_base, messages, spec)
    if cached is not None and cached.outcome is not None:
        turn.emit_text(cached.outcome.reply)
        return cached.outcome
    if labels is not None:
        outcome = await scored_outcome(turn, plan.provider, messages, labels)
    else:
        state = turn_state(
            messages, current_input=str(messages[-1]["content"]), max_tool_iterations=plan.max_tool_iterations,
            model=plan.model,
        )
        outcome = await run_turn(attempt, state, spec, plan.retries)
    if cached is not None:
        cached.store(outcome, turn.cost)
    return outcome


async def run_turn(attempt: Attempt, state: ChatAgentState, spec: OutputSpec | None, retries: int) -> TurnOutcome:
    """Run ``attempt`` on ``state``; with ``spec``, validate the answer and retry with feedback.

    Raises ``OutputRefusedError`` when the model refuses (no retry) and ``OutputValidationError``
    when the last of ``1 + retries`` answers still does not validate.
    """
    outcome = TurnOutcome()
    number = 0
    while True:
        number += 1
        final = await attempt(state)
        produced: list[Message] = final["messages"][len(state["messages"]) :]
        outcome.add_attempt(final)
        reply = produced[-1]["content"] if produced else ""
        if spec is None:
            outcome.produced, outcome.reply = produced, reply
            return outcome
        refusal = _refusal(final["trace"])
        if refusal is not None:
            raise OutputRefusedError(refusal)
        started = time.perf_counter()
        try:
            value = spec.validate(reply)
        except OutputValidationError as error:
            outcome.trace.append(_validation_record(spec, number, reply, error, started))
            attempts = f"after {number} attempt{'s' if number > 1 else ''}"
            if final_call_truncated(final["trace"], TOKEN_LIMIT_FINISH_REASONS):
                # Asking again at the same limit cuts the answer again: say what to change instead of paying twice.
                raise OutputValidationError(
                    f"{error} (the reply was cut at the token limit, {attempts}; raise MAX_TOKENS for the whole)",
                    raw_text=error.raw_text, errors=error.errors,
                ) from None
            if number > retries:
                raise OutputValidationError(
                    f"{error} ({attempts})", raw_text=error.raw_text, errors=error.errors
                ) from None
            # The failed reply is dropped from history, the tool units before it are kept.
            outcome.produced += produced[:-1]
            state = _retry_state(state, final, spec.feedback(error))
            continue
        outcome.trace.append(_validation_record(spec, number, reply, None, started))
        outcome.produced += produced
        outcome.reply, outcome.output = reply, value
        return outcome


def _refusal(trace: list[TraceRecord]) -> str | None:
    last_model_step = next((r for r in reversed(trace) if r["step"] == "model"), None)
    return None if last_model_step is None else last_model_step.get("refusal")


def _retry_state(state: ChatAgentState, final: ChatAgentState, feedback: str) -> ChatAgentState:
    # The tool budget is the turn's, not the attempt's: the iteration count carries over.
    return turn_state(
        [*final["messages"], {"role": "user", "content": feedback}],
        current_input=state["current_input"],
        max_tool_iterations=state["max_tool_iterations"],
        model=state["model"],
        iteration=final["iteration"],
    )


def _validation_record(
    spec: OutputSpec, attempt: int, reply: str, error: OutputValidationError | None, started: float
) -> TraceRecord:
    record: TraceRecord = {
        "step": VALIDATION_STEP, "node": "validate", "name": spec.name, "attempt": attempt,
        "output": reply, "error": str(error) if error else None,
        "errors": error.errors if error else [],
        "latency_ms": (time.perf_counter() - started) * 1000.0,
    }
    return stamped(record, started)


@dataclass(frozen=True, slots=True)
class ItemRequest:
    """What a batch row of an agent without tools is answered with, here, from the worker pool to the provider."""

    runtime: AgentRuntime
    plan: TurnPlan
    system_prompt: str
    memory_mode: str
    result_type: Callable[..., Any]
    """The row's result built from ``response_fields`` (``ChatResponse``)."""
    log: TurnLog | None
    """The call log a row is written to (kind ``batch``), None when off."""
    on_result: Callable[[Any], None]
    """Given each row's result (the agent's ``last_response`` is set, as a turn's)."""


async def request_item(
    request: ItemRequest, text: str, *, output: Any, cache: ResponseCache | None, labels: Mapping[str, Any] | None
) -> Any:
    """One batch row in a conversation of its own: system prompt and ``text``, one model call (or a hit, or scored)."""
    checked_message(text)
    spec = output_spec(output)
    conversation_id = new_conversation_id()
    answer = functools.partial(_item, request, conversation_id, text, spec, cache, labels)
    return await in_agent_span(request.runtime, spec, conversation_id, text, answer)


async def _item(
    request: ItemRequest, conversation_id: str, text: str, spec: OutputSpec | None, cache: ResponseCache | None,
    labels: Mapping[str, Any] | None,
) -> Any:
    started = time.perf_counter()
    runtime = request.runtime
    turn = Turn(runtime, conversation_id, None, params=replace(runtime.params, output=spec) if spec else None)
    sent: list[Message] = [{"role": "system", "content": request.system_prompt}, {"role": "user", "content": text}]
    step = functools.partial(_route, turn)
    outcome = await answer_turn(turn, request.plan, sent, spec, step, cache=cache, labels=labels)
    fields = response_fields(outcome, turn, started, conversation_id=conversation_id, memory_mode=request.memory_mode)
    result = request.result_type(**fields)
    if request.log is not None:
        request.log.record(LogEntry.of_turn(result, sent, outcome.produced, session=None, kind="batch"))
    request.on_result(result)
    return result


async def _route(turn: Turn, state: ChatAgentState) -> ChatAgentState:
    """The graph's ``route`` step without the graph: a turn that offers no tools ends with its one reply."""
    update, _ = await model_step(turn, state, "route")
    if update["tool_calls"]:
        names = ", ".join(sorted({call["name"] for call in update["tool_calls"]}))
        raise ProviderError(
            f"provider {turn.runtime.provider_name!r} asked for tools ({names}) the agent does not have; "
            "give the agent tools= to run them"
        )
    return folded(state, update)
