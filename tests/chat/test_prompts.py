"""Prompt resolution: per-call > constructor > aiforge.yaml ``chat: system_prompt:`` > built-in default."""

from __future__ import annotations

import json

import pytest

from aiforge import ChatAgent, register_provider
from aiforge.chat.prompts import DEFAULT_SYSTEM_PROMPT, SUMMARIZE_MEMORY_PROMPT, TOOL_USE_SYSTEM
from aiforge.providers.function import FunctionProvider
from aiforge.providers.scripted import ScriptedProvider

# Custom function providers have no price table entry: their unpriced-cost warning is expected here.
pytestmark = pytest.mark.filterwarnings("ignore:aiforge has no price:UserWarning")


def system_sent(fake: ScriptedProvider, call: int = -1) -> str:
    first = fake.calls[call].messages[0]
    assert first["role"] == "system"
    return first["content"]


@pytest.fixture
def yaml_prompt(tmp_path) -> str:
    prompt = "You are the YAML-configured assistant."
    (tmp_path / "aiforge.yaml").write_text(f'chat:\n  system_prompt: "{prompt}"\n')
    return prompt


def test_default_prompt_is_the_documented_text() -> None:
    assert DEFAULT_SYSTEM_PROMPT == (
        "You are a helpful AI assistant. Answer questions clearly and concisely. "
        "If you don't know something, say so honestly."
    )


def test_without_any_prompt_the_default_is_sent() -> None:
    fake = ScriptedProvider()
    agent = ChatAgent(provider=fake)

    agent.chat("hi")

    assert agent.system_prompt == DEFAULT_SYSTEM_PROMPT
    assert system_sent(fake) == DEFAULT_SYSTEM_PROMPT


def test_yaml_chat_system_prompt_beats_the_default(yaml_prompt: str) -> None:
    fake = ScriptedProvider()
    agent = ChatAgent(provider=fake)

    agent.chat("hi")

    assert agent.system_prompt == yaml_prompt
    assert system_sent(fake) == yaml_prompt


def test_constructor_prompt_beats_yaml(yaml_prompt: str) -> None:
    fake = ScriptedProvider()
    agent = ChatAgent(provider=fake, system_prompt="You are a customer service agent for Acme Corp.")

    agent.chat("hi")

    assert system_sent(fake) == "You are a customer service agent for Acme Corp."


def test_per_call_prompt_beats_constructor_for_that_turn_only(yaml_prompt: str) -> None:
    fake = ScriptedProvider()
    agent = ChatAgent(provider=fake, system_prompt="Constructor prompt.")

    agent.chat("Translate 'hello' to Spanish", system_prompt="You are a professional translator.")
    agent.chat("And 'goodbye'?")

    assert system_sent(fake, 0) == "You are a professional translator."
    assert system_sent(fake, 1) == "Constructor prompt."
    assert agent.system_prompt == "Constructor prompt."


def test_per_call_prompt_beats_yaml_and_default(yaml_prompt: str) -> None:
    fake = ScriptedProvider()
    agent = ChatAgent(provider=fake)

    agent.chat("hi", system_prompt="Per call.")

    assert system_sent(fake) == "Per call."


async def test_per_call_prompt_applies_to_achat() -> None:
    fake = ScriptedProvider()
    agent = ChatAgent(provider=fake)

    await agent.achat("hi", system_prompt="Async per call.")

    assert system_sent(fake) == "Async per call."


async def test_per_call_prompt_applies_to_chat_stream() -> None:
    fake = ScriptedProvider()
    agent = ChatAgent(provider=fake)

    _ = [chunk async for chunk in agent.chat_stream("hi", system_prompt="Streamed per call.")]

    assert system_sent(fake) == "Streamed per call."


def test_yaml_with_an_unknown_chat_key_is_a_config_error(tmp_path) -> None:
    from aiforge.core.types import ConfigError

    (tmp_path / "aiforge.yaml").write_text("chat:\n  system_promt: typo\n")

    with pytest.raises(ConfigError):
        ChatAgent(provider=ScriptedProvider())


def test_native_tool_providers_get_no_tool_instructions_in_the_prompt(calc_tool) -> None:
    fake = ScriptedProvider()
    agent = ChatAgent(provider=fake, tools=[calc_tool], system_prompt="Base.")

    agent.chat("hi")

    assert agent.system_prompt == "Base."
    assert system_sent(fake) == "Base."
    assert [t["name"] for t in fake.calls[0].tools] == ["calculator"]


def test_custom_function_provider_gets_tool_instructions_appended(calc_tool) -> None:
    seen = []

    def my_llm(messages, **params):
        seen.append(messages)
        return "plain answer"

    register_provider("test_prompts_fn", my_llm)
    agent = ChatAgent(provider="test_prompts_fn", tools=[calc_tool], system_prompt="Base.")

    agent.chat("hi")

    system = seen[0][0]["content"]
    assert system.startswith("Base.\n\n")
    assert "- calculator: Evaluate math" in system and '{"tool": "<tool name>"' in system
    assert agent.system_prompt == system


def test_tool_instructions_are_appended_to_a_per_call_prompt_too(calc_tool) -> None:
    seen = []
    agent = ChatAgent(provider=FunctionProvider(lambda messages, **_: seen.append(messages) or "ok"), tools=[calc_tool])

    agent.chat("hi", system_prompt="Per call.")

    assert seen[0][0]["content"].startswith("Per call.\n\nYou can use these tools:")


def test_native_tools_false_puts_instructions_in_the_prompt_and_sends_no_tools(calc_tool) -> None:
    fake = ScriptedProvider()
    agent = ChatAgent(provider=fake, tools=[calc_tool], native_tools=False)

    agent.chat("hi")

    assert "You can use these tools:" in system_sent(fake)
    assert fake.calls[0].tools is None


def test_tool_instructions_list_each_tools_arguments(calc_tool) -> None:
    agent = ChatAgent(provider=ScriptedProvider(), tools=[calc_tool], native_tools=False)

    assert '- calculator: Evaluate math Arguments: {"expression": "string"}' in agent.system_prompt


def test_tool_use_template_shows_the_documented_json_shape() -> None:
    text = TOOL_USE_SYSTEM.format(tool_list="- weather: Get weather")
    example = text[text.index("{") : text.index("}}") + 2]

    assert json.loads(example.replace("<tool name>", "weather").replace("{<arguments>}", "{}")) == {
        "tool": "weather",
        "input": {},
    }


def test_summary_prompt_asks_for_at_most_the_word_limit() -> None:
    text = SUMMARIZE_MEMORY_PROMPT.format(max_words=500, previous="", transcript="User: hi")

    assert "at most 500 words" in text and text.rstrip().endswith("Summary:")
