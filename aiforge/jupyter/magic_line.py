"""How the chat magics read their line: option tokens and the verbatim message, the agent-selection options.

``%chat [options] [--] message`` keeps the message as typed (quotes, dashes, ``{name}``); ``%chat Is it
true?`` runs the magic instead of IPython's help for the last word (``run_questions_as_chat``, an input
transformer). Errors are IPython ``UsageError``s: one line, no traceback.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments


def shown_as(exc: BaseException, message: str) -> BaseException:
    """``exc``, shown by IPython as ``message`` alone, never a traceback full of settings (``_render_traceback_``)."""
    # IPython calls an exception's ``_render_traceback_`` (no exception class declares it) for the lines to show.
    vars(exc)["_render_traceback_"] = lambda: [message]
    return exc


AGENT_OPTIONS = [
    argument("-a", "--agent", metavar="NAME", help="a ChatAgent variable of the notebook (default: the session agent)"),
    argument("--provider", help="session agent for this provider (openai, anthropic, local, scripted...)"),
    argument("--model", help="session agent for this model"),
    argument("--quality", choices=("high", "medium", "low"), help="session agent routed to this quality tier"),
    argument("--memory", choices=("buffer", "summary", "none"), help="session agent with this memory mode"),
    argument("-t", "--temperature", type=float, help="session agent with this sampling temperature (0 = steady)"),
    argument("--max-tokens", type=int, help="session agent with this cap on generated tokens per model call"),
    argument("--session", metavar="NAME", help="session agent on this saved conversation (kept across restarts)"),
]


def decorated_by(decorators: Sequence[Callable[[Any], Any]]) -> Callable[[Any], Any]:
    """One decorator applying ``decorators`` in order, as if stacked above a function (first on top)."""
    def apply(func: Any) -> Any:
        for decorator in reversed(decorators):
            func = decorator(func)
        return func

    return apply


def agent_selection_magic(func: Any) -> Any:
    """A line magic whose only options select an agent (``-a``, ``--provider``, ...)."""
    return no_var_expand(magic_arguments()(decorated_by(AGENT_OPTIONS)(line_magic(func))))


def parse_options(magic: Any, line: str) -> Any:
    """``line`` parsed by ``magic``'s own options (``magic_arguments``' parser)."""
    return magic.parser.parse_args(option_tokens(line))


_OPTION = re.compile(r"""\s*(--?[A-Za-z][\w-]*)(=)?""")
_VALUE = re.compile(r"""\s*("(?:[^"\\]|\\.)*"|'[^']*'|\S+)""")


def split_line(line: str, parser: Any) -> tuple[list[str], str]:
    """Split ``%chat [options] [--] message`` into option tokens and the message, kept verbatim."""
    flags: dict[str, bool] = {}
    for action in parser._actions:
        for option in action.option_strings:
            flags[option] = action.nargs != 0
    pos = 0
    message_start = None
    while True:
        dashes = re.compile(r"\s*--(?:\s|$)").match(line, pos)
        if dashes is not None:
            message_start = dashes.end()
            break
        match = _OPTION.match(line, pos)
        if match is None:
            break
        option = match.group(1)
        if option not in flags:
            if re.fullmatch(r"-[A-Za-z]|--[A-Za-z][\w-]*", option):
                raise UsageError(f"unknown option {option}; put -- before a message that starts with '-'")
            break
        pos = match.end()
        if flags[option]:
            value = _VALUE.match(line, pos)
            if value is None or (not match.group(2) and value.start(1) == pos):
                raise UsageError(f"option {option} needs a value")
            pos = value.end()
    return option_tokens(line[:pos]), line[pos if message_start is None else message_start :].strip()


def agent_config(args: Any) -> tuple[Any, ...]:
    """The options that pick a session agent, as the key the magics keep it under."""
    return (args.provider, args.model, args.quality, args.memory, args.temperature, args.max_tokens, args.session)


def option_tokens(line: str) -> list[str]:
    """``line`` split as a shell would; a quote left open is a ``UsageError``."""
    try:
        return shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"cannot read the options: {exc}") from None


# ---------------------------------------------------------------------------
# "%chat Is it true?": a line magic, not IPython's "name?" help
# ---------------------------------------------------------------------------

_QUESTION_LINE = re.compile(r"^([ \t]*)%chat[ \t]+(\S.*?)[ \t]*$")


def run_questions_as_chat(lines: list[str]) -> list[str]:
    """Input transformer: a ``%chat ...?`` line runs the magic instead of showing help for its last word.

    IPython reads any line ending in ``?`` as a help request (``%chat What is Python?`` would
    show help on ``Python``); this rewrites such lines into the magic call IPython would make.
    ``%chat?`` and ``%chat ?`` still show the magic's help.
    """
    if not lines or lines[0].lstrip().startswith("%%"):
        return lines
    out = []
    for line in lines:
        body = line.rstrip("\r\n")
        match = _QUESTION_LINE.match(body)
        if match and match.group(2).endswith("?") and match.group(2) not in ("?", "??"):
            ending = line[len(body) :]
            line = f"{match.group(1)}get_ipython().run_line_magic('chat', {match.group(2)!r}){ending}"
        out.append(line)
    return out
