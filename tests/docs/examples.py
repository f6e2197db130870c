"""The ```python blocks of the docs and the README, as the example test runs them (tests/docs/test_examples.py).

A block is skipped when the line before its fence (blank lines aside) is an HTML comment starting ``not run``,
saying why: ``<!-- not run: needs an API key -->``. The comment does not show on the site.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
NOT_RUN = re.compile(r"^\s*<!--\s*not run\b:?\s*(?P<reason>.*?)\s*-->\s*$")
LANGUAGES = {"python", "py"}


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    """The line of the opening fence, counted from 1."""
    code: str
    not_run: str | None
    """Why the block is not run, or None when it runs."""


def pages() -> list[Path]:
    """README.md and every Markdown page of docs/, in a stable order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """The Python blocks of one page, in order, dedented to their fence."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, fence, lang = opening["indent"], opening["fence"], opening["lang"].lower()
        start = index
        index += 1
        body: list[str] = []
        while index < len(lines) and not lines[index].strip().startswith(fence):
            line = lines[index]
            body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
            index += 1
        index += 1
        if lang not in LANGUAGES:
            continue
        before = start - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        marker = NOT_RUN.match(lines[before]) if before >= 0 else None
        reason = (marker["reason"] or "no reason given") if marker else None
        page = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
        found.append(Block(page, start + 1, "\n".join(body) + "\n", reason))
    return found
