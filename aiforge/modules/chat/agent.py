"""The LangGraph agent loop: ``route`` -> ``execute_tool`` -> ``process_result``.

The graph is compiled once per agent. Nodes are small functions over ``ChatAgentState``; what
changes per turn (provider call mode, streaming sink, trace ids) travels in a ``Turn`` object
passed through the run config, so one compiled graph serves every turn and every conversation.
"""

from __future__ import annotations

import asyncio
import json
import operator
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig

from aiforge.core.costs import CostTracker
from aiforge.core.render import replace_lone_surrogates
from aiforge.core.types import CallParams, Completion, Message, ToolCall, ToolSpec, Usage, new_tool_call
from aiforge.modules.chat.prompts import TOOL_LIMIT_MESSAGE, TOOL_LIMIT_RESULT
from aiforge.providers.base import Provider

if TYPE_CHECKING:
    from langgraph.types import Command


class ChatAgentState(TypedDict):
    messages: list[dict[str, Any]]  # conversation history sent to the model
    current_input: str  # current user message
    tool_calls: list[dict[str, Any]]  # pending tool invocations
    tool_results: Annotated[list[dict[str, Any]], operator.add]  # accumulated tool results
    iteration: int  # tool-loop counter
    max_tool_iterations: int  # safety cap
    trace: Annotated[list[dict[str, Any]], operator.add]  # execution trace log
    total_input_tokens: Annotated[int, operator.add]
    total_output_tokens: Annotated[int, operator.add]
    model: str


# ---------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------


def tool_spec(tool: Any) -> ToolSpec:
    """Name, description and JSON argument schema of a LangChain-compatible tool."""
    schema: dict[str, Any] | None = None
    args_schema = getattr(tool, "tool_call_schema", None) or getattr(tool, "args_schema", None)
    if isinstance(args_schema, dict):
        schema = dict(args_schema)
    elif args_schema is not None and hasattr(args_schema, "model_json_schema"):
        schema = args_schema.model_json_schema()
    if not schema:
        schema = {"type": "object", "properties": {}, "additionalProperties": True}
    schema.pop("title", None)
    schema.pop("description", None)
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return {"name": str(tool.name), "description": str(tool.description or tool.name), "parameters": schema}


def _stringify(value: Any) -> str:
    return replace_lone_surrogates(_as_text(value))


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    content = getattr(value, "content", None)  # a ToolMessage or similar
    if isinstance(content, str):
        return content
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def required_arguments(spec: ToolSpec) -> frozenset[str]:
    """Names the tool's schema marks as required."""
    required = spec["parameters"].get("required") or ()
    return frozenset(r for r in required if isinstance(r, str))


def describe_tool_error(exc: Exception) -> str:
    """The text a model gets back when a tool call fails: short, and saying what to fix."""
    errors = getattr(exc, "errors", None)
    if callable(errors) and type(exc).__name__ == "ValidationError":  # pydantic, without importing it here
        try:
            problems = "; ".join(
                f"{'.'.join(map(str, e.get('loc', ()))) or 'arguments'}: {e.get('msg', '')}" for e in errors()
            )
        except Exception:  # noqa: BLE001 - fall back to the exception text
            problems = str(exc)
        return f"Error: invalid arguments: {problems}"
    return f"Error: {type(exc).__name__}: {exc}"


class ToolInterrupted(Exception):  # noqa: N818 - it carries an interrupt, it is not an error of the tool
    """A tool raised KeyboardInterrupt or SystemExit; ``original`` is re-raised once the turn is undone.

    Escaping a task as-is, those would stop the event loop running the turn (aiforge's background
    loop in a notebook), so they travel through the graph as an ordinary exception.
    """

    def __init__(self, original: BaseException) -> None:
        super().__init__(repr(original))
        self.original = original


async def run_tool(tool: Any, arguments: dict[str, Any]) -> str:
    """Invoke one tool, never blocking the event loop on a sync tool."""
    try:
        ainvoke = getattr(tool, "ainvoke", None)
        if ainvoke is not None:
            return _stringify(await ainvoke(arguments))
        return _stringify(await asyncio.to_thread(tool.invoke, arguments))
    except (KeyboardInterrupt, SystemExit) as exc:
        raise ToolInterrupted(exc) from None


# ---------------------------------------------------------------------------
# The prompted-JSON protocol, for providers without native tool calling
# ---------------------------------------------------------------------------

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def parse_prompted_tool_calls(text: str) -> list[ToolCall]:
    """Tool calls in a ``{"tool": ..., "input": {...}}`` answer (or a list of them); [] if none."""
    stripped = _FENCE.sub("", text.strip())
    if not stripped.startswith(("{", "[")):
        return []
    try:
        data = json.loads(stripped)
    except ValueError:
        return []
    items = data if isinstance(data, list) else [data]
    calls: list[ToolCall] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("tool"), str):
            return []
        calls.append(new_tool_call(item["tool"], item.get("input", {})))
    return calls


def to_prompted_messages(messages: list[Message]) -> list[Message]:
    """History in plain role/content form: tool calls as JSON text, results as user messages."""
    out: list[Message] = []
    for m in messages:
        if m["role"] == "tool":
            out.append({"role": "user", "content": f"Tool result ({m.get('name', 'tool')}): {m['content']}"})
        elif m.get("tool_calls"):
            calls = [{"tool": c["name"], "input": c["arguments"]} for c in m["tool_calls"]]
            payload = json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False)
            out.append({"role": "assistant", "content": (m["content"] + "\n" + payload).strip()})
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return out


# ---------------------------------------------------------------------------
# One turn's context
# ---------------------------------------------------------------------------


@dataclass(slots=True)
class Turn:
    """Everything a turn's nodes need beyond the state: provider, tools, sinks, ids."""

    provider: Provider
    provider_name: str
    params: CallParams
    tools: dict[str, Any]
    specs: list[ToolSpec] | None
    required: dict[str, frozenset[str]]
    native_tools: bool
    cost_tracker: CostTracker
    conversation_id: str
    trace_id: str
    emit: Callable[[str], None] | None = None
    price_overrides: dict[str, dict[str, float]] | None = None
    cost: float = 0.0
    priced: bool = True
    usage: Usage = field(default_factory=Usage)
    streamed_text: bool = False
    """Some text of this turn has reached the stream."""
    step_streamed_text: bool = False
    """Some text of the current model step has reached the stream."""

    async def call_model(self, messages: list[Message], node: str) -> tuple[Completion, dict[str, Any]]:
        """One model call (streamed when a sink is set), costed and traced."""
        started = time.perf_counter()
        self.step_streamed_text = False
        specs = self.specs if self.native_tools else None
        wire = messages if self.native_tools or not self.specs else to_prompted_messages(messages)
        if self.emit is None:
            completion = await self.provider.complete(wire, specs, self.params)
        else:
            completion = await self._stream(wire, specs)
        if not self.native_tools and self.specs:
            calls = parse_prompted_tool_calls(completion.text)
            if calls:
                completion.tool_calls, completion.text = calls, ""
        record = self.account(completion, kind="chat", node=node, started=started)
        return completion, record

    async def _stream(self, wire: list[Message], specs: list[ToolSpec] | None) -> Completion:
        assert self.emit is not None
        # In the prompted protocol a tool call arrives as JSON text: hold back an answer that
        # starts like JSON until it is complete, so no protocol text reaches the user.
        hold = not self.native_tools and bool(self.specs)
        held: list[str] = []
        completion: Completion | None = None
        async for event in self.provider.stream(wire, specs, self.params):
            if isinstance(event, Completion):
                completion = event
            elif hold:
                held.append(event)
                head = "".join(held).lstrip()
                if head and not head.startswith(("{", "[", "`")):
                    hold = False
                    self.emit_text("".join(held))
                    held.clear()
            else:
                self.emit_text(event)
                # Let the consumer take this chunk now: when the whole response arrived in one
                # read, the provider would otherwise parse every chunk before the first is seen.
                await asyncio.sleep(0)
        if completion is None:
            raise RuntimeError(f"provider {self.provider_name!r} ended a stream without a Completion")
        if held and not parse_prompted_tool_calls(completion.text):
            self.emit_text("".join(held))
        return completion

    def emit_text(self, text: str, *, new_step: bool = False) -> None:
        """Send text to the stream; a later step's text is set apart from an earlier step's."""
        if not text or self.emit is None:
            return
        if new_step:
            self.step_streamed_text = False
        if self.streamed_text and not self.step_streamed_text:
            # e.g. "Let me check." before a tool call, then the answer after it.
            text = "\n\n" + text
        self.streamed_text = self.step_streamed_text = True
        self.emit(text)

    def account(self, completion: Completion, *, kind: str, node: str, started: float) -> dict[str, Any]:
        """Record a model call's cost and return its trace record."""
        model = completion.model or self.params.model
        usage = completion.usage
        entry = self.cost_tracker.record(
            usage, model, provider=self.provider_name, kind=kind, trace_id=self.trace_id,
            conversation_id=self.conversation_id, price_overrides=self.price_overrides,
            free=self.provider.free,  # local models and fakes cost zero rather than "unknown"
        )
        cost, priced = entry.cost, entry.priced
        self.cost += cost
        self.priced = self.priced and priced
        self.usage = self.usage + usage
        return {
            "step": "model", "node": node, "name": kind, "model": model,
            "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cached_input_tokens": usage.cached_input_tokens, "cost": cost,
            "latency_ms": (time.perf_counter() - started) * 1000.0,
            "finish_reason": completion.finish_reason,
            "tool_calls": [c["name"] for c in completion.tool_calls],
        }

    async def execute(self, call: ToolCall) -> tuple[str, bool, dict[str, Any]]:
        """Run one tool call; errors become the call's result text, never an exception."""
        started = time.perf_counter()
        name = call["name"]
        tool = self.tools.get(name)
        error = True
        if tool is None:
            output = f"Error: unknown tool {name!r}. Available tools: {', '.join(self.tools) or 'none'}."
        elif "invalid_arguments" in call:
            output = (
                f"Error: the arguments for {name!r} were not a JSON object: "
                f"{call['invalid_arguments'][:200]}"
            )
        elif missing := sorted(self.required.get(name, frozenset()) - call["arguments"].keys()):
            # Checked here too, so a tool that does not validate its own input is never run without them.
            output = f"Error: invalid arguments for {name!r}: missing required argument(s) {', '.join(missing)}."
        else:
            try:
                output = await run_tool(tool, call["arguments"])
                # Tools that report failure as text (aiforge's built-ins) start it with "Error:".
                error = output.startswith("Error:")
            except ToolInterrupted:
                raise
            except Exception as exc:  # noqa: BLE001 - a tool's failure is reported to the model
                output = describe_tool_error(exc)
        record = {
            "step": "tool", "node": "execute_tool", "name": name, "id": call["id"],
            "input": call["arguments"], "output": output, "error": output if error else None,
            "latency_ms": (time.perf_counter() - started) * 1000.0,
        }
        return output, error, record


def _turn(config: RunnableConfig) -> Turn:
    return config["configurable"]["turn"]


def _assistant_message(completion: Completion) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": completion.text}
    if completion.tool_calls:
        message["tool_calls"] = completion.tool_calls
    return message


# ---------------------------------------------------------------------------
# Nodes and routing
# ---------------------------------------------------------------------------


async def _model_step(state: ChatAgentState, config: RunnableConfig, node: str) -> Command:
    from langgraph.types import Command  # loaded with the graph, not at ``import aiforge``

    turn = _turn(config)
    completion, record = await turn.call_model(state["messages"], node)  # type: ignore[arg-type]
    messages = [*state["messages"], _assistant_message(completion)]
    pending = completion.tool_calls
    if node == "process_result" and pending and state["iteration"] >= state["max_tool_iterations"]:
        # The cap is reached while the model still asks for tools: answer those calls with a
        # limit notice and end with a plain assistant message, so the history stays valid.
        limit = state["max_tool_iterations"]
        for call in pending:
            messages.append({
                "role": "tool", "tool_call_id": call["id"], "name": call["name"],
                "content": TOOL_LIMIT_RESULT.format(limit=limit),
            })
        messages.append({"role": "assistant", "content": TOOL_LIMIT_MESSAGE.format(limit=limit)})
        record["stopped_by_limit"] = True
        turn.emit_text(TOOL_LIMIT_MESSAGE.format(limit=limit), new_step=True)
        pending = []
    update = {
        "messages": messages,
        "tool_calls": pending,
        "trace": [record],
        "total_input_tokens": completion.usage.input_tokens,
        "total_output_tokens": completion.usage.output_tokens,
        "model": completion.model or state["model"],
    }
    # The node routes itself: a conditional edge would be one more runnable per step, run on
    # a worker thread for a sync router (0.2-0.3 ms of a 1 ms step, measured).
    should_go_on = should_use_tools if node == "route" else should_continue_after_tool
    return Command(update=update, goto=should_go_on({**state, "tool_calls": pending}))


async def route(state: ChatAgentState, config: RunnableConfig) -> Command:
    """Send the history to the model: it answers, or asks for tools (then ``execute_tool``)."""
    return await _model_step(state, config, "route")


async def process_result(state: ChatAgentState, config: RunnableConfig) -> Command:
    """Send the tool results back to the model: it answers, or asks for more tools (``execute_tool``)."""
    return await _model_step(state, config, "process_result")


async def execute_tool(state: ChatAgentState, config: RunnableConfig) -> dict[str, Any]:
    """Run every pending tool call (concurrently) and append one result per call, in order."""
    turn = _turn(config)
    calls = state["tool_calls"]
    if len(calls) == 1:
        outcomes = [await turn.execute(calls[0])]  # type: ignore[arg-type]
    else:
        outcomes = await asyncio.gather(*(turn.execute(c) for c in calls))  # type: ignore[arg-type]
    messages = list(state["messages"])
    results = []
    trace = []
    for call, (output, error, record) in zip(calls, outcomes, strict=True):
        messages.append({"role": "tool", "tool_call_id": call["id"], "name": call["name"], "content": output})
        results.append(
            {"id": call["id"], "tool": call["name"], "input": call["arguments"], "output": output, "error": error}
        )
        trace.append(record)
    return {
        "messages": messages,
        "tool_calls": [],
        "tool_results": results,
        "trace": trace,
        "iteration": state["iteration"] + 1,
    }


def should_use_tools(state: ChatAgentState) -> str:
    """Where ``route`` goes next: ``execute_tool`` with pending calls, else the end."""
    return "execute_tool" if state["tool_calls"] else "__end__"


def should_continue_after_tool(state: ChatAgentState) -> str:
    """Where ``process_result`` goes next: ``execute_tool`` with pending calls under the cap, else the end."""
    if state["tool_calls"] and state["iteration"] < state["max_tool_iterations"]:
        return "execute_tool"
    return "__end__"


_compiled: Any = None


def build_chat_graph() -> Any:
    """The compiled StateGraph of the chat agent (no checkpointer: aiforge owns the history).

    Nodes take the provider and tools from the turn, so one compiled graph serves every agent;
    it is compiled on first use and shared.
    """
    global _compiled
    if _compiled is None:
        _compiled = _compile()
    return _compiled


def _compile() -> Any:
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(ChatAgentState)
    # route and process_result pick their successor with should_use_tools and
    # should_continue_after_tool (a Command); ``destinations`` draws those edges.
    graph.add_node("route", route, destinations=("execute_tool", END))
    graph.add_node("execute_tool", execute_tool)
    graph.add_node("process_result", process_result, destinations=("execute_tool", END))
    graph.add_edge(START, "route")
    graph.add_edge("execute_tool", "process_result")
    return graph.compile()
