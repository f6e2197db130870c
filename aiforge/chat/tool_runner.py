"""An agent's tools: their specs for the model, and running one call so that any failure is its result."""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from typing import Any

from aiforge.core.render import replace_lone_surrogates
from aiforge.core.types import ToolCall, ToolSpec, TraceRecord, UsageError
from aiforge.core.waits import stamped


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


def function_tool(fn: Any) -> Any:
    """A LangChain ``StructuredTool`` from a plain (sync or async) function.

    The name is ``fn.__name__``; the description is the docstring's summary, and each argument's
    description comes from a Google-style ``Args:`` section (a NumPy-style ``Parameters`` section is
    not parsed by LangChain: the whole docstring is then the description, so the model still reads
    it). The argument schema comes from the type hints and defaults. A function without a docstring
    is described by its name alone.
    """
    from langchain_core.tools import StructuredTool

    name = getattr(fn, "__name__", "")
    if not name.isidentifier():
        raise UsageError(
            f"{fn!r} has no usable name for a tool ({name or 'none'}): define it with def, not lambda or partial"
        )
    description = None if (inspect.getdoc(fn) or "").strip() else name
    is_async = inspect.iscoroutinefunction(fn)
    try:
        return StructuredTool.from_function(
            None if is_async else fn, coroutine=fn if is_async else None, description=description, parse_docstring=True
        )
    except ValueError as exc:  # e.g. the docstring documents an argument the function does not have
        raise UsageError(f"tool {name!r}: {exc}") from None


def _checked(tools: Any) -> list[Any]:
    if tools is None:
        return []
    if not isinstance(tools, list | tuple):
        raise UsageError(f"tools must be a list of tools, got {type(tools).__name__}")
    checked: list[Any] = []
    names: set[str] = set()
    for i, tool in enumerate(tools):
        missing = [a for a in ("name", "description", "invoke") if not hasattr(tool, a)]
        if missing and (inspect.isfunction(tool) or inspect.ismethod(tool)):
            tool = function_tool(tool)
        elif missing:
            raise UsageError(
                f"tools[{i}] ({tool!r}) is neither a function nor a LangChain tool: it lacks {', '.join(missing)}"
            )
        if tool.name in names:
            raise UsageError(f"two tools are named {tool.name!r}; tool names must be unique")
        names.add(tool.name)
        checked.append(tool)
    return checked


class Toolset:
    """An agent's tools by name, with the specs sent to the model; checked once, at construction."""

    def __init__(self, tools: Any) -> None:
        self.tools = _checked(tools)
        self.by_name = {t.name: t for t in self.tools}
        self.specs: list[ToolSpec] | None = [tool_spec(t) for t in self.tools] or None
        self.required = {spec["name"]: required_arguments(spec) for spec in self.specs or ()}

    async def execute(self, call: ToolCall) -> tuple[str, bool, TraceRecord]:
        """Run one tool call: ``(output, error, trace record)``; a failure is the output, never an exception."""
        started = time.perf_counter()
        name = call["name"]
        tool = self.by_name.get(name)
        error = True
        if tool is None:
            output = f"Error: unknown tool {name!r}. Available tools: {', '.join(self.by_name) or 'none'}."
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
        record: TraceRecord = {
            "step": "tool", "node": "execute_tool", "name": name, "id": call["id"],
            "input": call["arguments"], "output": output, "error": output if error else None,
            "latency_ms": (time.perf_counter() - started) * 1000.0,
        }
        return output, error, stamped(record, started)
