"""The reviews the cost group classifies: generated, a share of them repeats of another, short ones most.

``bench/cost.py``'s dedup measure and ``bench/cost_plans.py``'s plans both read them (with the same prompt and
labels), so neither imports the other.
"""

from __future__ import annotations

import random

REVIEWS = 1000
REPEATED = 0.35
LABELS = ["positive", "negative", "neutral"]
PROMPT = "Classify the sentiment of this product review.\n\nReview: {review}"

_OPENERS = ["", "Honestly, ", "Update: ", "After two weeks, ", "As a long-time customer, ", "Bought it for my son. "]
_SUBJECTS = ["the blender", "this kettle", "the headphones", "the charger", "this backpack", "the desk lamp",
             "the phone case", "this vacuum", "the running shoes", "the coffee grinder", "the keyboard", "the tent"]
_VERDICTS = ["works exactly as described", "stopped working after a week", "is fine for the price",
             "arrived broken and support never answered", "is the best purchase I made this year",
             "feels cheap but does the job", "is louder than I expected", "exceeded my expectations",
             "was returned the next day", "does what it says, nothing more"]
_DETAILS = ["", " Shipping was fast.", " Would buy again.", " Two stars for the packaging.",
            " The manual is useless.", " Battery life is great.", " Not worth the money.", " Five stars."]
_SHORT = ["Great product!", "Works as expected.", "Terrible.", "Love it", "OK", "Does the job.",
          "Would not recommend.", "Perfect, thanks!", "Broke after 2 days", "Good value for money."]


def reviews(count: int = REVIEWS, repeated: float = REPEATED, seed: int = 24) -> list[str]:
    """``count`` reviews of which ``repeated`` are exact repeats of an earlier one; short ones repeat most."""
    rng = random.Random(seed)
    unique: list[str] = list(_SHORT)
    while len(unique) < round(count * (1 - repeated)):
        opener, subject = rng.choice(_OPENERS), rng.choice(_SUBJECTS)
        if not opener or opener.endswith(". "):
            subject = subject[0].upper() + subject[1:]
        text = f"{opener}{subject} {rng.choice(_VERDICTS)}.{rng.choice(_DETAILS)}"
        if text not in unique:
            unique.append(text)
    weights = [20.0 if text in _SHORT else 1.0 for text in unique]  # short reviews repeat most
    rows = unique + rng.choices(unique, weights, k=count - len(unique))
    rng.shuffle(rows)
    return rows
