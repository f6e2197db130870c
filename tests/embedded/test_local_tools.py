"""A user's own tool on the embedded model: real values in, the tool's result out (issue 22, item 2).

Before the fix, 6 of 6 tries answered the literal ``<your answer>`` copied from the reply
protocol's instructions, and some called the tool with ``{"order_id": "{{order_id}}"}``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from aiforge import ChatAgent
from aiforge.providers.local import weights
from aiforge.providers.local.weights import find_default_weights

if not weights.xllamacpp_installed() or find_default_weights() is None:
    pytest.skip(f"the embedded model is not installed: {weights.INSTALL_HINT}", allow_module_level=True)

pytestmark = pytest.mark.embedded

PLACEHOLDER = re.compile(r"<[^<>]*>|\{\{|\}\}|your answer", re.IGNORECASE)


def order_status(order_id: str) -> str:
    """Look up the shipping status of an order.

    Args:
        order_id: The order's id, like A-1001.
    """
    return {"A-1001": "delivered", "A-1002": "shipped on 2 Dec, arriving 5 Dec"}.get(order_id, "unknown order")


@pytest.mark.parametrize("attempt", range(3))
def test_a_plain_function_tool_is_called_with_real_values_and_its_result_answers(attempt: int) -> None:
    agent = ChatAgent(provider="local", tools=[order_status], memory="none")  # a fresh agent, default temperature

    response = agent.chat("What is the shipping status of order A-1002?")

    assert not PLACEHOLDER.search(response.message), response.message
    for call in response.tool_calls:
        assert not any(PLACEHOLDER.search(str(value)) for value in call.input.values()), call.input
    assert [(c.tool, c.input) for c in response.tool_calls] == [("order_status", {"order_id": "A-1002"})]
    assert re.search(r"shipped|5 dec", response.message, re.IGNORECASE), response.message


# --- issue 30, item 9: a code the question holds, never a variant of the docstring's example ---------------------

INVENTORY = {"A-1001": 12, "B-2002": 0, "C-3003": 57, "D-4004": 3, "E-5005": 140}
# Written as a user would, independently of aiforge's own check: JSON, a call, or one snake_case token.
TOOL_CALL_TEXT = re.compile(r"[{\[].*|[A-Za-z_][\w.]*\(.*\)|\S*[^\W_]_[^\W_]\S*|\S*stock_level\S*", re.DOTALL)


def stock_level(sku: str) -> int:
    """Return how many units of a product are in stock.

    Args:
        sku: The product's stock-keeping unit, e.g. A-1001.
    """
    return INVENTORY.get(sku.strip().upper(), -1)


def stock_level_terse(sku: str) -> int:
    """How many units of a SKU are in stock. sku: e.g. A-1001"""
    return INVENTORY.get(sku.strip().upper(), -1)


@pytest.mark.parametrize("tool", [stock_level, stock_level_terse])
@pytest.mark.parametrize("sku", sorted(INVENTORY))
def test_a_user_s_tool_gets_the_code_the_question_holds_and_the_answer_is_words(sku: str, tool: Any) -> None:
    question = f"How many units of {sku} are in stock?"
    agent = ChatAgent(provider="local", tools=[tool], memory="none")

    response = agent.chat(question)

    assert not TOOL_CALL_TEXT.fullmatch(response.message.strip()), response.message
    for call in response.tool_calls:
        for value in call.input.values():
            assert not isinstance(value, str) or value.lower() in question.lower(), call.input
    assert [(c.tool, c.input) for c in response.tool_calls] == [(tool.__name__, {"sku": sku})]
