"""A scripted model that answers ``topk``'s requests from a hidden score of each row's text.

``ranking_judge(score)`` reads the rows out of a window or a pair request (the layout of
``aiforge.semantic.topk.prompts``) and answers as a perfect judge would: the ids of the best rows, best first,
or the letter of the better row. ``wrong(a, b)`` (optional) says when it answers a pair the wrong way round.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

_WINDOW_ROW = re.compile(r"\[(\d+)\]\n(.*?)(?=\n\n\[\d+\]\n|\n\nAnswer with)", re.S)
_PAIR = re.compile(r"A:\n(.*?)\n\nB:\n(.*?)\n\nAnswer A or B\.", re.S)
_KEEP = re.compile(r"the (\d+) best rows")


def ranking_judge(score: Callable[[str], float]) -> Callable[[list[Any]], str]:
    """The scripted reply to a topk request: a ``Ranking``'s or a comparison's JSON by ``score`` of each row."""

    def answer(messages: list[Any]) -> str:
        text = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        pair = _PAIR.search(text)
        if pair is not None:
            return json.dumps({"value": "A" if score(pair[1]) > score(pair[2]) else "B"})
        rows = _WINDOW_ROW.findall(text)
        keep = _KEEP.search(text)
        best = sorted(rows, key=lambda row: -score(row[1]))[: int(keep[1]) if keep else 1]
        return json.dumps({"best": [int(i) for i, _ in best]})

    return answer
