"""The reference page's home of the LangGraph graph; it lives in ``aiforge.chat.graph``."""

from aiforge.chat.graph import ChatAgentState, build_chat_graph, should_continue_after_tool, should_use_tools

__all__ = ["ChatAgentState", "build_chat_graph", "should_continue_after_tool", "should_use_tools"]
