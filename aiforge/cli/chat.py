"""``aiforge chat``: one message, streamed (or as JSON), or an interactive multi-turn session without one."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from aiforge.core.render import truncation_note
from aiforge.core.setting_flags import option_settings


def add_parser(commands: Any) -> None:
    """Add the ``chat`` sub-command and its options to ``commands`` (argparse's sub-parsers)."""
    chat = commands.add_parser(
        "chat",
        help="chat with the agent (one message, or an interactive session without one)",
        description="Send MESSAGE and stream the answer; without MESSAGE, start an interactive session.",
    )
    chat.add_argument("message", nargs="?", help="the message; omit for an interactive multi-turn session")
    chat.add_argument("-p", "--provider", help="openai, anthropic, internal_gateway, local, ... (default: auto)")
    chat.add_argument("-m", "--model", help="model name (default: the provider's or the router's choice)")
    chat.add_argument("-s", "--system", help="system prompt")
    chat.add_argument("--memory", choices=["buffer", "summary", "none"], default="buffer")
    chat.add_argument("--memory-k", type=int, default=20, help="messages kept in memory (default 20)")
    chat.add_argument("-t", "--temperature", type=float, help="sampling temperature (0 = deterministic)")
    chat.add_argument("--max-tokens", type=int, help="cap on generated tokens per model call")
    chat.add_argument("-q", "--quality", choices=["high", "medium", "low"], help="route to a model of this tier")
    chat.add_argument("--json", action="store_true", help="print the ChatResponse as JSON instead of streaming text")
    chat.add_argument("--session", help="continue (and save) this named conversation of the STORE")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``aiforge chat``; returns the exit code (2 for a usage error found here). Errors of the agent raise."""
    if args.memory_k < 1:
        print("aiforge: error: --memory-k must be >= 1", file=sys.stderr)
        return 2
    agent = _agent(args)
    if args.message is not None:
        if not args.message.strip():
            print("aiforge: error: the message is empty", file=sys.stderr)
            return 2
        _turn(agent, args.message, args.json, out)
    else:
        _interactive(agent, args.json, out)
    return 0


def _agent(args: argparse.Namespace) -> Any:
    from aiforge.chat.agent import ChatAgent

    return ChatAgent(
        system_prompt=args.system,
        memory=args.memory,
        memory_k=args.memory_k,
        quality=args.quality,
        provider=args.provider,
        session=args.session,
        **option_settings(args),
    )


def _turn(agent: Any, message: str, as_json: bool, out: TextIO) -> None:
    if as_json:
        response = agent.chat(message)
        out.write(json.dumps(response.model_dump(exclude={"trace"}), ensure_ascii=False, indent=2) + "\n")
        return
    for chunk in agent.run_stream(message):
        out.write(chunk)
        out.flush()
    out.write("\n")
    out.write("".join(f"[{note}]\n" for note in filter(None, [truncation_note(agent.last_response)])))


_HELP = """commands (handled here, never sent to the model):
  /help   this list
  /reset  start a new conversation
  /exit   quit (also /quit or Ctrl-D)
a line starting with // is sent as a message starting with /
"""


def _interactive(agent: Any, as_json: bool, out: TextIO) -> None:
    out.write(
        f"aiforge chat · {agent.provider_name} · {agent.model} · /help for commands, Ctrl-D or /exit to quit\n"
    )
    while True:
        try:
            line = input("you> ")
        except EOFError:
            out.write("\n")
            return
        text = line.strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            return
        if text == "/reset":
            agent.reset()
            out.write("(new conversation)\n")
            continue
        if text == "/help":
            out.write(_HELP)
            continue
        if text.startswith("//"):
            text = text[1:]
        elif text.startswith("/") and " " not in text:
            out.write(f"unknown command {text}; /help lists the commands\n")
            continue
        out.write("assistant> ")
        try:
            _turn(agent, text, as_json, out)
        except KeyboardInterrupt:
            out.write("\n(interrupted)\n")
