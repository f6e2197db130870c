"""The notebook layer in a real ipykernel: interrupting %%chat, and Stop clicks while the panel streams."""

from __future__ import annotations

import os
import queue
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

jupyter_client = pytest.importorskip("jupyter_client.manager")
pytest.importorskip("ipykernel")

REPO = Path(__file__).resolve().parents[2]


class Kernel:
    def __init__(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIFORGE_", "OPENAI_", "ANTHROPIC_"))}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        self.manager, self.client = jupyter_client.start_new_kernel(kernel_name="python3", cwd=str(REPO), env=env)

    def run(self, code: str, *, interrupt_after: float | None = None, timeout: float = 30) -> list[dict[str, Any]]:
        """Execute ``code``; the iopub messages it caused, until the kernel is idle again."""
        msg_id = self.client.execute(code)
        started = time.monotonic()
        interrupted = False
        messages = []
        while True:
            if interrupt_after is not None and not interrupted and time.monotonic() - started > interrupt_after:
                self.manager.interrupt_kernel()
                interrupted = True
            assert time.monotonic() - started < timeout, f"no idle after {timeout} s"
            try:
                msg = self.client.get_iopub_msg(timeout=0.05)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            messages.append(msg)
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return messages

    def output(self, code: str) -> str:
        return "".join(m["content"]["text"] for m in self.run(code) if m["msg_type"] == "stream")

    def comm_msg(self, comm_id: str, data: dict[str, Any]) -> None:
        """What the browser sends when the user types or clicks."""
        self.client.shell_channel.send(self.client.session.msg("comm_msg", {"comm_id": comm_id, "data": data}))

    def iopub_for(self, seconds: float) -> list[dict[str, Any]]:
        messages = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                messages.append(self.client.get_iopub_msg(timeout=0.02))
            except queue.Empty:
                pass
        return messages

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def kernel() -> Iterator[Kernel]:
    k = Kernel()
    try:
        k.run("from aiforge import ChatAgent, ChatPanel, ScriptedProvider")
        yield k
    finally:
        k.close()


def test_interrupting_chat_in_a_kernel_keeps_the_partial_answer_and_the_conversation(kernel: Kernel) -> None:
    assert kernel.output("%load_ext aiforge") == ""
    kernel.run("agent = ChatAgent(provider=ScriptedProvider(['first answer', 'w ' * 200], delay=0.03, chunk_size=1))")
    kernel.run("%%chat -a agent\nfirst")
    messages = kernel.run("%%chat -a agent\nsecond, slowly", interrupt_after=1.0)
    updates = [m for m in messages if m["msg_type"] == "update_display_data"]
    assert len(updates) >= 2
    assert updates[-1]["content"]["data"]["text/plain"].endswith("w \n\n[interrupted]")
    (error,) = [m for m in messages if m["msg_type"] == "error"]
    assert error["content"]["traceback"] == [
        "Interrupted: the answer was stopped; the conversation is as it was before this cell."
    ]
    assert kernel.output("print([m['content'] for m in agent.history])") == "['first', 'first answer']\n"
    kernel.run("%chat -a agent Still there?")
    assert kernel.output("print(_chat.message)") == "You said: Still there?\n"


def test_panel_turn_runs_on_the_kernel_loop_and_a_stop_click_cancels_it(kernel: Kernel) -> None:
    kernel.run("panel = ChatPanel(ChatAgent(provider=ScriptedProvider(['w ' * 200], delay=0.03, chunk_size=1)))")
    input_id, send_id, stop_id = kernel.output(
        "print(panel.input.model_id, panel.send_button.model_id, panel.stop_button.model_id)"
    ).split()
    kernel.comm_msg(input_id, {"method": "update", "state": {"value": "tell me a story"}, "buffer_paths": []})
    kernel.comm_msg(send_id, {"method": "custom", "content": {"event": "click"}})
    streamed = [
        m
        for m in kernel.iopub_for(0.8)
        if m["msg_type"] == "comm_msg" and "w w" in m["content"]["data"].get("state", {}).get("value", "")
    ]
    assert len(streamed) >= 2  # the reply streams while the kernel is idle
    kernel.comm_msg(stop_id, {"method": "custom", "content": {"event": "click"}})
    kernel.iopub_for(0.3)
    state = kernel.output(
        "print(panel.busy, panel.transcript[-1].get('stopped'), 0 < panel.transcript[-1]['content'].count('w') < 200,"
        " len(panel.agent.history))"
    )
    assert state == "False True True 0\n"


def test_interrupting_agent_chat_outside_the_magics_ends_in_one_line(kernel: Kernel) -> None:
    kernel.run(
        "import asyncio, aiforge\n"
        "async def slow_llm(messages, **params):\n    await asyncio.sleep(30)\n    return 'late'\n"
        "aiforge.register_provider('slow_llm', slow_llm)\nslow = ChatAgent(provider='slow_llm')"
    )

    messages = kernel.run("slow.chat('take your time')", interrupt_after=1.0)

    (error,) = [m for m in messages if m["msg_type"] == "error"]
    assert error["content"]["traceback"] == [
        "KeyboardInterrupt: the call was cancelled",
        "(%tb shows the full traceback)",
    ]
    assert kernel.output("print(len(slow.history))") == "0\n"  # the turn was undone


def test_an_aiforge_error_outside_the_magics_is_one_line_in_the_kernel(kernel: Kernel) -> None:
    messages = kernel.run("ChatAgent(provider='scripted', TEMPRATURE=0.2)")

    (error,) = [m for m in messages if m["msg_type"] == "error"]
    assert error["content"]["traceback"][0] == (
        "ConfigError: unknown setting 'TEMPRATURE' (keyword argument). Did you mean TEMPERATURE?"
    )
