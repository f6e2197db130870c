"""``aiforge logs``: the logged turns of the store, newest first, as text or one JSON object a line."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import Any, TextIO


def add_parser(commands: Any) -> None:
    """Add the ``logs`` sub-command and its options to ``commands`` (argparse's sub-parsers)."""
    logs = commands.add_parser("logs", help="the logged turns, newest first", description="Show logged turns.")
    logs.add_argument("--session", help="only this session's turns")
    logs.add_argument(
        "--search", help='words to find in prompts and replies, or an FTS5 query ("refund OR return", refu*)'
    )
    logs.add_argument("--model", help="only this model's turns")
    logs.add_argument("-n", type=int, default=10, help="how many turns (default 10)")
    logs.add_argument("--json", action="store_true", help="one JSON object per line, every column")


def _nothing(args: argparse.Namespace) -> str:
    """The line for an empty answer: which filters found nothing, or that nothing is logged yet."""
    filters = [
        f"--{name} {value!r}"
        for name, value in (("session", args.session), ("search", args.search), ("model", args.model))
        if value
    ]
    return f"no turns match {' '.join(filters)}" if filters else "no turns logged yet"


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Print the turns ``args`` select, or on stderr that none match; the exit code (2 for a wordless search)."""
    from aiforge.core.types import UsageError
    from aiforge.store.access import store_of
    from aiforge.store.log import TurnLog

    try:
        rows = TurnLog(store_of()).query(session=args.session, search=args.search, model=args.model, limit=args.n)
    except UsageError as exc:  # a search with no word in it: a usage error (exit 2), like argparse's
        print(f"aiforge: error: argument --search: {exc}", file=sys.stderr)
        return 2
    if not rows:  # say so, on stderr (stdout stays JSON lines with --json); finding nothing is no error: exit 0
        print(f"aiforge: {_nothing(args)}", file=sys.stderr)
        return 0
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
