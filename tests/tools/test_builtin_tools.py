"""The built-in tools as a set: ``aiforge.tools.builtin_tools()`` and what every tool tells the model."""

from __future__ import annotations

from aiforge.tools import BUILTIN_TOOLS, builtin_tools


def test_builtin_tools_are_named_for_the_model() -> None:
    assert [tool.name for tool in BUILTIN_TOOLS] == ["calculator", "unit_converter", "current_time", "research"]


def test_every_builtin_tool_describes_itself_and_its_arguments() -> None:
    for tool in BUILTIN_TOOLS:
        assert len(tool.description) > 40, tool.name
        for name, schema in tool.args.items():
            assert schema.get("description"), f"{tool.name}.{name}"


def test_builtin_tools_returns_a_fresh_list_each_call() -> None:
    tools = builtin_tools()
    tools.clear()
    assert builtin_tools() == BUILTIN_TOOLS
    assert builtin_tools() is not builtin_tools()
