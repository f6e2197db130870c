"""The notebook layer in a real ipykernel: interrupting %%chat and a batch of blocking rows; Stop clicks in a panel."""

from __future__ import annotations

import os
import queue
import time
from collections.abc import Callable, Iterator
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

    def run(
        self, code: str, *, interrupt_when: Callable[[list[dict[str, Any]]], bool] | None = None, timeout: float = 60
    ) -> list[dict[str, Any]]:
        """Execute ``code``; the iopub messages it caused, until the kernel is idle again.

        ``interrupt_when(messages so far)``: interrupt the kernel once it is true (an event, never a delay: on a
        busy machine the cell may not have reached the point to interrupt after any fixed time). ``timeout`` only
        guards against a hang.
        """
        msg_id = self.client.execute(code)
        started = time.monotonic()
        interrupted = False
        messages: list[dict[str, Any]] = []
        while True:
            if interrupt_when is not None and not interrupted and interrupt_when(messages):
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

    def iopub_until(self, done: Callable[[list[dict[str, Any]]], bool], timeout: float = 60) -> list[dict[str, Any]]:
        """The iopub messages received until ``done(messages)``; ``timeout`` only guards against a hang."""
        messages: list[dict[str, Any]] = []
        end = time.monotonic() + timeout
        while not done(messages):
            assert time.monotonic() < end, f"still waiting after {timeout} s"
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


def updates_in(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["msg_type"] == "update_display_data"]


def test_interrupting_chat_in_a_kernel_keeps_the_partial_answer_and_the_conversation(kernel: Kernel) -> None:
    assert kernel.output("%load_ext aiforge") == ""
    kernel.run("agent = ChatAgent(provider=ScriptedProvider(['first answer', 'w ' * 200], delay=0.03, chunk_size=1))")
    kernel.run("%%chat -a agent\nfirst")
    messages = kernel.run("%%chat -a agent\nsecond, slowly", interrupt_when=lambda seen: len(updates_in(seen)) >= 2)
    updates = updates_in(messages)
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
    # 1 000 chunks at 30 ms: only the Stop click ends the turn before the whole reply is shown.
    kernel.run("panel = ChatPanel(ChatAgent(provider=ScriptedProvider(['w ' * 1000], delay=0.03, chunk_size=1)))")
    input_id, send_id, stop_id = kernel.output(
        "print(panel.input.model_id, panel.send_button.model_id, panel.stop_button.model_id)"
    ).split()
    kernel.comm_msg(input_id, {"method": "update", "state": {"value": "tell me a story"}, "buffer_paths": []})
    kernel.comm_msg(send_id, {"method": "custom", "content": {"event": "click"}})

    def streamed(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            m
            for m in messages
            if m["msg_type"] == "comm_msg" and "w w" in m["content"]["data"].get("state", {}).get("value", "")
        ]

    kernel.iopub_until(lambda seen: len(streamed(seen)) >= 2)  # the reply streams while the kernel is idle
    kernel.comm_msg(stop_id, {"method": "custom", "content": {"event": "click"}})
    deadline = time.monotonic() + 60  # only guards against a hang
    while kernel.output("print(panel.busy)") != "False\n":
        assert time.monotonic() < deadline, "the turn did not end"
    state = kernel.output(
        "print(panel.transcript[-1].get('stopped'), 0 < panel.transcript[-1]['content'].count('w') < 1000,"
        " len(panel.agent.history))"
    )
    assert state == "True True 0\n"


def test_interrupting_agent_chat_outside_the_magics_ends_in_one_line(kernel: Kernel, tmp_path: Path) -> None:
    asked = tmp_path / "asked"  # written by the provider: the call is under way, the moment to interrupt
    kernel.run(
        "import asyncio, aiforge, pathlib\n"
        "async def slow_llm(messages, **params):\n"
        f"    pathlib.Path({str(asked)!r}).touch()\n"
        "    await asyncio.sleep(30)\n"
        "    return 'late'\n"
        "aiforge.register_provider('slow_llm', slow_llm)\nslow = ChatAgent(provider='slow_llm')"
    )

    messages = kernel.run("slow.chat('take your time')", interrupt_when=lambda _: asked.exists())

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


# What runs each row of the interrupted batch, in each way a row can block: ``noted`` writes "start <row>" when
# the row is asked and "end <row>" when it returns. Where Interrupt can cut the third row short (it runs in a
# thread), that row waits for the test's go-ahead; a provider blocking the event loop is stopped between rows.
SLOW_ROWS = {
    "a sync provider function": (
        "def answer(messages):\n"
        "    return noted(messages[-1]['content'], 'done ' + messages[-1]['content'])\n"
        "slow_agent = ChatAgent(provider=ScriptedProvider(default=answer), PROGRESS_BAR=False)\n"
        "cut_short = True\n"
    ),
    "a sync tool": (
        "def lookup(row: str) -> str:\n"
        '    """Look a row up."""\n'
        "    return noted(row, 'found ' + row)\n"
        "def model(messages):\n"
        "    if messages[-1]['role'] == 'user':\n"
        "        return tool_call('lookup', row=messages[-1]['content'])\n"
        "    return 'done ' + messages[-2]['tool_calls'][0]['arguments']['row']\n"
        "slow_agent = ChatAgent(\n"
        "    provider=ScriptedProvider(default=model), tools=[lookup], memory='none', PROGRESS_BAR=False\n"
        ")\n"
        "cut_short = True\n"
    ),
    "a provider that blocks the event loop": (
        "from aiforge.core.types import Completion\n"
        "from aiforge.providers.base import Provider\n"
        "class Blocking(Provider):\n"
        "    async def complete(self, messages, tools, params):\n"
        "        text = noted(messages[-1]['content'], 'done ' + messages[-1]['content'])\n"
        "        return Completion(text=text, model='blocking', finish_reason='stop')\n"
        "slow_agent = ChatAgent(provider=Blocking(), PROGRESS_BAR=False)\n"
        "cut_short = False\n"
    ),
}


@pytest.mark.parametrize("rows_run_by", list(SLOW_ROWS))
def test_interrupt_stops_a_batch_of_blocking_rows_and_the_same_cell_then_asks_only_the_rest(
    kernel: Kernel, tmp_path: Path, rows_run_by: str
) -> None:
    notes, go_ahead = tmp_path / "notes", tmp_path / "go-ahead"
    setup = kernel.run(
        "import pathlib, time\nfrom aiforge.providers.scripted import tool_call\n"
        "def noted(row, answer):\n"
        f"    with open({str(notes)!r}, 'a') as f: f.write(f'start {{row}}\\n')\n"
        "    if cut_short and row == 'row 2':\n"
        "        waited = time.monotonic() + 10  # the go-ahead, or the cell was not interrupted in time\n"
        f"        while not pathlib.Path({str(go_ahead)!r}).exists() and time.monotonic() < waited:\n"
        "            time.sleep(0.01)\n"
        "    else:\n"
        "        time.sleep(pause)\n"
        f"    with open({str(notes)!r}, 'a') as f: f.write(f'end {{row}}\\n')\n"
        "    return answer\n"
        "pause = 0.2\nrows = [f'row {i}' for i in range(20)]\nout = None\n" + SLOW_ROWS[rows_run_by]
    )
    assert not [m["content"] for m in setup if m["msg_type"] == "error"]
    cut_short = "cut_short = True" in SLOW_ROWS[rows_run_by]
    cell = "out = slow_agent.run_batch(rows, concurrency=1)"

    def noted(kind: str) -> list[str]:
        lines = notes.read_text().splitlines() if notes.exists() else []
        return [line.removeprefix(f"{kind} ") for line in lines if line.startswith(f"{kind} ")]

    # Interrupt once the third row is asked: two rows have finished.
    messages = kernel.run(cell, interrupt_when=lambda _: len(noted("start")) >= 3)

    asked, answered = noted("start"), noted("end")
    assert not [m["content"] for m in messages if m["msg_type"] == "stream"]  # no warning (the bar is off)
    (error,) = [m for m in messages if m["msg_type"] == "error"]
    assert error["content"]["ename"] == "BatchInterrupted"
    kept = int(error["content"]["evalue"].split("interrupted: ")[1].split(" of 20")[0])
    assert 2 <= kept < 20
    assert asked[:kept] == [f"row {i}" for i in range(kept)]
    assert len(asked) <= kept + 1  # the rows kept and at most the one in flight: no row started after Interrupt
    if cut_short:
        assert answered == ["row 0", "row 1"]  # the cell ended while the third row was still running
    assert kernel.output("print(out)") == "None\n"  # the interrupted cell assigned nothing

    go_ahead.touch()
    deadline = time.monotonic() + 60  # only guards against a hang
    while len(noted("end")) < len(asked):  # the row in flight, left running in its thread, returns
        assert time.monotonic() < deadline, "the row in flight never returned"
    kernel.run("pause = 0")
    messages = kernel.run(cell)

    assert not [m["content"] for m in messages if m["msg_type"] in ("error", "stream")]
    assert noted("start")[len(asked) :] == [f"row {i}" for i in range(kept, 20)]  # only the rest is asked
    assert kernel.output("print([r.message for r in out.results] == [f'done {r}' for r in rows], len(out.failed))") == (
        "True 0\n"
    )
