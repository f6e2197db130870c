"""Connections and event loops end with the loop or thread that used them: nothing is left for the garbage
collector to report as an unclosed socket or event loop (issue 23's ``filterwarnings = error`` found both)."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import warnings

import pytest

from fakellm import LLMServer
from tests.reliability.conftest import client_sockets, make_agent


def resource_warnings() -> list[str]:
    """What collecting the garbage now reports as unclosed."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]


def test_a_client_used_under_asyncio_run_is_closed_when_that_loop_ends(srv: LLMServer, protocol: str) -> None:
    agent = make_agent(srv, protocol)
    for question in ("first loop", "second loop"):  # each asyncio.run is a loop of its own, with its own client
        assert asyncio.run(agent.achat(question)).message == f"echo: {question}"
        # The loop's shutdown closed its client: no connection of this process to the server stays open.
        assert client_sockets(srv) == 0
    assert resource_warnings() == []


def test_a_thread_that_ends_ends_its_private_loop_and_closes_its_connections(srv: LLMServer, protocol: str) -> None:
    agent = make_agent(srv, protocol)
    answers: list[str] = []
    worker = threading.Thread(target=lambda: answers.append(agent.chat("from a thread").message))
    worker.start()
    worker.join(60)
    assert answers == ["echo: from a thread"]
    del worker  # the thread is gone: its loop is ended on a thread of its own
    deadline = time.monotonic() + 60
    while client_sockets(srv) and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.05)
    assert client_sockets(srv) == 0
    assert resource_warnings() == []


@pytest.mark.parametrize("protocol", ["openai"])
def test_the_same_agent_keeps_its_connection_between_sync_calls(srv: LLMServer, protocol: str) -> None:
    agent = make_agent(srv, protocol)
    for question in ("one", "two", "three"):
        agent.chat(question)
    assert len({request.client for request in srv.requests}) == 1  # one pooled connection served all three
