"""Resumable batches through the real openai SDK: a checkpoint survives kill -9, Ctrl-C keeps the finished rows
in memory, a rerun runs only the rest (every row once, none paid twice), and another batch's file is refused."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiforge import ChatAgent
from aiforge.core.errors import BatchInterrupted, CheckpointMismatchError
from aiforge.core.types import Interrupted
from fakellm import Fault, LLMServer, RecordedRequest, Reply

KEY = "sk-test-key-never-stored-0123456789"
ITEMS = [f"row {i}" for i in range(20)]
CONCURRENCY = 4


class Metered:
    """Answers the first ``answer_first`` requests, hangs the next ``CONCURRENCY`` (the run is stopped while
    they wait, so they are never answered, never paid), then answers everything; counts what it answered."""

    def __init__(self, answer_first: int) -> None:
        self.answer_first = answer_first
        self.seen = 0
        self.answered: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, req: RecordedRequest) -> Reply | Fault:
        with self.lock:
            self.seen += 1
            if self.answer_first < self.seen <= self.answer_first + CONCURRENCY:
                return Fault(hang=True)
            self.answered[req.last_user_text] += 1
        return Reply(text=f"done {req.last_user_text}")


@pytest.fixture
def srv() -> Iterator[LLMServer]:
    with LLMServer() as server:
        yield server


def agent(server: LLMServer) -> ChatAgent:
    return ChatAgent(provider="openai", OPENAI_API_KEY=KEY, OPENAI_BASE_URL=server.openai_base_url, MAX_RETRIES=0)


def assert_complete(batch: object, meter: Metered) -> None:
    assert [r.message for r in batch.results] == [f"done {item}" for item in ITEMS]  # type: ignore[attr-defined]
    assert meter.answered == Counter(ITEMS)  # every row answered exactly once over both runs


CHILD = """
import sys
from aiforge import ChatAgent
agent = ChatAgent(provider="openai", OPENAI_API_KEY=sys.argv[1], OPENAI_BASE_URL=sys.argv[2], MAX_RETRIES=0)
agent.run_batch([f"row {i}" for i in range(20)], concurrency=4, checkpoint=sys.argv[3])
"""


@pytest.mark.slow
def test_kill_9_mid_batch_then_a_rerun_runs_only_the_unfinished_rows(srv: LLMServer, tmp_path: Path) -> None:
    srv.default = meter = Metered(answer_first=8)
    path = tmp_path / "reviews.sqlite"
    child = subprocess.Popen([sys.executable, "-c", CHILD, KEY, srv.openai_base_url, str(path)])
    try:
        assert srv.wait_for_requests(8 + CONCURRENCY, timeout=60)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL and sum(meter.answered.values()) == 8
    batch = agent(srv).run_batch(ITEMS, concurrency=CONCURRENCY, checkpoint=path)
    assert_complete(batch, meter)
    assert sum(r.cost for r in batch.results) > 0


def test_a_finished_checkpointed_batch_reruns_without_a_request(srv: LLMServer, tmp_path: Path) -> None:
    first = agent(srv).run_batch(ITEMS[:5], checkpoint=tmp_path / "b.sqlite")
    again = agent(srv).run_batch(ITEMS[:5], checkpoint=tmp_path / "b.sqlite")
    assert srv.request_count == 5
    assert [r.message for r in again.results] == [r.message for r in first.results]
    assert [r.cost for r in again.results] == [r.cost for r in first.results]


def test_failed_items_are_run_again_on_a_rerun(srv: LLMServer, tmp_path: Path) -> None:
    srv.default = lambda req: Fault(500) if req.last_user_text == "row 2" and srv.request_count <= 5 else None
    first = agent(srv).run_batch(ITEMS[:5], concurrency=1, checkpoint=tmp_path / "b.sqlite")
    assert [f.index for f in first.failed] == [2]
    again = agent(srv).run_batch(ITEMS[:5], checkpoint=tmp_path / "b.sqlite")
    assert not again.failed and again.results[2].message == "echo: row 2"
    assert srv.request_count == 6


def test_a_checkpoint_of_other_inputs_is_refused_and_restart_starts_over(srv: LLMServer, tmp_path: Path) -> None:
    path = tmp_path / "b.sqlite"
    agent(srv).run_batch(ITEMS[:5], checkpoint=path)
    with pytest.raises(CheckpointMismatchError, match="inputs differ.*restart=True"):
        agent(srv).run_batch(ITEMS[1:6], checkpoint=path)
    with pytest.raises(CheckpointMismatchError, match="settings differ"):
        agent(srv).run_batch(ITEMS[:5], checkpoint=path, output=bool)
    assert srv.request_count == 5
    agent(srv).run_batch(ITEMS[1:6], checkpoint=path, restart=True)
    assert srv.request_count == 10


def test_the_checkpoint_file_holds_no_key(srv: LLMServer, tmp_path: Path) -> None:
    agent(srv).run_batch(ITEMS[:3], checkpoint=tmp_path / "b.sqlite")
    for file in tmp_path.glob("b.sqlite*"):
        assert KEY.encode() not in file.read_bytes()


def test_a_cancelled_async_batch_keeps_its_finished_rows_for_the_same_call(srv: LLMServer) -> None:
    srv.default = meter = Metered(answer_first=8)
    same = agent(srv)

    async def interrupted_then_again() -> object:
        task = asyncio.ensure_future(same.arun_batch(ITEMS, concurrency=CONCURRENCY))
        while srv.request_count < 8 + CONCURRENCY:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return await same.arun_batch(ITEMS, concurrency=CONCURRENCY)

    assert_complete(asyncio.run(interrupted_then_again()), meter)


INTERRUPTED_CHILD = """
import sys
from aiforge import ChatAgent
agent = ChatAgent(provider="openai", OPENAI_API_KEY=sys.argv[1], OPENAI_BASE_URL=sys.argv[2], MAX_RETRIES=0)
items = [f"row {i}" for i in range(20)]
try:
    agent.run_batch(items, concurrency=4)
except KeyboardInterrupt as exc:
    print(type(exc).__name__, "|", exc, "|", exc._render_traceback_()[0], flush=True)
batch = agent.run_batch(items, concurrency=4)
print(len(batch.results), len(batch.failed))
"""


@pytest.mark.slow
def test_ctrl_c_keeps_the_finished_rows_and_says_so_in_one_line(srv: LLMServer) -> None:
    srv.default = meter = Metered(answer_first=8)
    child = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED_CHILD, KEY, srv.openai_base_url], stdout=subprocess.PIPE, text=True
    )
    assert srv.wait_for_requests(8 + CONCURRENCY, timeout=60)
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=60)
    note = (
        "run_batch interrupted: 8 of 20 items finished and are kept; run the same call again to run only the "
        "other 12."
    )
    assert out.splitlines() == [f"BatchInterrupted | {note} | KeyboardInterrupt: {note}", "20 0"]
    assert meter.answered == Counter(ITEMS)


def test_batch_interrupted_is_aiforges_one_line_keyboard_interrupt() -> None:
    assert issubclass(BatchInterrupted, Interrupted) and issubclass(BatchInterrupted, KeyboardInterrupt)


def test_the_accessor_passes_checkpoint_and_restart_to_run_batch(srv: LLMServer, tmp_path: Path) -> None:
    import pandas as pd

    frame = pd.DataFrame({"review": ITEMS[:4]}, index=[10, 11, 12, 13])
    path = tmp_path / "reviews.sqlite"
    first = frame.aiforge.map("Summarise: {review}", agent=agent(srv), checkpoint=path)
    again = frame.aiforge.map("Summarise: {review}", agent=agent(srv), checkpoint=path)
    assert again.equals(first) and srv.request_count == 4
    with pytest.raises(CheckpointMismatchError):
        frame.aiforge.map("Shorten: {review}", agent=agent(srv), checkpoint=path)
    frame.aiforge.map("Shorten: {review}", agent=agent(srv), checkpoint=path, restart=True)
    assert srv.request_count == 8


def test_ctrl_c_in_a_running_loop_like_a_kernel_keeps_the_finished_rows(srv: LLMServer) -> None:
    srv.default = meter = Metered(answer_first=8)
    same = agent(srv)

    def interrupt_when_stuck() -> None:
        if srv.wait_for_requests(8 + CONCURRENCY, timeout=60):
            os.kill(os.getpid(), signal.SIGINT)

    async def cell() -> object:  # a Jupyter cell: run_batch goes through aiforge's background loop
        threading.Thread(target=interrupt_when_stuck, daemon=True).start()
        with pytest.raises(BatchInterrupted, match="8 of 20 items finished and are kept"):
            same.run_batch(ITEMS, concurrency=CONCURRENCY)
        return same.run_batch(ITEMS, concurrency=CONCURRENCY)

    # Not asyncio.run: it turns SIGINT into a task cancellation; a kernel raises KeyboardInterrupt.
    loop = asyncio.new_event_loop()
    try:
        assert_complete(loop.run_until_complete(cell()), meter)
    finally:
        loop.close()


def test_ctrl_c_then_the_same_batch_through_another_agent_of_the_same_settings_runs_only_the_rest(
    srv: LLMServer,
) -> None:
    srv.default = meter = Metered(answer_first=8)

    def interrupt_when_stuck() -> None:
        if srv.wait_for_requests(8 + CONCURRENCY, timeout=60):
            os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_when_stuck, daemon=True).start()
    with pytest.raises(BatchInterrupted, match="8 of 20 items finished and are kept"):
        agent(srv).run_batch(ITEMS, concurrency=CONCURRENCY)
    assert_complete(agent(srv).run_batch(ITEMS, concurrency=CONCURRENCY), meter)  # a new agent, as the accessor's
