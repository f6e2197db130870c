"""``python -m bench.eval_local.user_tool``: a user's own tool on the embedded model (issue 30, item 9).

``stock_level(sku)`` over five SKUs, described three ways (a Google-style ``Args:`` entry, a short one, a
one-line docstring; each gives the example "e.g. A-1001"), asked 20 questions each ("How many units of
D-4004 are in stock?", "Is D-4004 in stock?", ...), each by a fresh agent. Counted: answers holding the
right number (0 units: "out of stock", "not available", ...), turns whose calls were exactly one
``stock_level`` with the asked SKU, calls with a string value the question does not hold, and answers
that are tool-call text (JSON, ``name(...)``, one snake_case token).
"""

from __future__ import annotations

import argparse
import re
from typing import Any

INVENTORY = {"A-1001": 12, "B-2002": 0, "C-3003": 57, "D-4004": 3, "E-5005": 140}
DOCSTRINGS = {
    "args": "Return how many units of a product are in stock.\n\nArgs:\n    sku: The product's stock-keeping unit, "
    "e.g. A-1001.\n",
    "short args": "Stock level of a product.\n\nArgs:\n    sku: e.g. A-1001\n",
    "one line": "How many units of a SKU are in stock. sku: e.g. A-1001",
}
QUESTIONS = (
    "How many units of {sku} are in stock?",
    "What is the stock level of {sku}?",
    "Is {sku} in stock?",
    "Check the stock level for {sku}.",
)
TOOL_CALL_TEXT = re.compile(r"[{\[].*|[A-Za-z_][\w.]*\(.*\)|\S*[^\W_]_[^\W_]\S*", re.DOTALL)
OUT_OF_STOCK = re.compile(r"out of stock|not in stock|not available|no units|none", re.IGNORECASE)


def stock_tool(docstring: str) -> Any:
    def stock_level(sku: str) -> int:
        return INVENTORY.get(sku.strip().upper(), -1)

    stock_level.__doc__ = docstring
    return stock_level


def right(answer: str, units: int) -> bool:
    return re.search(rf"(?<![\w-]){units}(?![\w-])", answer) is not None or (
        units == 0 and bool(OUT_OF_STOCK.search(answer))
    )


def evaluate(docstring: str, count: int, verbose: bool) -> dict[str, int]:
    from aiforge import ChatAgent

    asked = [(q.format(sku=sku), sku) for q in QUESTIONS for sku in INVENTORY][:count]
    counts = {"questions": len(asked), "right": 0, "right call": 0, "ungrounded values": 0, "tool-call text": 0}
    for question, sku in asked:
        response = ChatAgent(provider="local", tools=[stock_tool(docstring)], memory="none").chat(question)
        calls = [(c.tool, c.input) for c in response.tool_calls]
        counts["right"] += right(response.message, INVENTORY[sku])
        counts["right call"] += calls == [("stock_level", {"sku": sku})]
        counts["ungrounded values"] += sum(
            isinstance(v, str) and v.lower() not in question.lower() for _, args in calls for v in args.values()
        )
        counts["tool-call text"] += TOOL_CALL_TEXT.fullmatch(response.message.strip()) is not None
        if verbose:
            print(f"  {question!r} -> {response.message!r} {calls}", flush=True)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.eval_local.user_tool", description=__doc__)
    parser.add_argument("--questions", type=int, default=20, help="questions per docstring (at most 20)")
    parser.add_argument("--verbose", action="store_true", help="print each answer and its calls")
    args = parser.parse_args()
    for name, docstring in DOCSTRINGS.items():
        counts = evaluate(docstring, args.questions, args.verbose)
        n = counts.pop("questions")
        print(f"{name}: " + ", ".join(f"{key} {value}/{n}" for key, value in counts.items()), flush=True)


if __name__ == "__main__":
    main()
