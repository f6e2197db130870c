"""Plain Python functions as tools: name, description, argument docs and schema from the function."""

from __future__ import annotations

import asyncio
from typing import Literal

import pytest
from langchain_core.tools import StructuredTool
from pydantic import BaseModel

from aiforge import ChatAgent
from aiforge.chat.tool_runner import function_tool
from aiforge.providers.scripted import ScriptedProvider, tool_call


def convert(amount: float, unit: Literal["km", "mi"] = "km", precision: int | None = None) -> str:
    """Convert a distance.

    Args:
        amount: The distance to convert.
        unit: The unit of ``amount``.
        precision: Digits after the point.
    """
    factor = 0.621371 if unit == "km" else 1.609344
    value = amount * factor
    return str(round(value, precision) if precision is not None else value)


async def double(x: int) -> int:
    """Double a number.

    Args:
        x: The number.
    """
    await asyncio.sleep(0)
    return 2 * x


def spec_of(agent: ChatAgent, name: str) -> dict:
    return next(s for s in agent.request_context.tools if s["name"] == name)


def test_name_description_and_argument_docs_come_from_the_function() -> None:
    agent = ChatAgent(provider=ScriptedProvider(), tools=[convert])

    spec = spec_of(agent, "convert")
    properties = spec["parameters"]["properties"]
    assert spec["description"] == "Convert a distance."
    assert properties["amount"] == {"description": "The distance to convert.", "title": "Amount", "type": "number"}
    assert properties["unit"]["enum"] == ["km", "mi"] and properties["unit"]["default"] == "km"
    assert properties["precision"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    assert properties["precision"]["description"] == "Digits after the point."
    assert spec["parameters"]["required"] == ["amount"]


def test_a_plain_function_runs_when_the_model_calls_it() -> None:
    fake = ScriptedProvider([tool_call("convert", amount=10, unit="mi", precision=2), "done"])
    agent = ChatAgent(provider=fake, tools=[convert])

    response = agent.chat("how far?")

    assert [(r.tool, r.output, r.error) for r in response.tool_calls] == [("convert", "16.09", False)]


def test_an_async_function_is_awaited() -> None:
    fake = ScriptedProvider([tool_call("double", x=21), "done"])
    agent = ChatAgent(provider=fake, tools=[double])

    response = agent.chat("double 21")

    assert response.tool_calls[0].output == "42"
    assert spec_of(agent, "double")["parameters"]["properties"]["x"]["description"] == "The number."


def test_arguments_that_do_not_match_the_type_hints_go_back_to_the_model() -> None:
    fake = ScriptedProvider([tool_call("convert", amount="far"), "sorry"])
    agent = ChatAgent(provider=fake, tools=[convert])

    record = agent.chat("how far?").tool_calls[0]

    assert record.error and record.output.startswith("Error: invalid arguments: amount")


class Point(BaseModel):
    x: float
    y: float


def test_pydantic_argument_types_become_nested_schemas() -> None:
    def distance(a: Point, b: Point) -> float:
        """Distance between two points."""
        return ((a.x - b.x) ** 2 + (a.y - b.y) ** 2) ** 0.5

    fake = ScriptedProvider([tool_call("distance", a={"x": 0, "y": 0}, b={"x": 3, "y": 4}), "5"])
    agent = ChatAgent(provider=fake, tools=[distance])

    assert agent.chat("?").tool_calls[0].output == "5.0"
    assert "Point" in str(spec_of(agent, "distance")["parameters"])


def test_a_function_without_a_docstring_is_described_by_its_name() -> None:
    def lookup(key: str) -> str:
        return key

    assert function_tool(lookup).description == "lookup"


def test_a_numpy_style_docstring_is_the_whole_description() -> None:
    def area(width: float, height: float) -> float:
        """Area of a rectangle.

        Parameters
        ----------
        width : float
            Width in metres.
        height : float
            Height in metres.
        """
        return width * height

    tool = function_tool(area)

    assert tool.description.startswith("Area of a rectangle.") and "Width in metres." in tool.description


def test_a_docstring_naming_a_missing_argument_is_a_value_error_naming_the_tool() -> None:
    def scale(x: float) -> float:
        """Scale.

        Args:
            y: not an argument of scale.
        """
        return x

    with pytest.raises(ValueError, match="tool 'scale'.*y"):
        ChatAgent(provider=ScriptedProvider(), tools=[scale])


def test_a_lambda_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="define it with def"):
        ChatAgent(provider=ScriptedProvider(), tools=[lambda x: x])


def test_langchain_tools_and_functions_mix_and_names_stay_unique() -> None:
    named = StructuredTool.from_function(convert, name="convert", description="LangChain's convert")

    agent = ChatAgent(provider=ScriptedProvider(), tools=[named, double])
    assert [t.name for t in agent.tools] == ["convert", "double"]
    assert agent.tools[0] is named
    with pytest.raises(ValueError, match="unique"):
        ChatAgent(provider=ScriptedProvider(), tools=[named, convert])


def test_builtin_tools_import_from_aiforge_tools() -> None:
    from aiforge.tools import calculator, current_time, research, unit_converter

    agent = ChatAgent(provider=ScriptedProvider(), tools=[calculator, unit_converter, current_time, research])
    assert [t.name for t in agent.tools] == ["calculator", "unit_converter", "current_time", "research"]
