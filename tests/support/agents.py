"""Agents on the fake server (``fakellm``) through the real SDKs, as tests build them."""

from __future__ import annotations

from aiforge.chat.agent import ChatAgent
from fakellm import LLMServer


def openai_agent(server: LLMServer, **settings: object) -> ChatAgent:
    """An agent on ``server``'s OpenAI endpoint, no retries (a test counts every request)."""
    return ChatAgent(
        provider="openai", OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=server.openai_base_url, MAX_RETRIES=0, **settings
    )
