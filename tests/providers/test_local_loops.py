"""The embedded model's loop guard, without the model: repeats are cut, lists and code are not."""

from __future__ import annotations

import re

from aiforge.providers.local.loops import LoopGuard, find_loop


def _stream(text: str) -> tuple[str, LoopGuard]:
    guard, shown = LoopGuard(), ""
    for token in re.findall(r"\S+\s*", text):
        shown += guard.feed(token)
        if guard.cut:
            break
    return shown + guard.flush(), guard


def test_a_sentence_written_a_third_time_is_cut_before_it() -> None:
    text = "The sea is blue and wide. Waves roll in. " + "The sea is blue and wide. " * 5
    shown, guard = _stream(text)
    assert guard.cut
    assert guard.text == "The sea is blue and wide. Waves roll in. The sea is blue and wide."
    assert shown.rstrip() == guard.text  # the third copy never reached the stream


def test_a_repeated_phrase_run_is_cut_after_its_first_copy() -> None:
    shown, guard = _stream("Il Corfuo, il Corfuo, " * 10)
    assert guard.cut and guard.text == "Il Corfuo,"


def test_numbered_lists_and_code_are_not_cut() -> None:
    listing = "\n".join(f"{i}. Add the item number {i} to the list." for i in range(1, 30))
    code = "```python\n" + "for row in rows:\n    total += row.value\n    print('the total is now', total)\n" * 6
    table = "| a | b |\n" + "|---|---|\n" * 30
    zeros = "grid = [" + "0, " * 80 + "]"
    for text in (listing, code + "```", table, zeros, "Yes. " * 10):
        assert find_loop(text) is None, text[:40]
        shown, guard = _stream(text)
        assert not guard.cut and shown == text


def test_a_sentence_twice_is_allowed_and_shown_once_it_differs() -> None:
    text = "I like the sea very much. I like the sea very much. I like the mountains too."
    shown, guard = _stream(text)
    assert not guard.cut and shown == text


def test_a_disabled_guard_passes_everything() -> None:
    guard = LoopGuard(enabled=False)
    assert guard.feed("Il Corfuo, " * 20) == "Il Corfuo, " * 20 and not guard.cut
