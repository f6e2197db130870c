"""``aiforge chat``: the chat agent from a terminal; ``aiforge batch``: a prompt over a table's rows; ``aiforge logs``.

One module a command (``chat``, ``batch`` with ``batch_files``, ``logs``); this one builds the parser and maps
errors to exit codes: 0 ok, 2 usage error, 1 provider or configuration error (one line, no traceback), 130
interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from aiforge import __version__
from aiforge.cli import batch, chat, logs
from aiforge.core.setting_flags import option_of


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aiforge", description="aiforge-kit: LLM tools for notebooks and terminals.")
    parser.add_argument("--version", action="version", version=f"aiforge-kit {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chat.add_parser(commands)
    batch.add_parser(commands)
    logs.add_parser(commands)
    return parser


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
            batch.run(args, out)
            return 0
        if args.command == "logs":
            return logs.run(args, out)
        return chat.run(args, out)
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
