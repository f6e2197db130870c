"""The loop guard: stops a small model's reply once it starts repeating itself.

SmolLM2-135M asked for a long answer often writes one sentence over and over until the token cap
(3 of 5 long prompts repeated a sentence 7 to 20 times; a French prompt at temperature 0 printed
"Il Corfuo, il Corfuo, …" for 15.8 s). Two signs end decoding:

- a sentence of four words or more written a third time (text inside code fences is not counted:
  code repeats lines legitimately);
- a run of at least ``RUN_CHARS`` characters made of one unit, containing letters, repeated at
  least ``RUN_REPEATS`` times ("Il Corfuo, il Corfuo, ..."), outside a code fence.

The repeated tail is dropped. While the sentence being written is the start of one already written
twice, its text is held back, so a stream never shows a third copy the final text drops.
"""

from __future__ import annotations

import re

SENTENCE_WORDS = 4
"""Shorter sentences ("Yes.", "Thank you!") repeat legitimately."""
RUN_CHARS = 80
RUN_REPEATS = 4
_MAX_UNIT = 120
_SCAN = 1200  # characters of the tail searched for a run

_SENTENCE = re.compile(r"[^.!?\n]*[.!?\n]+")
_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_LETTERS = re.compile(r"[^\W\d_]{2}")


def _key(sentence: str) -> str:
    return " ".join(sentence.lower().split()).rstrip(".!?")


def _prose_sentences(text: str) -> list[tuple[int, str]]:
    """(start, normalised text) of each finished sentence outside code fences, and the unfinished rest last."""
    fenced = [(m.start(), m.end()) for m in _FENCE.finditer(text)]
    out: list[tuple[int, str]] = []
    end = 0
    for match in _SENTENCE.finditer(text):
        end = match.end()
        if not any(a <= match.start() < b for a, b in fenced):
            out.append((match.start(), _key(match.group())))
    out.append((end, _key(text[end:])))
    return out


def repeated_sentence(text: str) -> int | None:
    """Where the third copy of a sentence starts (its words, case and spacing aside), or None."""
    seen: dict[str, int] = {}
    for start, key in _prose_sentences(text)[:-1]:
        if len(key.split()) < SENTENCE_WORDS:
            continue
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == 3:
            return start
    return None


def repeated_run(text: str) -> int | None:
    """Where the repeated tail of a run of one unit starts (after its first copy), or None."""
    tail_start = max(0, len(text) - _SCAN)
    lowered = text[tail_start:].lower()
    n = len(lowered)
    for unit in range(2, min(_MAX_UNIT, n // RUN_REPEATS) + 1):
        i = n - 1
        while i >= unit and lowered[i] == lowered[i - unit]:
            i -= 1
        run = n - 1 - i + unit if i < n - 1 else 0
        if run >= max(RUN_CHARS, RUN_REPEATS * unit):
            start = n - run
            if _LETTERS.search(lowered[start : start + unit]):
                return tail_start + start + unit
    return None


def find_loop(text: str) -> int | None:
    """Where ``text`` should end because it repeats itself, or None when it does not."""
    in_code = text.count("```") % 2 == 1  # code repeats itself legitimately
    cuts = [cut for cut in (repeated_sentence(text), None if in_code else repeated_run(text)) if cut is not None]
    return min(cuts) if cuts else None


class LoopGuard:
    """Fed a reply's deltas; hands back the text safe to show and says when to stop."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.text = ""
        self.cut = False
        """True once the reply repeated itself: decoding should stop; ``text`` ends before the repeat."""
        self._shown = 0

    def feed(self, delta: str) -> str:
        """Take a delta; return the text that may be shown now ("" while held back or after the cut)."""
        if not self.enabled:
            return delta
        if self.cut:
            return ""
        self.text += delta
        cut = find_loop(self.text)
        if cut is not None:
            self.cut = True
            self.text = self.text[:cut].rstrip()
            return self._show(len(self.text))
        return self._show(self._held_from())

    def flush(self) -> str:
        """The held-back text once the reply has ended."""
        return self._show(len(self.text))

    def _held_from(self) -> int:
        sentences = _prose_sentences(self.text)
        start, partial = sentences[-1]
        counts: dict[str, int] = {}
        for _, key in sentences[:-1]:
            if len(key.split()) >= SENTENCE_WORDS:
                counts[key] = counts.get(key, 0) + 1
        if partial and any(n >= 2 and key.startswith(partial) for key, n in counts.items()):
            return start
        return len(self.text)

    def _show(self, upto: int) -> str:
        if upto <= self._shown:
            return ""
        piece, self._shown = self.text[self._shown : upto], upto
        return piece
