"""``ChatPanel``: an ipywidgets chat panel for a ``ChatAgent``, with the built-in tools by default.

The panel is a transcript, an input box, Send / Stop / New chat buttons, a provider/model
label and a footer with tokens and session cost. Replies stream token by token (throttled)
and render as a small, escaped Markdown subset (``panel_view``). Tool calls appear inline as
collapsible rows with their input and output, each as soon as its tool has run. The
transcript follows the newest text unless the user has scrolled up (``panel_view.FOLLOW_JS``).

Turns from the buttons run as tasks on the running loop (the kernel's), so the kernel keeps
handling Stop clicks while a reply streams. ``send`` blocks until the turn is done (from a
script, or a kernel cell via aiforge's background loop); ``await asend`` runs on the caller's
loop, so Stop works during it too.
"""

from __future__ import annotations

import asyncio
import html
import logging
import threading
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets

from aiforge.chat.agent import ChatAgent
from aiforge.chat.response import ChatResponse
from aiforge.core.aio import background_loop, run_sync
from aiforge.core.render import UPDATE_INTERVAL, Throttle, describe_error
from aiforge.core.types import AIForgeError, ToolResult, UsageError
from aiforge.jupyter.panel_view import ENTER_TO_SEND_JS, PANEL_JS, STYLE, panel_widgets, render_entry
from aiforge.tools import builtin_tools, calculator, current_time, research, unit_converter

__all__ = ["ENTER_TO_SEND_JS", "ChatPanel", "builtin_tools", "calculator", "current_time", "research", "unit_converter"]

logger = logging.getLogger("aiforge.chat.widget")


class ChatPanel:
    """A chat panel for ``agent`` (default: a new ``ChatAgent`` with the built-in tools).

    ``tools`` is used only when the panel builds the agent: ``"builtin"`` (calculator,
    research, unit_converter, current_time), ``None`` for none, or a list of tools;
    ``session`` too: the agent continues that saved conversation (``ChatAgent(session=...)``).
    Display it as the last expression of a cell or with ``display(panel)``; ``panel.widget``
    is the ipywidgets box, for embedding in a layout.
    """

    def __init__(
        self,
        agent: ChatAgent | None = None,
        tools: Any = "builtin",
        *,
        update_interval: float = UPDATE_INTERVAL,
        session: str | None = None,
    ) -> None:
        if agent is None:
            agent = ChatAgent(tools=_resolve_tools(tools), session=session)
        elif session is not None:
            raise UsageError("pass session= to the ChatAgent you give the panel, or let ChatPanel build it")
        elif not (isinstance(tools, str) and tools == "builtin"):
            raise UsageError("pass tools to the ChatAgent you give the panel, or let ChatPanel(tools=...) build one")
        self.agent = agent
        self.update_interval = update_interval
        self.transcript: list[dict[str, Any]] = []
        """The messages shown: ``{"role", "content", "tool_calls"?, "stopped"?}``; role user, assistant or error."""
        self.last_response: ChatResponse | None = None
        self._lock = threading.Lock()
        self._busy = False
        self._running: tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None = None
        self._stop_requested = False
        self._tasks: set[Any] = set()

        parts = panel_widgets(STYLE + self._header_html())
        self.header, self.messages, self.input, self.footer = parts.header, parts.messages, parts.input, parts.footer
        self.send_button, self.stop_button, self.new_chat_button = parts.send, parts.stop, parts.new_chat
        self.widget = parts.box
        self.send_button.on_click(self._on_send_click)
        self.stop_button.on_click(lambda _button: self.stop())
        self.new_chat_button.on_click(lambda _button: self.new_chat())
        self._update_footer()

    # -- display -------------------------------------------------------------------------

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display({"application/javascript": PANEL_JS, "text/plain": ""}, raw=True)
        display(self.widget)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        return f"ChatPanel(agent={self.agent!r}, messages={len(self.transcript)}, busy={self.busy})"

    # -- programmatic API ----------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """True while a turn is running."""
        return self._busy

    def send(self, text: str) -> ChatResponse | None:
        """Send ``text`` and return when the turn is done: its response, or None if it was stopped.

        Works from a plain script and inside a running loop (a kernel cell), where the turn
        runs on aiforge's background loop while the cell waits. Provider errors are shown in
        the panel and raised.
        """
        _check_text(text)
        self._claim()
        try:
            return run_sync(self._run_turn(text))
        finally:
            self._release()

    async def asend(self, text: str) -> ChatResponse | None:
        """Async ``send`` on the caller's loop: ``await panel.asend("...")`` in a notebook cell."""
        _check_text(text)
        self._claim()
        try:
            return await self._run_turn(text)
        finally:
            self._release()

    def stop(self) -> None:
        """Cancel the running turn: the partial reply stays, marked stopped; the agent's history is unchanged."""
        with self._lock:
            if not self._busy:
                return
            self._stop_requested = True
            running = self._running
        if running is not None:
            loop, task = running
            if _on_loop_thread(loop):
                task.cancel()
            else:
                loop.call_soon_threadsafe(task.cancel)

    def new_chat(self) -> None:
        """Stop any running turn, clear the transcript and start a new conversation."""
        self.stop()
        self.agent.reset()
        self.last_response = None
        self.transcript.clear()
        self.messages.children = ()
        self._update_footer()

    # -- the turn ------------------------------------------------------------------------

    def _on_send_click(self, _button: Any = None) -> None:
        text = self.input.value
        if not text.strip() or self.busy:
            return
        self._claim()
        self.input.value = ""
        coro = self._turn_from_ui(text)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            # No running loop in this thread (not a kernel): aiforge's loop runs the turn.
            future: Any = asyncio.run_coroutine_threadsafe(coro, background_loop())
        else:
            future = loop.create_task(coro)
        self._tasks.add(future)
        future.add_done_callback(self._tasks.discard)

    async def _turn_from_ui(self, text: str) -> None:
        try:
            await self._run_turn(text)
        except AIForgeError:
            pass  # shown in the transcript
        except asyncio.CancelledError:
            pass  # cancelled from outside (kernel shutdown): the entry is marked stopped
        except Exception:  # noqa: BLE001 - nobody awaits a UI task: show and log instead of losing it
            logger.exception("chat panel turn failed")
        finally:
            self._release()

    async def _run_turn(self, text: str) -> ChatResponse | None:
        task = asyncio.current_task()
        assert task is not None
        with self._lock:
            if self._stop_requested:
                return None
            self._running = (asyncio.get_running_loop(), task)
        self._add({"role": "user", "content": text})
        entry: dict[str, Any] = {"role": "assistant", "content": ""}
        view = self._add(entry, streaming=True)
        throttle = Throttle(self.update_interval)
        throttle.ready()
        stream = self.agent.stream_turn(text)

        def tool_done(result: ToolResult) -> None:
            entry.setdefault("tool_calls", []).append(_row(result))
            view.value = render_entry(entry, streaming=True)

        stream.on_tool = tool_done
        try:
            async for chunk in stream:
                entry["content"] += chunk
                if throttle.ready():
                    view.value = render_entry(entry, streaming=True)
        except asyncio.CancelledError:
            entry["stopped"] = True
            view.value = render_entry(entry)
            if self._stop_requested:
                task.uncancel()
                return None
            raise
        except Exception as exc:
            entry["stopped"] = True
            view.value = render_entry(entry)
            self._add({"role": "error", "content": describe_error(exc, self.agent)})
            raise
        response = stream.response
        assert response is not None  # set whenever the iteration ends without an exception
        entry["content"] = response.message
        if response.tool_calls:
            entry["tool_calls"] = [_row(tc.model_dump()) for tc in response.tool_calls]
        view.value = render_entry(entry)
        self.last_response = response
        return response

    # -- state ---------------------------------------------------------------------------

    def _claim(self) -> None:
        with self._lock:
            if self._busy:
                raise RuntimeError("the panel is busy with a turn; wait for it or call stop()")
            self._busy = True
            self._stop_requested = False
        self._show_busy(True)

    def _release(self) -> None:
        with self._lock:
            was_busy = self._busy
            self._busy = False
            self._running = None
            self._stop_requested = False
        if was_busy:
            self._show_busy(False)
            self._update_footer()

    def _show_busy(self, busy: bool) -> None:
        self.send_button.disabled = busy
        self.stop_button.disabled = not busy

    def _add(self, entry: dict[str, Any], *, streaming: bool = False) -> widgets.HTML:
        self.transcript.append(entry)
        view = widgets.HTML(render_entry(entry, streaming=streaming))
        self.messages.children = (*self.messages.children, view)
        return view

    def _header_html(self) -> str:
        return (
            "<div><b>aiforge chat</b> · "
            f"<code>{html.escape(self.agent.provider_name)}</code> / <code>{html.escape(self.agent.model)}</code></div>"
        )

    def _update_footer(self) -> None:
        from aiforge.core.render import truncation_note

        tracker = self.agent.cost_tracker
        last = self.last_response
        parts = []
        if last is not None:
            parts.append(f"last turn {last.input_tokens}+{last.output_tokens} tokens")
            parts += filter(None, [truncation_note(last)])
        parts.append(f"session {tracker.total_tokens:,} tokens · ${tracker.session_total:.5f}")
        if tracker.unpriced_models:
            parts.append("some models unpriced")
        self.footer.value = f"<div class='aiforge-footer'>{html.escape(' · '.join(parts))}</div>"


def _resolve_tools(tools: Any) -> list[Any]:
    if tools is None:
        return []
    if isinstance(tools, str):
        if tools != "builtin":
            raise UsageError(f"tools must be 'builtin', None or a list of tools, got {tools!r}")
        return builtin_tools()
    return list(tools)


def _row(call: Mapping[str, Any]) -> dict[str, Any]:
    return {"tool": call["tool"], "input": call["input"], "output": call["output"], "error": call["error"]}


def _check_text(text: Any) -> None:
    if not isinstance(text, str) or not text.strip():
        raise UsageError("the message must be a non-empty string")


def _on_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
