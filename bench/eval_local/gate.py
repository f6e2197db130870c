"""The tool gate alone, without the model: ``python -m bench.eval_local --gate`` (pure Python, instant).

Which built-in tools ``relevant_tools`` offers for each prompt: chit-chat should get none (the share
that gets none is the gate's precision on chit-chat), tool requests the tool they need (recall).
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.eval_local.items import CHIT_CHAT, GATE_TOOL_ITEMS, ITEMS


@dataclass
class GateScores:
    chit_chat_without_tools: float
    """Share of chit-chat prompts offered no tool (target >= 95%)."""
    no_tool_without_tools: float
    """Share of the eval's ``no_tool`` questions (facts, greetings) offered no tool."""
    calculator_recall: float
    """Share of the eval's ``tool`` items (all calculator) offered the calculator."""
    other_tool_recall: float
    """Share of ``GATE_TOOL_ITEMS`` offered the tool they need."""
    offered_to_chit_chat: list[tuple[str, list[str]]]
    missed: list[tuple[str, str]]


def offered(prompt: str) -> list[str]:
    """Names of the built-in tools the gate offers for ``prompt`` as the latest user message."""
    from aiforge.chat.tool_runner import tool_spec
    from aiforge.providers.local.tool_gate import relevant_tools
    from aiforge.tools import builtin_tools

    specs = [tool_spec(tool) for tool in builtin_tools()]
    return [spec["name"] for spec in relevant_tools(specs, [{"role": "user", "content": prompt}])]


def score_gate() -> GateScores:
    """How the gate does on the chit-chat set and the tool requests."""
    chat = [(prompt, offered(prompt)) for prompt in CHIT_CHAT]
    no_tool = [offered(item.prompt) for item in ITEMS if item.category == "no_tool"]
    calculator = [(item.prompt, "calculator") for item in ITEMS if item.category == "tool"]
    missed_calculator = [(p, t) for p, t in calculator if t not in offered(p)]
    missed_other = [(p, t) for p, t in GATE_TOOL_ITEMS if t not in offered(p)]
    return GateScores(
        chit_chat_without_tools=sum(not names for _, names in chat) / len(chat),
        no_tool_without_tools=sum(not names for names in no_tool) / len(no_tool),
        calculator_recall=1 - len(missed_calculator) / len(calculator),
        other_tool_recall=1 - len(missed_other) / len(GATE_TOOL_ITEMS),
        offered_to_chit_chat=[(p, names) for p, names in chat if names],
        missed=missed_calculator + missed_other,
    )


def report(scores: GateScores) -> str:
    """The gate's numbers and its mistakes, one per line."""
    pct = lambda x: f"{100 * x:.0f}%"  # noqa: E731
    lines = [
        f"chit-chat offered no tool: {pct(scores.chit_chat_without_tools)} of {len(CHIT_CHAT)}",
        f"no_tool questions offered no tool: {pct(scores.no_tool_without_tools)}",
        f"calculator items offered the calculator (recall): {pct(scores.calculator_recall)}",
        f"other tool requests offered their tool (recall): {pct(scores.other_tool_recall)} of {len(GATE_TOOL_ITEMS)}",
    ]
    lines += [f"  offered {names} to chit-chat: {prompt!r}" for prompt, names in scores.offered_to_chit_chat]
    lines += [f"  missed {tool} for: {prompt!r}" for prompt, tool in scores.missed]
    return "\n".join(lines)
