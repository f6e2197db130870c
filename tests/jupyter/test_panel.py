"""ChatPanel, headless: its widget state and the comm messages it sends to the front end."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import comm
import ipywidgets as widgets
import pytest
from comm.base_comm import BaseComm

import aiforge
from aiforge import ChatAgent
from aiforge import tools as tools_module
from aiforge.core.types import ProviderError
from aiforge.jupyter.panel import ENTER_TO_SEND_JS, ChatPanel, calculator, current_time, research, unit_converter
from aiforge.jupyter.panel_view import FOLLOW_JS, PANEL_JS
from aiforge.providers.scripted import ScriptedProvider, tool_call

LONG_REPLY = "Streaming **works**: " + " ".join(f"word{i}" for i in range(14))


@dataclass
class Sent:
    comm_id: str
    msg_type: str
    data: dict[str, Any]


class FrontEnd:
    """Stands in for the browser: records what widgets send and sends what a user would."""

    def __init__(self) -> None:
        self.sent: list[Sent] = []

    def comm(self, **kwargs: Any) -> BaseComm:
        log = self.sent

        class RecordingComm(BaseComm):
            def publish_msg(
                self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any
            ) -> None:
                log.append(Sent(self.comm_id, msg_type, data or {}))

        return RecordingComm(**kwargs)

    def values(self, widget: widgets.Widget) -> list[str]:
        """Every ``value`` the front end received for ``widget``, in order."""
        return [
            m.data["state"]["value"]
            for m in self.sent
            if m.comm_id == widget.comm.comm_id and m.msg_type == "comm_msg" and "value" in m.data.get("state", {})
        ]

    def type(self, box: widgets.Textarea, text: str) -> None:
        box.comm.handle_msg(
            {"content": {"data": {"method": "update", "state": {"value": text}, "buffer_paths": []}}, "buffers": []}
        )

    def click(self, button: widgets.Button) -> None:
        button.comm.handle_msg(
            {"content": {"data": {"method": "custom", "content": {"event": "click"}}}, "buffers": []}
        )


@pytest.fixture
def frontend(monkeypatch: pytest.MonkeyPatch) -> Iterator[FrontEnd]:
    front = FrontEnd()
    monkeypatch.setattr(comm, "create_comm", front.comm)
    yield front


def make_panel(*replies: Any, delay: float = 0.0, tools: list[Any] | None = None) -> tuple[ChatPanel, ScriptedProvider]:
    provider = ScriptedProvider(replies, delay=delay, chunk_size=1)
    return ChatPanel(ChatAgent(provider=provider, tools=tools)), provider


async def wait_idle(panel: ChatPanel, timeout: float = 60.0) -> None:
    """Wait until the turn ends; the timeout only guards against a hang (a busy machine is slow, not wrong)."""
    deadline = time.monotonic() + timeout
    while panel.busy:
        assert time.monotonic() < deadline, "the turn did not end"
        await asyncio.sleep(0.01)


# --- construction and layout -----------------------------------------------------------------------------------------


def test_panel_shows_provider_model_input_buttons_and_footer(frontend: FrontEnd) -> None:
    panel, _ = make_panel()
    opened = {m.comm_id: m.data["state"] for m in frontend.sent if m.msg_type == "comm_open"}
    box = opened[panel.widget.comm.comm_id]
    assert list(box["_dom_classes"]) == ["aiforge-chat-panel"]
    assert len(box["children"]) == 5 and all(c.startswith("IPY_MODEL_") for c in box["children"])
    assert "<code>scripted</code> / <code>scripted-model</code>" in panel.header.value
    assert isinstance(panel.input, widgets.Textarea)
    assert opened[panel.input.comm.comm_id]["continuous_update"] is False
    assert list(opened[panel.input.comm.comm_id]["_dom_classes"]) == ["aiforge-chat-input"]
    assert list(opened[panel.send_button.comm.comm_id]["_dom_classes"]) == ["aiforge-chat-send"]
    assert [b.description for b in (panel.send_button, panel.stop_button, panel.new_chat_button)] == [
        "Send",
        "Stop",
        "New chat",
    ]
    assert panel.stop_button.disabled and not panel.send_button.disabled
    assert "session 0 tokens · $0.00000" in panel.footer.value
    assert panel.transcript == []


def test_default_panel_builds_an_agent_with_the_builtin_tools(
    frontend: FrontEnd, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIFORGE_PROVIDER", "scripted")
    panel = ChatPanel()
    assert [t.name for t in panel.agent.tools] == ["calculator", "unit_converter", "current_time", "research"]
    assert ChatPanel(tools=None).agent.tools == []


def test_builtin_tools_are_importable_from_the_widget_module() -> None:
    assert calculator is tools_module.calculator
    assert research is tools_module.research
    assert unit_converter is tools_module.unit_converter
    assert current_time is tools_module.current_time
    assert aiforge.ChatPanel is ChatPanel


def test_tools_are_for_the_agent_the_panel_builds(frontend: FrontEnd) -> None:
    with pytest.raises(ValueError, match="pass tools to the ChatAgent"):
        ChatPanel(ChatAgent(provider=ScriptedProvider()), tools=[calculator])


def test_displaying_the_panel_installs_the_enter_to_send_hook(frontend: FrontEnd) -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()
    panel, _ = make_panel()
    with capture_output() as captured:
        display(panel)
    hook, view = captured.outputs
    assert hook.data["application/javascript"] == PANEL_JS == ENTER_TO_SEND_JS + FOLLOW_JS
    assert view.data["application/vnd.jupyter.widget-view+json"]["model_id"] == panel.widget.model_id
    for selector in (".aiforge-chat-input", ".aiforge-chat-panel", ".aiforge-chat-send", "event.shiftKey"):
        assert selector in ENTER_TO_SEND_JS


def test_the_transcript_is_bounded_scrolls_only_down_and_wraps_what_is_long(frontend: FrontEnd) -> None:
    """What the front end receives; tests/browser measures the result after a long answer in Chromium."""
    panel, _ = make_panel()
    scroller = panel.widget.children[1]
    opened = {m.comm_id: m.data["state"] for m in frontend.sent if m.msg_type == "comm_open"}
    layout = opened[scroller.layout.comm.comm_id]
    assert layout["height"] == "min(460px, 50vh)" and layout["max_height"] is None  # one size, empty or full
    assert layout["overflow"] == "hidden auto"  # x hidden, y scrolls
    assert opened[panel.input.layout.comm.comm_id]["width"] == "auto"  # 100% plus margins overflowed the panel
    style = panel.header.value
    assert "overflow-wrap: anywhere" in style.split(".aiforge-msg {")[1].split("}")[0]
    assert "white-space: pre-wrap" in style.split(".aiforge-msg pre {")[1].split("}")[0]


# --- a turn ----------------------------------------------------------------------------------------------------------


def test_the_panel_follows_its_transcript_and_has_a_hidden_new_messages_button(frontend: FrontEnd) -> None:
    panel, _ = make_panel()
    scroller = panel.widget.children[1]
    messages, jump = scroller.children
    assert messages is panel.messages and "aiforge-chat-scroller" in scroller._dom_classes
    assert scroller.layout.flex_flow is None  # column-reverse fought the script's scrolling
    assert "class='aiforge-chat-jump'" in jump.value
    assert ".aiforge-chat-panel.aiforge-unread .aiforge-chat-jump-row { display: flex; }" in panel.header.value
    parts = ("MutationObserver", ".aiforge-chat-scroller", "aiforge-unread", ".aiforge-chat-jump")
    parts += ("window.__aiforgeFollow",)
    for part in parts:
        assert part in FOLLOW_JS


def test_send_streams_the_reply_then_renders_markdown(frontend: FrontEnd) -> None:
    panel, _ = make_panel(LONG_REPLY, delay=0.03)
    response = panel.send("Show me streaming")
    assert response is not None and response.message == LONG_REPLY
    assert panel.transcript == [
        {"role": "user", "content": "Show me streaming"},
        {"role": "assistant", "content": LONG_REPLY},
    ]
    user_view, reply_view = panel.messages.children
    assert "Show me streaming" in user_view.value
    values = frontend.values(reply_view)
    streaming = [v for v in values[:-1] if "▌" in v]
    assert len(streaming) >= 2  # token by token, before the end
    assert len(values) < len(LONG_REPLY.split()) + 1  # throttled: not one update per chunk
    assert "▌" not in values[-1]
    assert "<strong>works</strong>" in values[-1]
    assert panel.last_response is response


def test_footer_shows_the_turn_and_session_tokens_and_cost(frontend: FrontEnd) -> None:
    panel, _ = make_panel("one", "two")
    first = panel.send("a")
    panel.send("b")
    footer = frontend.values(panel.footer)[-1]
    assert f"last turn {panel.last_response.input_tokens}+{panel.last_response.output_tokens} tokens" in footer
    assert f"session {panel.agent.cost_tracker.total_tokens:,} tokens · $0.00000" in footer
    assert panel.agent.cost_tracker.total_tokens > first.input_tokens + first.output_tokens


def test_html_from_the_model_is_escaped_never_sent_as_markup(frontend: FrontEnd) -> None:
    attack = "Hi <script>alert(1)</script><img src=x onerror=alert(2)> [x](javascript:alert(3))"
    panel, _ = make_panel(attack)
    panel.send("hello <b>you</b>")
    sent = [v for m in panel.messages.children for v in frontend.values(m)]
    assert sent
    assert not any("<script" in v or "<img" in v or "<b>you" in v or 'href="javascript' in v for v in sent)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in sent[-1]
    assert "hello &lt;b&gt;you&lt;/b&gt;" in panel.messages.children[0].value


def test_tool_calls_appear_as_collapsible_rows_with_input_and_output(frontend: FrontEnd) -> None:
    panel, _ = make_panel(tool_call("calculator", expression="6*7"), "It is 42.", tools=[calculator])
    panel.send("What is 6*7?")
    assert panel.transcript[-1]["tool_calls"] == [
        {"tool": "calculator", "input": {"expression": "6*7"}, "output": "42", "error": False}
    ]
    final = frontend.values(panel.messages.children[-1])[-1]
    assert final.count("<details class='aiforge-tool'>") == 1
    summary = final.split("<summary>")[1].split("</summary>")[0]
    assert "<code>calculator</code>" in summary and "6*7" in summary and "42" in summary
    assert "<pre>{\n  &quot;expression&quot;: &quot;6*7&quot;\n}</pre>" in final
    assert "<div>output</div><pre>42</pre>" in final
    assert final.index("<details") < final.index("It is 42.")
    assert "<svg class='aiforge-icon'" in summary and "🔧" not in final  # no emoji font needed


def test_a_tool_row_appears_while_the_turn_is_still_streaming(frontend: FrontEnd) -> None:
    call = tool_call("calculator", expression="6*7")
    panel, _ = make_panel(call, "It is 42, computed.", delay=0.02, tools=[calculator])
    panel.send("What is 6*7?")
    shown = frontend.values(panel.messages.children[-1])
    live = [v for v in shown if "<details class='aiforge-tool'>" in v and "▌" in v]
    assert live, "the tool row only appeared when the turn ended"
    assert "It is 42" not in live[0] and "<div>output</div><pre>42</pre>" in live[0]


def test_provider_error_is_shown_in_the_transcript_and_raised(frontend: FrontEnd) -> None:
    panel, _ = make_panel(ProviderError("rate limited upstream", provider="openai", status_code=429))
    with pytest.raises(ProviderError):
        panel.send("hi")
    assert panel.transcript[-1] == {
        "role": "error",
        "content": "ProviderError: rate limited upstream | provider=openai | status=429",
    }
    assert "⚠ ProviderError: rate limited upstream" in panel.messages.children[-1].value
    assert not panel.busy and not panel.send_button.disabled
    assert panel.send("again") is not None  # still usable


def test_empty_message_is_refused(frontend: FrontEnd) -> None:
    panel, provider = make_panel()
    with pytest.raises(ValueError):
        panel.send("   ")
    assert provider.calls == []


# --- clicks on a running loop (the kernel) ---------------------------------------------------------------------------


async def test_send_click_runs_the_turn_as_a_task_and_keeps_the_loop_free(frontend: FrontEnd) -> None:
    panel, provider = make_panel(LONG_REPLY, delay=0.02)
    frontend.type(panel.input, "Hello from the browser")
    frontend.click(panel.send_button)
    assert provider.calls == []  # the click handler only scheduled the turn: nothing ran before the loop got control
    assert panel.busy
    assert frontend.values(panel.input)[-1] == ""  # the input box was cleared
    ticks = 0
    while panel.busy:  # the loop keeps running other work while the reply streams
        ticks += 1
        await asyncio.sleep(0.005)
    assert ticks > 10
    assert panel.transcript[0] == {"role": "user", "content": "Hello from the browser"}
    assert panel.transcript[1]["content"] == LONG_REPLY


async def test_send_and_stop_buttons_follow_the_turn(frontend: FrontEnd) -> None:
    panel, _ = make_panel(LONG_REPLY, delay=0.02)
    frontend.type(panel.input, "hi")
    frontend.click(panel.send_button)
    assert panel.send_button.disabled and not panel.stop_button.disabled
    await wait_idle(panel)
    assert not panel.send_button.disabled and panel.stop_button.disabled


async def test_stop_click_cancels_a_slow_turn_and_keeps_the_partial_reply(frontend: FrontEnd) -> None:
    panel, _ = make_panel(LONG_REPLY, delay=0.05)
    frontend.type(panel.input, "tell me a long story")
    frontend.click(panel.send_button)
    while not panel.transcript or "word" not in panel.transcript[-1]["content"]:
        await asyncio.sleep(0.01)
    frontend.click(panel.stop_button)
    await wait_idle(panel)
    reply = panel.transcript[-1]
    assert reply["stopped"] is True
    assert reply["content"] and reply["content"] != LONG_REPLY
    assert "[stopped]" in frontend.values(panel.messages.children[-1])[-1]
    assert panel.agent.history == []  # the stopped turn is not in the conversation
    frontend.type(panel.input, "again")
    frontend.click(panel.send_button)
    await wait_idle(panel)
    assert panel.agent.history[-1]["content"] == "You said: again"


async def test_clicks_on_a_busy_panel_send_nothing(frontend: FrontEnd) -> None:
    panel, provider = make_panel(LONG_REPLY, delay=0.02)
    frontend.type(panel.input, "first")
    frontend.click(panel.send_button)
    frontend.type(panel.input, "second")
    frontend.click(panel.send_button)
    await wait_idle(panel)
    assert [e["content"] for e in panel.transcript if e["role"] == "user"] == ["first"]
    assert len(provider.calls) == 1
    assert panel.input.value == "second"  # kept for later


async def test_send_inside_a_running_loop_blocks_until_the_turn_is_done(frontend: FrontEnd) -> None:
    # A kernel cell: the turn runs on aiforge's background loop while the cell waits.
    panel, _ = make_panel("from a cell", delay=0.01)
    response = panel.send("hi")
    assert response is not None and response.message == "from a cell"
    assert not panel.busy


async def test_asend_runs_on_the_callers_loop_and_can_be_stopped(frontend: FrontEnd) -> None:
    panel, _ = make_panel(LONG_REPLY, "short", delay=0.05)
    turn = asyncio.ensure_future(panel.asend("long"))
    while not panel.transcript or "word" not in panel.transcript[-1]["content"]:
        await asyncio.sleep(0.01)
    frontend.click(panel.stop_button)
    assert await asyncio.wait_for(turn, 60) is None  # 60 s only guards against a hang
    assert panel.transcript[-1]["stopped"] is True and panel.transcript[-1]["content"] != LONG_REPLY
    assert (await panel.asend("next")).message == "short"


# --- stop and new chat from code -------------------------------------------------------------------------------------


def test_stop_from_another_thread_ends_a_blocking_send(frontend: FrontEnd) -> None:
    # 400 chunks at 50 ms: only Stop ends the send before the whole reply is shown, and the stop comes once the
    # panel shows text, so what is asserted is how much was streamed, not how long it took.
    endless = " ".join(f"word{i}" for i in range(400))
    panel, _ = make_panel(endless, delay=0.05)

    def stop_once_streaming() -> None:
        deadline = time.monotonic() + 60  # only guards against a hang
        while time.monotonic() < deadline and not (len(panel.transcript) > 1 and panel.transcript[-1]["content"]):
            time.sleep(0.01)
        panel.stop()

    stopper = threading.Thread(target=stop_once_streaming, daemon=True)
    stopper.start()
    assert panel.send("slow please") is None
    stopper.join()
    shown = panel.transcript[-1]
    assert shown["stopped"] is True
    assert shown["content"] and endless.startswith(shown["content"]) and len(shown["content"]) < len(endless) / 2
    assert panel.agent.history == []


def test_new_chat_clears_the_transcript_and_the_conversation(frontend: FrontEnd) -> None:
    panel, _ = make_panel("first answer", "fresh answer")
    panel.send("first")
    old_conversation = panel.agent.conversation_id
    spent = panel.agent.cost_tracker.total_tokens
    frontend.click(panel.new_chat_button)
    assert panel.transcript == [] and panel.messages.children == ()
    assert panel.agent.history == []
    assert panel.agent.conversation_id != old_conversation
    assert panel.agent.cost_tracker.total_tokens == spent  # session cost is kept
    panel.send("second")
    assert [m["content"] for m in panel.agent.history] == ["second", "fresh answer"]


async def test_new_chat_during_a_turn_stops_it(frontend: FrontEnd) -> None:
    panel, _ = make_panel(LONG_REPLY, delay=0.05)
    frontend.type(panel.input, "long")
    frontend.click(panel.send_button)
    await asyncio.sleep(0.2)
    frontend.click(panel.new_chat_button)
    await wait_idle(panel)
    assert panel.transcript == [] and panel.agent.history == []


def test_the_reference_pages_widget_module_gives_the_same_panel_and_tools() -> None:
    from aiforge.modules.chat import widget

    assert widget.ChatPanel is ChatPanel
    assert (widget.calculator, widget.research) == (calculator, research)
    assert (widget.unit_converter, widget.current_time) == (unit_converter, current_time)
    assert widget.ENTER_TO_SEND_JS is ENTER_TO_SEND_JS
