"""The fake OpenAI + Anthropic server for benchmarks, run as its own process.

    python -m bench.fake_server --latency 0.1
    python -m bench.fake_server --tool-args '{"city": "Paris"}' --reply "It is sunny."

Wraps ``fakellm.LLMServer`` (unchanged) and adds the reply policy the
benchmarks need: a structured-output request (``response_format`` json_schema, Anthropic
``output_config``) gets a small valid answer of its schema; a request that forces one function
(instructor's tool mode) gets a call of it with valid arguments; a request that offers tools
gets a call to its first tool unless its last message is already a tool result; every other
request gets ``--reply`` (default: the server's ``echo: <last user text>``). Prints
``READY <base url>`` once it listens.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fakellm import LLMServer, RecordedRequest, Reply, ToolCallSpec, sample_output  # noqa: E402


def reply_policy(reply: str | None, tool_args: dict[str, Any]) -> Any:
    """The server's ``default`` hook: one tool call when tools are offered, then text."""

    def default(request: RecordedRequest) -> Reply | None:
        schema = request.output_schema
        if schema is not None:
            return Reply(output=sample_output(schema))
        forced = _forced_function(request)
        if forced is not None:
            return Reply(tool_calls=[ToolCallSpec(name=forced[0], arguments=sample_output(forced[1]))])
        names = request.tool_names
        if names and not request.last_message_is_tool_result:
            return Reply(tool_calls=[ToolCallSpec(name=names[0], arguments=tool_args)])
        return Reply(text=reply) if reply is not None else None  # None: the server echoes

    return default


def _forced_function(request: RecordedRequest) -> tuple[str, dict[str, Any]] | None:
    """The name and parameter schema of the function an OpenAI ``tool_choice`` forces, if any."""
    body = request.body if isinstance(request.body, dict) else {}
    choice = body.get("tool_choice")
    if request.protocol != "openai" or not isinstance(choice, dict):
        return None
    name = (choice.get("function") or {}).get("name")
    for tool in body.get("tools") or []:
        function = tool.get("function") or {} if isinstance(tool, dict) else {}
        if function.get("name") == name:
            return name, function.get("parameters") or {}
    return None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each response")
    parser.add_argument("--chunk-delay", type=float, default=0.0, help="seconds between streamed events")
    parser.add_argument("--chunk-size", type=int, default=4, help="characters per streamed text delta")
    parser.add_argument("--reply", default=None, help="fixed text reply (default: echo the last user text)")
    parser.add_argument("--tool-args", default="{}", help="JSON arguments of the tool call")
    args = parser.parse_args(argv)

    server = LLMServer(
        port=args.port,
        latency=args.latency,
        chunk_delay=args.chunk_delay,
        chunk_size=args.chunk_size,
        default=reply_policy(args.reply, json.loads(args.tool_args)),
        record=False,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"READY {server.base_url}", flush=True)
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()


if __name__ == "__main__":
    main()
