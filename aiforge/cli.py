"""``aiforge chat``: the chat agent from a terminal; ``aiforge batch``: a prompt over a table's rows; ``aiforge logs``.

Exit codes: 0 ok, 2 usage error, 1 provider or configuration error (one line, no traceback), 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TextIO

from aiforge import __version__, cli_batch
from aiforge.core.render import truncation_note
from aiforge.core.setting_flags import option_of, option_settings


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aiforge", description="aiforge-kit: LLM tools for notebooks and terminals.")
    parser.add_argument("--version", action="version", version=f"aiforge-kit {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
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
    cli_batch.add_parser(commands)
    logs = commands.add_parser("logs", help="the logged turns, newest first", description="Show logged turns.")
    logs.add_argument("--session", help="only this session's turns")
    logs.add_argument(
        "--search", help='words to find in prompts and replies, or an FTS5 query ("refund OR return", refu*)'
    )
    logs.add_argument("--model", help="only this model's turns")
    logs.add_argument("-n", type=int, default=10, help="how many turns (default 10)")
    logs.add_argument("--json", action="store_true", help="one JSON object per line, every column")
    return parser


def _agent(args: argparse.Namespace) -> Any:
    from aiforge.modules.chat.module import ChatAgent

    return ChatAgent(
        system_prompt=args.system,
        memory=args.memory,
        memory_k=args.memory_k,
        quality=args.quality,
        provider=args.provider,
        session=args.session,
        **option_settings(args),
    )


def _logs(args: argparse.Namespace, out: TextIO) -> int:
    from aiforge.core.types import UsageError
    from aiforge.store.access import store_of
    from aiforge.store.log import TurnLog

    try:
        rows = TurnLog(store_of()).query(session=args.session, search=args.search, model=args.model, limit=args.n)
    except UsageError as exc:  # a search with no word in it: a usage error (exit 2), like argparse's
        print(f"aiforge: error: argument --search: {exc}", file=sys.stderr)
        return 2
    for row in rows:
        if args.json:
            out.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
            continue
        when = datetime.fromtimestamp(row["time"]).strftime("%Y-%m-%d %H:%M:%S")
        where = f" · session {row['session']}" if row["session"] else ""
        queued = f" · {row['queue_ms']:.0f} ms queued" if row["queue_ms"] >= 1 else ""
        out.write(
            f"{when} · {row['provider']} · {row['model']}{where} · {row['input_tokens']}+{row['output_tokens']} "
            f"tokens · ${row['cost']:.6f} · {row['latency_ms']:.0f} ms{queued}\n  > {row['prompt']}\n"
            f"  < {row['reply']}\n"
        )
    return 0


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


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command line; returns the exit code."""
    from aiforge.core.types import AIForgeError, UsageError

    out = out or sys.stdout
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors exit 2, --help/--version exit 0
        return int(exc.code or 0)
    try:
        if args.command == "batch":
            cli_batch.run(args, out)
            return 0
        if args.command == "logs":
            return _logs(args, out)
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
    except UsageError as exc:  # a bad argument, wherever it was found: exit 2 like argparse's
        print(f"aiforge: error: {exc}", file=sys.stderr)
        return 2
    except AIForgeError as exc:
        flag = option_of(getattr(exc, "setting", None))
        if flag and "keyword argument" in str(exc):
            print(f"aiforge: error: argument {flag}: {getattr(exc, 'problem', exc)}", file=sys.stderr)
            return 2
        print(f"aiforge: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"aiforge: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # a batch's interrupt says what it kept
        print(f"\naiforge: {str(exc) or 'interrupted'}", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
