"""The contenders: aiforge and the peers, each doing one turn the way its documentation shows.

Every factory takes the server's base URL and returns a zero-argument callable that runs one
turn and returns the answer text. Nothing is shared between contenders except the server.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Callable
from typing import Any

from bench.common import (
    ANTHROPIC_MODEL,
    API_KEY,
    OPENAI_MODEL,
    PROMPT,
    SYSTEM,
    get_weather,
)

Turn = Callable[[], str]

WEATHER_SCHEMA = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
ANTHROPIC_WEATHER_SCHEMA = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "input_schema": WEATHER_SCHEMA["function"]["parameters"],
}


def weather_tool() -> Any:
    """``get_weather`` as a LangChain ``StructuredTool`` (what aiforge and LangGraph take)."""
    from langchain_core.tools import StructuredTool

    return StructuredTool.from_function(get_weather)


_loops: list[asyncio.AbstractEventLoop] = []


def persistent_loop() -> asyncio.AbstractEventLoop:
    """One event loop reused for every call of an async contender (as aiforge keeps its own).

    Kept alive to the end of the run: a loop collected with open connections logs errors.
    """
    loop = asyncio.new_event_loop()
    _loops.append(loop)
    return loop


def close_loops() -> None:
    """Finish the async generators SDK streams leave behind, then close every contender loop."""
    while _loops:
        loop = _loops.pop()
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


# ---------------------------------------------------------------------------
# aiforge
# ---------------------------------------------------------------------------


def aiforge_agent(base_url: str, *, provider: str = "openai", tools: bool = False, **kwargs: Any) -> Any:
    from aiforge import ChatAgent

    settings: dict[str, Any] = {"PROGRESS_BAR": False, "MAX_RETRIES": 0}
    if provider == "openai":
        settings |= {"OPENAI_API_KEY": API_KEY, "OPENAI_BASE_URL": base_url, "MODEL": OPENAI_MODEL}
    elif provider == "anthropic":
        settings |= {"ANTHROPIC_API_KEY": API_KEY, "ANTHROPIC_BASE_URL": base_url, "MODEL": ANTHROPIC_MODEL}
    return ChatAgent(
        system_prompt=SYSTEM, tools=[weather_tool()] if tools else None, provider=provider, **(settings | kwargs)
    )


# ---------------------------------------------------------------------------
# Raw SDKs: the baseline every overhead is measured against
# ---------------------------------------------------------------------------


def raw_openai(base_url: str) -> Any:
    import openai

    return openai.OpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)


def raw_openai_turn(base_url: str) -> Turn:
    client = raw_openai(base_url)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]

    def turn() -> str:
        response = client.chat.completions.create(model=OPENAI_MODEL, messages=messages)
        return response.choices[0].message.content

    return turn


def raw_openai_async_turn(base_url: str) -> Turn:
    import openai

    loop = persistent_loop()
    client = openai.AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]

    async def call() -> str:
        response = await client.chat.completions.create(model=OPENAI_MODEL, messages=messages)
        return response.choices[0].message.content

    return lambda: loop.run_until_complete(call())


def raw_openai_tool_turn(base_url: str) -> Turn:
    """The two calls of a tool turn by hand: ask, run the tool, send the result, get the answer."""
    client = raw_openai(base_url)

    def turn() -> str:
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]
        first = client.chat.completions.create(model=OPENAI_MODEL, messages=messages, tools=[WEATHER_SCHEMA])
        message = first.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls or ():
            output = get_weather(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
        second = client.chat.completions.create(model=OPENAI_MODEL, messages=messages, tools=[WEATHER_SCHEMA])
        return second.choices[0].message.content

    return turn


def raw_anthropic(base_url: str) -> Any:
    import anthropic

    return anthropic.Anthropic(base_url=base_url, api_key=API_KEY, max_retries=0)


def raw_anthropic_turn(base_url: str) -> Turn:
    client = raw_anthropic(base_url)

    def turn() -> str:
        response = client.messages.create(
            model=ANTHROPIC_MODEL, max_tokens=1024, system=SYSTEM, messages=[{"role": "user", "content": PROMPT}]
        )
        return response.content[0].text

    return turn


def raw_anthropic_tool_turn(base_url: str) -> Turn:
    client = raw_anthropic(base_url)
    tools = [ANTHROPIC_WEATHER_SCHEMA]

    def turn() -> str:
        messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
        first = client.messages.create(
            model=ANTHROPIC_MODEL, max_tokens=1024, system=SYSTEM, messages=messages, tools=tools
        )
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]})
        results = [
            {"type": "tool_result", "tool_use_id": b.id, "content": get_weather(**b.input)}
            for b in first.content
            if b.type == "tool_use"
        ]
        messages.append({"role": "user", "content": results})
        second = client.messages.create(
            model=ANTHROPIC_MODEL, max_tokens=1024, system=SYSTEM, messages=messages, tools=tools
        )
        return "".join(b.text for b in second.content if b.type == "text")

    return turn


# ---------------------------------------------------------------------------
# Frameworks
# ---------------------------------------------------------------------------


def chat_openai(base_url: str) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model=OPENAI_MODEL, base_url=base_url, api_key=API_KEY, max_retries=0)


def langchain_turn(base_url: str) -> Turn:
    llm = chat_openai(base_url)
    messages = [("system", SYSTEM), ("human", PROMPT)]
    return lambda: llm.invoke(messages).content


def langchain_tool_turn(base_url: str) -> Turn:
    """ChatOpenAI with the tool bound, the tool loop written by hand (LangChain's documented pattern)."""
    from langchain_core.messages import HumanMessage, SystemMessage

    tool = weather_tool()
    llm = chat_openai(base_url).bind_tools([tool])

    def turn() -> str:
        messages: list[Any] = [SystemMessage(SYSTEM), HumanMessage(PROMPT)]
        reply = llm.invoke(messages)
        messages.append(reply)
        for call in reply.tool_calls:
            messages.append(tool.invoke(call))
        return llm.invoke(messages).content

    return turn


def react_agent(base_url: str, tools: list[Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent may be marked deprecated in favour of langchain's
        from langgraph.prebuilt import create_react_agent

        return create_react_agent(chat_openai(base_url), tools=tools, prompt=SYSTEM)


def langgraph_prebuilt_turn(base_url: str, *, tools: bool = False) -> Turn:
    agent = react_agent(base_url, [weather_tool()] if tools else [])
    return lambda: agent.invoke({"messages": [{"role": "user", "content": PROMPT}]})["messages"][-1].content


def pydantic_ai_agent(base_url: str, *, tools: bool = False) -> Any:
    import openai
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    client = openai.AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)
    model = OpenAIChatModel(OPENAI_MODEL, provider=OpenAIProvider(openai_client=client))
    return Agent(model, system_prompt=SYSTEM, tools=[get_weather] if tools else ())


def pydantic_ai_turn(base_url: str, *, tools: bool = False) -> Turn:
    agent = pydantic_ai_agent(base_url, tools=tools)
    loop = persistent_loop()

    def turn() -> str:
        # run_sync runs on the thread's current loop, and LangGraph's ainvoke (aiforge, the bare
        # graph) sets the current loop to its own: give pydantic-ai back the loop its client lives on.
        asyncio.set_event_loop(loop)
        return agent.run_sync(PROMPT).output

    return turn


# ---------------------------------------------------------------------------
# The floor of a LangGraph design: a bare two-node graph, no model
# ---------------------------------------------------------------------------


def bare_graph() -> Any:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        messages: list[dict[str, Any]]

    def first(state: State) -> dict[str, Any]:
        return {"messages": [*state["messages"], {"role": "assistant", "content": "a"}]}

    def second(state: State) -> dict[str, Any]:
        return {"messages": [*state["messages"], {"role": "assistant", "content": "b"}]}

    graph = StateGraph(State)
    graph.add_node("first", first)
    graph.add_node("second", second)
    graph.add_edge(START, "first")
    graph.add_edge("first", "second")
    graph.add_edge("second", END)
    return graph.compile()


def bare_graph_invoke() -> Callable[[], Any]:
    graph = bare_graph()
    state = {"messages": [{"role": "user", "content": PROMPT}]}
    return lambda: graph.invoke(state)


def bare_graph_ainvoke() -> Callable[[], Any]:
    graph = bare_graph()
    loop = persistent_loop()
    state = {"messages": [{"role": "user", "content": PROMPT}]}
    return lambda: loop.run_until_complete(graph.ainvoke(state))
