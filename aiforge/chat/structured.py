"""One turn through the graph, and for ``output=`` the validation of its answer with retries.

Validation lives here once, above the providers: a provider only makes its final answer the JSON
text of ``params.output``. A reply that does not validate goes back to the model with
``OutputSpec.feedback`` and the graph runs again on the extended messages, up to ``retries`` more
times. Failed replies and feedback never reach the history (``TurnOutcome.produced``); they are in
the trace, one ``validation`` record per attempt.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Final

from aiforge.chat.graph import ChatAgentState, run_graph, turn_state
from aiforge.chat.runtime import final_call_truncated
from aiforge.core.errors import OutputRefusedError, OutputValidationError
from aiforge.core.output import OutputSpec
from aiforge.core.tokens import TOKEN_LIMIT_FINISH_REASONS
from aiforge.core.types import Message, ToolResult, TraceRecord
from aiforge.core.waits import stamped

VALIDATION_STEP: Final = "validation"


def output_spec(output: Any) -> OutputSpec | None:
    """The ``OutputSpec`` of an ``output=`` argument (None for None); a ``UsageError`` naming what was given.

    ``OutputSpec.of`` is the one conversion: a spec converted at the entrance (a batch) passes through.
    """
    return None if output is None else OutputSpec.of(output)


@dataclass(slots=True)
class TurnOutcome:
    """What the graph run(s) of one turn produced, summed over the attempts."""

    produced: list[Message] = field(default_factory=list)
    """What the turn adds to history after the user message: tool units and the final reply."""
    reply: str = ""
    output: Any = None
    tool_results: list[ToolResult] = field(default_factory=list)
    trace: list[TraceRecord] = field(default_factory=list)
    iteration: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    model: str = ""
    confidence: float | None = None
    """The answer's probability when the turn was scored (``chat.scored_turn``), not generated."""
    label_probabilities: dict[str, float] | None = None
    """Each label's probability, when the turn was scored."""

    def add_attempt(self, final: ChatAgentState) -> None:
        self.tool_results += final["tool_results"]
        self.trace += final["trace"]
        self.iteration = final["iteration"]
        self.input_tokens += final["total_input_tokens"]
        self.output_tokens += final["total_output_tokens"]
        self.model = final["model"]


async def run_turn(
    graph: Any, state: ChatAgentState, config: dict[str, Any], spec: OutputSpec | None, retries: int
) -> TurnOutcome:
    """Run the graph on ``state``; with ``spec``, validate the answer and retry with feedback.

    Raises ``OutputRefusedError`` when the model refuses (no retry) and ``OutputValidationError``
    when the last of ``1 + retries`` answers still does not validate.
    """
    outcome = TurnOutcome()
    attempt = 0
    while True:
        attempt += 1
        final = await run_graph(graph, state, config)
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
            outcome.trace.append(_validation_record(spec, attempt, reply, error, started))
            attempts = f"after {attempt} attempt{'s' if attempt > 1 else ''}"
            if final_call_truncated(final["trace"], TOKEN_LIMIT_FINISH_REASONS):
                # Asking again at the same limit cuts the answer again: say what to change instead of paying twice.
                raise OutputValidationError(
                    f"{error} (the reply was cut at the token limit, {attempts}; raise MAX_TOKENS for the whole)",
                    raw_text=error.raw_text, errors=error.errors,
                ) from None
            if attempt > retries:
                raise OutputValidationError(
                    f"{error} ({attempts})", raw_text=error.raw_text, errors=error.errors
                ) from None
            # The failed reply is dropped from history, the tool units before it are kept.
            outcome.produced += produced[:-1]
            state = _retry_state(state, final, spec.feedback(error))
            continue
        outcome.trace.append(_validation_record(spec, attempt, reply, None, started))
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
