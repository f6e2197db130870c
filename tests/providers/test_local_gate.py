"""The embedded model's tool gate on chit-chat and on tool requests (issue 22, item 11).

The prompts are the local eval's (``bench/eval_local/items.py``), so the eval and this test judge the
same sets; the gate is pure Python, so this runs in well under a second.
"""

from __future__ import annotations

import pytest

from aiforge.chat.tool_runner import tool_spec
from aiforge.providers.local.tool_gate import relevant_tools
from aiforge.tools import builtin_tools
from bench.eval_local.items import CHIT_CHAT, GATE_TOOL_ITEMS, ITEMS


def offered(prompt: str) -> list[str]:
    specs = [tool_spec(tool) for tool in builtin_tools()]
    return [spec["name"] for spec in relevant_tools(specs, [{"role": "user", "content": prompt}])]


@pytest.mark.parametrize("prompt", ["Write a short poem about the sea, six lines.", "Tell me a short joke."])
def test_the_issues_chit_chat_gets_no_tool(prompt: str) -> None:
    assert offered(prompt) == []


def test_at_least_95_percent_of_the_chit_chat_set_gets_no_tool() -> None:
    given_tools = {prompt: names for prompt in CHIT_CHAT if (names := offered(prompt))}

    assert len(CHIT_CHAT) >= 20
    assert 1 - len(given_tools) / len(CHIT_CHAT) >= 0.95, given_tools


def test_every_calculator_item_of_the_eval_still_gets_the_calculator() -> None:
    calculations = [item.prompt for item in ITEMS if item.category == "tool"]

    assert calculations and all("calculator" in offered(prompt) for prompt in calculations)


def test_requests_for_the_other_tools_still_get_them() -> None:
    missed = [(prompt, tool) for prompt, tool in GATE_TOOL_ITEMS if tool not in offered(prompt)]

    # One miss, before and after the chit-chat rules: "pounds" is "lb" in the converter's description.
    assert missed == [("How many pounds is 3 kg?", "unit_converter")]


def test_a_facts_question_gets_no_tool() -> None:
    questions = [item.prompt for item in ITEMS if item.category == "no_tool"]

    assert {prompt: offered(prompt) for prompt in questions if offered(prompt)} == {}


@pytest.mark.parametrize(
    ("prompt", "tool"),
    [
        ("Thanks! Now convert 5 kg to pounds.", "unit_converter"),
        ("Good morning! What time is it in Tokyo?", "current_time"),
        ("Write a poem. Also, what time is it in Tokyo?", "current_time"),
        ("Hello! Can you tell me what 12 * 7 is?", "calculator"),
    ],
)
def test_small_talk_around_a_request_does_not_hide_the_request(prompt: str, tool: str) -> None:
    assert tool in offered(prompt)
