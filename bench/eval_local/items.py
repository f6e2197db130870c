"""The labelled set: 103 prompts in eleven categories, each with what a right answer contains.

``expect`` is a regular expression searched in the reply (case-insensitive); None for long answers,
which are right when they are long (``LONG_CHARS``) and did not loop. ``tool`` items run with the
built-in tools offered and are right when the calculator was called and the answer is in the reply;
``no_tool`` and ``chit_chat`` items run with the same tools and are right when no tool was called and
the answer is there (for chit-chat, any reply). ``GATE_TOOL_ITEMS`` are for the tool gate alone (``gate.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

LONG_CHARS = 400


@dataclass(frozen=True)
class Item:
    category: str
    prompt: str
    expect: str | None


def _items(category: str, pairs: list[tuple[str, str | None]]) -> list[Item]:
    return [Item(category, prompt, expect) for prompt, expect in pairs]


CHIT_CHAT: list[str] = [
    "Write a short poem about the sea, six lines.",
    "Tell me a short joke.",
    "Write a haiku about autumn leaves.",
    "Tell me a joke about cats.",
    "Write a short story about a brave mouse.",
    "Hi there! How are you doing today?",
    "Good evening! What's up?",
    "Thanks, that was really helpful!",
    "Can you write a limerick about a frog?",
    "Compose a short song about summer.",
    "What's your favourite colour?",
    "Tell me something fun.",
    "I'm feeling a bit bored today.",
    "Write a short poem about time.",
    "Tell me a bedtime story about a dragon.",
    "Say something nice to cheer me up.",
    "Write a short love letter to the moon.",
    "Nice to meet you! What should I call you?",
    "Make up a riddle for me.",
    "Write a funny short dialogue between a cat and a dog.",
    "Good night, talk to you tomorrow!",
    "Write a poem about the power of numbers.",
    "Tell me a story about people who travel to faraway places.",
    "What do you like to do for fun?",
    "Give me a short motivational quote.",
]
"""Chit-chat and creative requests: no tool helps with them (issue 22: "Write a short poem about the sea,
six lines." and "Tell me a short joke." called ``research``, whose description says "short")."""

GATE_TOOL_ITEMS: list[tuple[str, str]] = [
    ("Convert 10 km to miles.", "unit_converter"),
    ("How many pounds is 3 kg?", "unit_converter"),
    ("What is 30 °C in fahrenheit?", "unit_converter"),
    ("What time is it in Tokyo?", "current_time"),
    ("Hi! What is today's date?", "current_time"),
    ("Look up Ada Lovelace on Wikipedia.", "research"),
    ("Research the history of the Eiffel Tower.", "research"),
    ("Give me a short summary of the theory of relativity.", "research"),
    ("What is the square root of 2?", "calculator"),
    ("Use the calculator to add 17 and 25.", "calculator"),
]
"""Requests for the other built-in tools, for the gate's recall beside the calculator items. The
relativity summary is the borderline case: a factual summary of a topic is what ``research`` is for,
so the gate should offer it (the model may still answer from memory)."""

ITEMS: list[Item] = [
    *_items("arithmetic", [
        ("What is 2 + 2? Answer with the number only.", r"\b4\b"),
        ("What is 7 + 5? Answer with the number only.", r"\b12\b"),
        ("What is 10 - 3? Answer with the number only.", r"\b7\b"),
        ("What is 3 times 4? Answer with the number only.", r"\b12\b"),
        ("What is 9 + 1? Answer with the number only.", r"\b10\b"),
        ("What is 100 divided by 10? Answer with the number only.", r"\b10\b"),
        ("What is 6 + 6? Answer with the number only.", r"\b12\b"),
        ("What is 5 times 5? Answer with the number only.", r"\b25\b"),
    ]),
    *_items("facts", [
        ("What is the capital of France?", r"paris"),
        ("What is the capital of Italy?", r"rome"),
        ("What is the capital of Japan?", r"tokyo"),
        ("What is the capital of Germany?", r"berlin"),
        ("What is the capital of Spain?", r"madrid"),
        ("What planet do we live on?", r"earth"),
        ("What is the largest ocean on Earth?", r"pacific"),
        ("Who wrote Romeo and Juliet?", r"shakespeare"),
        ("What gas do plants take in from the air?", r"carbon dioxide|co2"),
        ("How many days are in a week?", r"\b7\b|seven"),
    ]),
    *_items("yes_no", [
        ("Is the sun a star? Answer yes or no.", r"\byes\b"),
        ("Is water wet? Answer yes or no.", r"\byes\b"),
        ("Can fish breathe underwater? Answer yes or no.", r"\byes\b"),
        ("Is Paris in France? Answer yes or no.", r"\byes\b"),
        ("Is ice hot? Answer yes or no.", r"\bno\b"),
        ("Do cats have wings? Answer yes or no.", r"\bno\b"),
        ("Is the moon made of cheese? Answer yes or no.", r"\bno\b"),
        ("Is 5 larger than 10? Answer yes or no.", r"\bno\b"),
    ]),
    *_items("sentiment", [
        ("Label the sentiment of this review as positive or negative, one word: 'I loved it, wonderful!'", r"positiv"),
        ("Label the sentiment of this review as positive or negative, one word: 'Great product, works well.'",
         r"positiv"),
        ("Label the sentiment of this review as positive or negative, one word: 'Best purchase I ever made.'",
         r"positiv"),
        ("Label the sentiment of this review as positive or negative, one word: 'Amazing service, very happy.'",
         r"positiv"),
        ("Label the sentiment of this review as positive or negative, one word: 'Terrible, it broke in a day.'",
         r"negativ"),
        ("Label the sentiment of this review as positive or negative, one word: 'I hated it. Awful.'", r"negativ"),
        ("Label the sentiment of this review as positive or negative, one word: 'Waste of money, very bad.'",
         r"negativ"),
        ("Label the sentiment of this review as positive or negative, one word: 'The worst meal I have had.'",
         r"negativ"),
    ]),
    *_items("extraction", [
        ("What is the person's name in this sentence? 'Alice went to the market.' Answer with the name only.",
         r"alice"),
        ("What city is mentioned here? 'We flew to London last May.' Answer with the city only.", r"london"),
        ("What is the email address in: 'Write to bob@example.com today.' Answer with the address only.",
         r"bob@example\.com"),
        ("What year is mentioned in: 'The bridge opened in 1998.' Answer with the year only.", r"1998"),
        ("What color is the car in: 'She drove a red car home.' Answer with the color only.", r"\bred\b"),
        ("What animal is in: 'The dog slept on the sofa.' Answer with the animal only.", r"\bdog\b"),
        ("What is the price in: 'The ticket costs 25 dollars.' Answer with the number only.", r"\b25\b"),
        ("Who is the author in: 'A novel by Mark Twain.' Answer with the name only.", r"twain"),
    ]),
    *_items("translation", [
        ("Translate 'dog' into French. Answer with one word.", r"chien"),
        ("Translate 'cat' into Spanish. Answer with one word.", r"gato"),
        ("Translate 'house' into German. Answer with one word.", r"haus"),
        ("Translate 'water' into French. Answer with one word.", r"\beau\b"),
        ("Translate 'thank you' into Spanish.", r"gracias"),
        ("Translate 'hello' into French. Answer with one word.", r"bonjour|salut"),
        ("Translate 'yes' into German. Answer with one word.", r"\bja\b"),
        ("Translate 'book' into Spanish. Answer with one word.", r"libro"),
    ]),
    *_items("greeting", [
        ("Hi!", r"\b(hi|hello|hey|help|assist|welcome)\b"),
        ("Hello, how are you?", r"\b(good|fine|well|great|thank|help|assist|doing)\b"),
        ("Good morning!", r"\b(morning|hello|hi|help|assist)\b"),
        ("Hey there", r"\b(hi|hello|hey|help|assist)\b"),
        ("Thanks for your help!", r"\b(welcome|glad|pleasure|happy|help)\b"),
        ("Goodbye!", r"\b(bye|goodbye|care|day|welcome|help)\b"),
    ]),
    *_items("long", [
        ("Tell me a long story about the ocean", None),
        ("Write a long essay about mountains", None),
        ("Describe a busy city market in detail", None),
        ("Explain in detail how bread is made", None),
        ("Tell me a long story about a dragon", None),
        ("Write a detailed guide to planting a vegetable garden", None),
    ]),
    *_items("tool", [
        ("What is 1234 * 5678?", r"7,?006,?652"),
        ("What is 987 * 654?", r"645,?498"),
        ("Calculate 4521 + 8790.", r"13,?311"),
        ("What is 123456 / 8?", r"15,?432"),
        ("What is 37 * 91 * 3?", r"10,?101"),
        ("Use the calculator: 2048 * 365", r"747,?520"),
        ("What is 9999 - 1234 * 3?", r"6,?297"),
        ("How much is 45.5 * 12?", r"546"),
    ]),
    *_items("chit_chat", [(prompt, r"\w") for prompt in CHIT_CHAT]),
    *_items("no_tool", [
        ("Hi! What is the capital of Italy?", r"rome"),
        ("Hello! What is the capital of France?", r"paris"),
        ("What color is the sky on a clear day?", r"blue"),
        ("Who painted the Mona Lisa?", r"vinci|leonardo"),
        ("Good morning! How are you today?", r"\b(good|fine|well|great|thank|help|assist|doing)\b"),
        ("What is the opposite of hot?", r"cold"),
        ("Name a fruit that is yellow.", r"banana|lemon|pineapple|mango"),
        ("What language is spoken in Brazil?", r"portuguese"),
    ]),
]
