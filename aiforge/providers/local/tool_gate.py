"""Which tools the embedded model is offered for a message: only those the message could need.

Offered tools, SmolLM2-135M calls one whether it helps or not: asked "Hi! What is the capital of
Italy?" with the four built-in tools it called ``current_time`` and answered with a timestamp in 4
of 4 tries (9.2 s to the first token; without tools, "Rome" in 0.2 to 1.5 s). So before tools are
offered, a free lexical check keeps the tools the latest user message is about: one sharing a word
with the tool's name, description or argument names, and any tool about arithmetic when the message
holds a calculation ("1234 * 5678"). A message about none of them is answered as plain chat.
Sentences asking for creative writing or making small talk are left out of the check: "Tell me a
short joke." shared "short" with ``research``'s description and looked up "Alan Turing" (issue 22).
On the eval's chit-chat set (25 poems, jokes, greetings, small talk) no tool is offered to 100%,
52% before; the calculator items keep 100% recall, the other tools' requests 90% (9 of 10) as before
(``python -m bench.eval_local --gate``).
``bench/eval_local`` (bench/results.md), every tool offered -> this gate, new sampling defaults both:
chit-chat and facts answered without a tool 0% -> 88%, tool precision 50% -> 89%, recall 100% both,
1.71 s an item instead of 5.12. Tool answers stay wrong (0 of 8 either way): the model writes bad
calculator expressions.
"""

from __future__ import annotations

import re

from aiforge.core.types import Message, ToolSpec

_WORD = re.compile(r"[^\W\d_]{4,}")
_CALCULATION = re.compile(r"\d\s*(?:[-+*/×÷^%]|\*\*|times|plus|minus|divided by)\s*\(?\s*\d|sqrt|square root")
_ARITHMETIC_TOOL = re.compile(r"arithmetic|calculat|math")
# Words of a tool's description that say nothing about what it is for ("a short summary", "instead
# of doing arithmetic yourself"): shared with a message, they made "Tell me a short joke." a lookup.
_COMMON = frozenset(
    "about after also answer argument before both does each else every from have into just like make more most "
    "must need only other over return returns result same should some such than that their them then there these "
    "they this those used uses using value what when where which while will with would your text line name "
    "short long doing instead yourself whenever".split()
)
# Sentences asking for creative writing or making small talk need no tool, whatever words they use
# ("Write a short poem about time.", "How are you doing today?"); the other sentences of the message
# still count ("Thanks! Now convert 5 kg to pounds.").
_CHIT_CHAT = re.compile(
    r"\b(?:poem|poetry|haiku|limerick|sonnet|verses?|rhymes?|songs?|lyrics|jokes?|puns?|riddles?|stor(?:y|ies)|"
    r"tales?|fables?|fairy|dialogue|love letter|quotes?|compliments?|fiction|essay|"
    r"how are you|how's it going|what's up|thanks|thank you|nice to meet|good (?:morning|afternoon|evening|night)|"
    r"goodbye|bye|i'm feeling|i feel|i am feeling|cheer me up|for fun|talk to you)\b"
)
_SENTENCE_END = re.compile(r"(?<=[.!?\n])\s+")


def _words(text: str) -> set[str]:
    return {w.rstrip("s") for w in _WORD.findall(text.lower())} - _COMMON


def _named(tool: ToolSpec, text: str) -> bool:
    """True when ``text`` names the tool ("use the calculator", "unit converter")."""
    name = tool["name"].lower()
    return name in text or name.replace("_", " ") in text


def relevant_tools(tools: list[ToolSpec], messages: list[Message]) -> list[ToolSpec]:
    """The tools the latest user message could need, also while the turn reads their results.

    Offering every tool once a result is in made the model call ``current_time`` after the
    calculator and answer with a timestamp.
    """
    latest = next((m for m in reversed(messages) if m["role"] == "user"), None)
    if latest is None:
        return tools
    text = (latest.get("content") or "").lower()
    asked = " ".join(s for s in _SENTENCE_END.split(text) if not _CHIT_CHAT.search(s))
    words, calculation = _words(asked), _CALCULATION.search(text) is not None
    kept = []
    for tool in tools:
        arguments = " ".join((tool.get("parameters") or {}).get("properties", {}))
        about = f"{tool['name'].replace('_', ' ')} {tool.get('description', '')} {arguments}"
        arithmetic = calculation and _ARITHMETIC_TOOL.search(about.lower()) is not None
        if _named(tool, text) or arithmetic or words & _words(about):
            kept.append(tool)
    return kept
