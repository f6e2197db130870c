"""Built-in tools for the chat agent: calculator, unit converter, clock and Wikipedia research.

Each is a LangChain ``StructuredTool``, usable with any agent: ``from aiforge.tools import calculator``.
Every tool returns text and never raises: a failure comes back as a message starting with "Error:",
because the agent feeds tool output to the model, which can then correct its call.

Importing this package imports ``langchain_core``; ``import aiforge`` does not import it.
"""

from __future__ import annotations

from langchain_core.tools import StructuredTool

from aiforge.tools.calculator import calculator
from aiforge.tools.clock import current_time
from aiforge.tools.research import make_research_tool, research
from aiforge.tools.units import unit_converter

BUILTIN_TOOLS: list[StructuredTool] = [calculator, unit_converter, current_time, research]


def builtin_tools() -> list[StructuredTool]:
    """Return a new list of the built-in tools, safe to extend or reorder."""
    return list(BUILTIN_TOOLS)


__all__ = [
    "BUILTIN_TOOLS",
    "builtin_tools",
    "calculator",
    "current_time",
    "make_research_tool",
    "research",
    "unit_converter",
]
