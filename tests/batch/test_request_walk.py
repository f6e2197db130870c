"""The walk of ``output=`` from ``df.aiforge.map`` to the provider request (issue 31): a row of an agent without
tools goes from the worker pool through ``batch/request/`` to the provider, never back up into ``chat/``; a row of
an agent with tools runs on the LangGraph loop (``chat/graph.py``), as the spec promises.

The stack is read inside the provider, at the request: every aiforge module the call passed through, outermost
first. Below the first ``batch/`` frame no ``chat/`` frame may appear (a climb back up to a caller).
"""

from __future__ import annotations

import inspect
import itertools
import weakref
from pathlib import Path
from typing import Any

import pandas as pd
from langchain_core.tools import StructuredTool
from pydantic import BaseModel

import aiforge
from aiforge import ChatAgent, ProviderError, register_provider

ROOT = Path(aiforge.__file__).parent
_names = itertools.count()


class Verdict(BaseModel):
    positive: bool


def probe(walks: list[list[str]], reply: str = '{"positive": true}') -> str:
    """A registered provider that answers ``reply`` and keeps, for each request, the aiforge modules on the stack."""

    async def answer(messages: list[dict[str, Any]], **params: Any) -> str:
        frames = [Path(frame.filename) for frame in reversed(inspect.stack())]
        walks.append([str(path.relative_to(ROOT)) for path in frames if path.is_relative_to(ROOT)])
        return reply

    name = f"walk_probe_{next(_names)}"
    register_provider(name, answer)
    return name


def climbs(walk: list[str]) -> list[str]:
    """The ``chat/`` modules the request passed through after it entered ``batch/`` from the accessor (the
    accessor's own decorators, ``batch/options.with_options`` among them, wrap the call before it starts)."""
    accessor = max((i for i, module in enumerate(walk) if module.startswith("dataframes/")), default=0)
    entered = next((i for i, module in enumerate(walk) if i > accessor and module.startswith("batch/")), len(walk))
    return [module for module in walk[entered:] if module.startswith("chat/")]


def files(walk: list[str]) -> list[str]:
    """The modules of ``walk`` in order, each once."""
    return list(dict.fromkeys(walk))


def test_a_map_row_of_an_agent_without_tools_reaches_the_provider_without_climbing_into_chat() -> None:
    walks: list[list[str]] = []
    reviews = pd.DataFrame({"review": ["good", "great", "fine"]})

    out = reviews.aiforge.map("Is this positive? {review}", output=Verdict, provider=probe(walks), cache=False)

    assert list(out["positive"]) == [True, True, True] and len(walks) == 3
    for walk in walks:
        assert not climbs(walk), f"a row climbed back into chat/: {files(walk)}"
        # From the worker pool to the provider: the pool, the one request module, then the provider.
        # From the accessor's method down (its decorators in dataframes/results.py and batch/options.py wrap the
        # call and hand it on untouched): six aiforge files, then the provider.
        from_method = files(walk)[files(walk).index("dataframes/row_operations.py") :]
        assert from_method[: from_method.index("providers/prompted.py")] == [
            "dataframes/row_operations.py", "batch/orchestrator.py", "core/aio.py", "batch/runner.py",
            "batch/request/answer.py", "batch/request/call.py",
        ]
        below_pool = files(walk)[files(walk).index("batch/runner.py") :]
        assert below_pool == [
            "batch/runner.py", "batch/request/answer.py", "batch/request/call.py",
            "providers/prompted.py", "providers/function.py",
        ]


def test_a_batch_row_with_a_label_output_and_a_retry_stays_below_chat_too() -> None:
    walks: list[list[str]] = []
    replies = iter(['{"positive": "nope"}', '{"positive": false}'])
    name = probe(walks)

    async def retried(messages: list[dict[str, Any]], **params: Any) -> str:
        frames = [Path(frame.filename) for frame in reversed(inspect.stack())]
        walks.append([str(path.relative_to(ROOT)) for path in frames if path.is_relative_to(ROOT)])
        return next(replies)

    register_provider(name, retried)
    batch = ChatAgent(provider=name).run_batch(["Was it good?"], output=Verdict)

    assert batch.results[0].output == Verdict(positive=False) and len(walks) == 2  # the retry with feedback
    assert [r["step"] for r in batch.results[0].trace if r["step"] != "queue"] == [
        "model", "validation", "model", "validation"
    ]
    assert all(not climbs(walk) for walk in walks)


def test_a_row_of_an_agent_with_tools_runs_on_the_langgraph_loop() -> None:
    walks: list[list[str]] = []
    echo = StructuredTool.from_function(lambda x: x, name="echo", description="Echo")

    batch = ChatAgent(provider=probe(walks, reply="fine"), tools=[echo]).run_batch(["hi"])

    assert batch.results[0].message == "fine"
    assert "chat/graph.py" in walks[0] and "batch/request/call.py" in walks[0]


def test_a_chat_turn_without_tools_makes_its_request_from_the_graph_route_node() -> None:
    walks: list[list[str]] = []

    ChatAgent(provider=probe(walks, reply="hello")).chat("hi")

    assert files(walks[0])[-4:] == [
        "chat/graph.py", "batch/request/call.py", "providers/prompted.py", "providers/function.py"
    ]


def test_a_row_whose_model_asks_for_a_tool_the_agent_lacks_fails_saying_so() -> None:
    """Only a scripted provider can: no tools are sent. The graph is not there to answer the call, so the row fails."""
    from aiforge.providers.scripted import ScriptedProvider, tool_call

    agent = ChatAgent(provider=ScriptedProvider([tool_call("echo", x="1"), "fine"]))
    batch = agent.run_batch(["hi"])

    assert batch.results == [] and len(batch.failed) == 1
    error = batch.failed[0].error
    assert isinstance(error, ProviderError)
    assert "asked for tools (echo) the agent does not have; give the agent tools= to run them" in str(error)


def test_a_row_below_chat_is_still_the_agents_last_response_and_logged_as_a_batch_item(tmp_path: Path) -> None:
    walks: list[list[str]] = []
    store = tmp_path / "store.sqlite"
    agent = ChatAgent(provider=probe(walks, reply="fine"), STORE=store)

    batch = agent.run_batch(["hi"])

    assert agent.last_response is batch.results[0]
    (row,) = aiforge.logs(store=store).to_dict("records")
    assert (row["kind"], row["prompt"], row["reply"]) == ("batch", "hi", "fine")


def test_an_agent_is_freed_once_dropped_though_its_request_context_sets_its_last_response() -> None:
    agent = ChatAgent(provider=probe([], reply="fine"), log=False)
    agent.run_batch(["hi"])
    dropped = weakref.ref(agent)

    del agent

    assert dropped() is None  # by reference count, no cycle left for the garbage collector
