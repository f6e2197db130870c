"""Ctrl-C on ``df.aiforge.map`` without ``agent=``, then the same call: only the rest is asked (issue 22 item 1).

The accessor builds a new agent per call, so what an interrupted call finished must outlive its agent. The
requests are counted at the boundary (the fake OpenAI server); the interrupt is a real SIGINT, sent once the
server has answered ``ANSWER_FIRST`` rows and holds the next ``CONCURRENCY`` (which are never answered).
"""

from __future__ import annotations

import os
import signal
import threading
from collections import Counter
from collections.abc import Iterator

import pandas as pd
import pytest
from pydantic import BaseModel

from aiforge.core.errors import BatchInterrupted
from fakellm import Fault, LLMServer, RecordedRequest, Reply

KEY = "sk-test-key-never-stored-0123456789"
ROWS = 20
ANSWER_FIRST = 6
CONCURRENCY = 4
PROMPT = "Review: {review}"


class Summary(BaseModel):
    gist: str


class InterruptingServer:
    """Answers the first ``ANSWER_FIRST`` requests, holds the next ``CONCURRENCY`` and sends this process a
    SIGINT (a kernel's interrupt) once all of them are held; after that, answers everything. Counts answers."""

    def __init__(self, server: LLMServer) -> None:
        self.server = server
        self.seen = 0
        self.answered: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, req: RecordedRequest) -> Reply | Fault:
        review = req.last_user_text.removeprefix("Review: ")
        with self.lock:
            self.seen += 1
            held = ANSWER_FIRST < self.seen <= ANSWER_FIRST + CONCURRENCY
            if not held:
                self.answered[review] += 1
        if held:
            if self.seen == ANSWER_FIRST + CONCURRENCY:
                os.kill(os.getpid(), signal.SIGINT)
            return Fault(hang=True)
        return Reply(output={"gist": f"gist of {review}"})


@pytest.fixture
def srv() -> Iterator[LLMServer]:
    with LLMServer() as server:
        yield server


def frame() -> pd.DataFrame:
    reviews = [f"review {i}" for i in range(ROWS)]
    return pd.DataFrame({"review": reviews}, index=pd.Index([f"r{100 + i}" for i in range(ROWS)], name="id"))


def settings(server: LLMServer, **more: object) -> dict[str, object]:
    return dict(provider="openai", OPENAI_API_KEY=KEY, OPENAI_BASE_URL=server.openai_base_url, MAX_RETRIES=0, **more)


def test_the_same_accessor_call_after_ctrl_c_asks_only_the_rest(srv: LLMServer) -> None:
    srv.default = meter = InterruptingServer(srv)
    reviews = frame()

    with pytest.raises(BatchInterrupted, match=f"{ANSWER_FIRST} of {ROWS} items finished and are kept") as stop:
        reviews.aiforge.map(PROMPT, output=Summary, concurrency=CONCURRENCY, **settings(srv))
    assert (stop.value.finished, stop.value.total) == (ANSWER_FIRST, ROWS)
    answers = reviews.aiforge.map(PROMPT, output=Summary, concurrency=CONCURRENCY, **settings(srv))

    assert sum(meter.answered.values()) == ROWS  # every row paid once over both calls
    assert meter.answered == Counter(reviews["review"])
    assert answers.index.equals(reviews.index)
    assert answers["gist"].tolist() == [f"gist of {review}" for review in reviews["review"]]
    assert not answers.attrs["aiforge"].failed


def test_a_call_with_other_settings_does_not_take_the_kept_rows(srv: LLMServer) -> None:
    srv.default = meter = InterruptingServer(srv)
    reviews = frame()

    with pytest.raises(BatchInterrupted):
        reviews.aiforge.map(PROMPT, output=Summary, concurrency=CONCURRENCY, **settings(srv, TEMPERATURE=0.1))
    other = reviews.aiforge.map(PROMPT, output=Summary, concurrency=CONCURRENCY, **settings(srv, TEMPERATURE=0.2))

    assert sum(meter.answered.values()) == ANSWER_FIRST + ROWS  # another batch: every row asked again
    assert other["gist"].notna().all()
