"""IPython magics: ``%%chat``, ``%chat``, ``%chat_reset``, ``%chat_history`` and ``%chat_log``.

Load them with ``%load_ext aiforge``. Loading imports IPython's magic machinery only: the
agent, its provider SDK, LangGraph, pandas and the display helpers are imported when a magic
first runs.

``{name}`` in a message is replaced by a variable of the notebook (``interpolation``); nothing
is evaluated: the magics also opt out of IPython's own ``{expression}`` expansion of the magic
line, which would evaluate. How a magic's line is split into options and message: ``magic_line``.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from aiforge.core.setting_flags import option_settings
from aiforge.core.types import TraceRecord
from aiforge.jupyter.interpolation import interpolate, resolve_reference
from aiforge.jupyter.magic_line import (
    AGENT_OPTIONS,
    agent_config,
    agent_selection_magic,
    decorated_by,
    option_tokens,
    parse_options,
    run_questions_as_chat,
    shown_as,
    split_line,
)

FORMATS = ("markdown", "text", "code", "json")

# ---------------------------------------------------------------------------
# The magics
# ---------------------------------------------------------------------------


@magics_class
class ChatMagics(Magics):
    """``%%chat`` and friends. Session agents are kept per configuration on this object."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.agents: dict[tuple[str | None, ...], Any] = {}

    # -- %%chat / %chat ----------------------------------------------------------------

    @no_var_expand
    @magic_arguments()
    @decorated_by(AGENT_OPTIONS)
    @argument("-s", "--system", metavar="TEXT", help="system prompt for this turn only ({name} works here too)")
    @argument("--reset", action="store_true", help="start a new conversation first")
    @argument("-f", "--format", choices=FORMATS, default="markdown", help="how to show the answer (default: markdown)")
    @argument("--no-stream", action="store_true", help="wait for the whole answer instead of streaming it")
    @argument("-o", "--output", metavar="NAME", help="a type of the notebook (model, dataclass, list[str]...): "
              "the answer is validated as it, shown as a one-row DataFrame or JSON (--format is ignored)")
    @line_cell_magic
    def chat(self, line: str, cell: str | None = None) -> None:
        """Chat with an LLM: the cell body (``%%chat``) or the rest of the line (``%chat``) is the message.

        ``{name}``, ``{obj.attr}``, ``{items[0]}`` and ``{table['key']}`` are replaced by notebook
        variables (nothing is evaluated; ``{{``/``}}`` are literal braces); a DataFrame or Series is
        sent as ``aiforge.describe(df)`` (``CONTEXT_MAX_TOKENS``), ``{df:full}`` sends the whole table,
        and what was sent is first in ``_chat.trace``. The answer streams into
        the output and ends as Markdown with a footer (model, tokens, cost, latency, tools); the
        ``ChatResponse`` is stored as ``_chat`` (with ``--output``, the validated object is
        ``_chat.output``). Examples::

            %%chat -s "You are terse." --model gpt-4o-mini
            Summarise {report.title} in one line.

            %%chat --output Review
            Classify this review: {review}

            %%chat -t 0 --max-tokens 200
            Which region is missing most prices? {sales}

            %chat -a support_agent What is our refund policy?
        """
        parser = self.chat.parser
        if cell is None:
            tokens, message = split_line(line, parser)
        else:
            tokens, message = option_tokens(line), cell
        args = parser.parse_args(tokens)
        namespace = self._namespace
        agent = None
        try:
            output = _output_type(args.output, namespace) if args.output else None
            agent = self._agent(args)
            if args.reset:
                agent.reset()
            sent: list[TraceRecord] = []
            tokens = agent.settings.CONTEXT_MAX_TOKENS
            system = interpolate(args.system, namespace, table_tokens=tokens, sent=sent) if args.system else None
            message = interpolate(message, namespace, table_tokens=tokens, sent=sent).lstrip("\n").rstrip()
            if not message.strip():
                raise UsageError("the message is empty: %%chat takes the cell body, %chat the rest of the line")
            if args.no_stream:
                response = self._wait(agent, message, system, args.format, output)
            else:
                response = self._stream(agent, message, system, args.format, output)
        except UsageError:
            raise
        except KeyboardInterrupt as exc:
            raise shown_as(
                exc, "Interrupted: the answer was stopped; the conversation is as it was before this cell."
            ) from None
        except Exception as exc:
            from aiforge.core.types import AIForgeError

            if isinstance(exc, AIForgeError):
                from aiforge.core.render import describe_error

                raise shown_as(exc, describe_error(exc, agent)) from None
            raise
        response.trace[:0] = sent  # what the model got for each {table}, first in the trace
        namespace["_chat"] = response

    def _wait(self, agent: Any, message: str, system: str | None, fmt: str, output: Any) -> Any:
        from IPython.display import display

        from aiforge.jupyter.display import output_bundle, response_bundle

        response = agent.chat(message, system_prompt=system, output=output)
        display(response_bundle(response, fmt) if output is None else output_bundle(response, output), raw=True)
        return response

    def _stream(self, agent: Any, message: str, system: str | None, fmt: str, output: Any) -> Any:
        from aiforge.core.aio import iterate_sync, run_sync
        from aiforge.jupyter import display as views

        view = views.StreamingDisplay(markdown=fmt == "markdown" and output is None)
        view.open()
        stream = agent.stream_turn(message, system_prompt=system, output=output)
        chunks = iterate_sync(stream)
        try:
            for chunk in chunks:
                view.append(chunk)
        except BaseException as exc:
            # The partial answer stays visible, marked; then the turn is cancelled (closing the
            # stream would let it run to its end and be recorded).
            note = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"stopped: {type(exc).__name__}"
            view.close(views.partial_bundle(view.text, markdown=view.markdown, note=note), f"[{note}]")
            run_sync(stream.cancel())
            chunks.close()
            raise
        if output is None:
            view.close(views.response_bundle(stream.response, fmt), views.footer_text(stream.response))
        else:
            bundle = views.output_bundle(stream.response, output)
            view.close(bundle, bundle["text/plain"])
        return stream.response

    # -- %chat_reset / %chat_history -----------------------------------------------------

    @agent_selection_magic
    def chat_reset(self, line: str) -> None:
        """Start a new conversation: every session agent's, or only the selected agent's."""
        args = parse_options(self.chat_reset, line)
        if args.agent or any(v is not None for v in agent_config(args)):
            agent = self._agent(args, create=False)
            if agent is not None:
                agent.reset()
            return
        for agent in self.agents.values():
            agent.reset()

    @agent_selection_magic
    def chat_history(self, line: str) -> Any:
        """The conversation of the session agent (or the selected one) as a DataFrame."""
        args = parse_options(self.chat_history, line)
        agent = self._agent(args, create=False)
        if agent is None:
            import pandas as pd

            return pd.DataFrame(columns=["role", "content", "tool_calls", "tool_call_id"])
        from aiforge.jupyter.display import history_view

        return history_view(agent.history_dataframe())

    @no_var_expand
    @magic_arguments()
    @argument("--session", metavar="NAME", help="only this session's turns")
    @argument("--search", metavar="TEXT", help="words to find in prompts and replies, or an FTS5 query "
              '("refund OR return", refu*); taken as typed')
    @argument("-n", type=int, default=20, help="how many turns, newest first (default 20)")
    @line_magic
    def chat_log(self, line: str) -> Any:
        """The logged turns of every agent, newest first: a DataFrame shown as text (columns: ``aiforge.logs()``)."""
        from aiforge.jupyter.log_view import log_view, split_search
        from aiforge.store.access import logs

        line, search = split_search(line)
        args = parse_options(self.chat_log, line)
        shown = [
            "time", "session", "model", "prompt", "reply", "input_tokens", "output_tokens", "cost", "latency_ms",
            "queue_ms",
        ]
        return log_view(logs(args.session, search=search, limit=args.n)[shown])

    # -- agents ----------------------------------------------------------------------------

    @property
    def _namespace(self) -> dict[str, Any]:
        """The notebook's variables (magics registered with IPython always have its shell)."""
        assert self.shell is not None
        namespace: dict[str, Any] = self.shell.user_ns
        return namespace

    def _agent(self, args: Any, *, create: bool = True) -> Any:
        config = agent_config(args)
        if args.agent:
            if any(v is not None for v in config):
                raise UsageError(
                    "-a/--agent uses that agent as it is: --provider/--model/--quality/--memory/--temperature/"
                    "--max-tokens/--session are for session agents"
                )
            name = args.agent.split(".")[0].split("[")[0].strip()
            if name not in self._namespace:
                raise UsageError(f"-a {args.agent}: no variable named {name!r} in the notebook: no agent of that name")
            agent = resolve_reference(args.agent, self._namespace)
            if not (hasattr(agent, "stream_turn") and hasattr(agent, "reset")):
                raise UsageError(f"-a {args.agent}: a ChatAgent is needed, got {type(agent).__name__}")
            return agent
        agent = self.agents.get(config)
        if agent is None and create:
            from aiforge.chat.agent import ChatAgent

            agent = ChatAgent(
                provider=args.provider, quality=args.quality, memory=args.memory or "buffer", session=args.session,
                **option_settings(args),
            )
            self.agents[config] = agent
        return agent


def _output_type(name: str, namespace: dict[str, Any]) -> Any:
    from aiforge.jupyter.display import output_type

    return output_type(name, namespace)


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%%chat``, ``%chat``, ``%chat_reset``, ``%chat_history`` and ``%chat_log``."""
    ipython.register_magics(ChatMagics)
    cleanup = ipython.input_transformers_cleanup
    if run_questions_as_chat not in cleanup:
        cleanup.append(run_questions_as_chat)


def unload_ipython_extension(ipython: Any) -> None:
    """Remove the magics registered by ``load_ipython_extension``."""
    if run_questions_as_chat in ipython.input_transformers_cleanup:
        ipython.input_transformers_cleanup.remove(run_questions_as_chat)
    manager = ipython.magics_manager
    manager.registry.pop(ChatMagics.__name__, None)
    for kind, names in ChatMagics.magics.items():
        for name in names:
            manager.magics[kind].pop(name, None)
