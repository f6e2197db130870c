"""Markdown the build accepts but renders wrong: a paragraph glued to a table (no blank line between) becomes the
table's last rows, and the strict build does not warn."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def glued_to_a_table(text: str) -> list[int]:
    """The line numbers of text lines that follow a table row with no blank line between (code blocks skipped)."""
    glued, fenced, previous = [], False, ""
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and previous.startswith("|") and line.strip() and not line.startswith("|"):
            glued.append(number)
        previous = "" if fenced else line
    return glued


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_paragraph_is_glued_to_a_table(page: Path) -> None:
    glued = glued_to_a_table(page.read_text(encoding="utf-8"))
    where = page.relative_to(ROOT).as_posix()
    assert not glued, f"{where}: a blank line is missing after the table before line(s) {glued}"


def test_a_glued_paragraph_is_found() -> None:
    text = "| a | b |\n|---|---|\n| 1 | 2 |\nRow packing: 2.85x.\n\n```\n| x |\nnot a table\n```\n"
    assert glued_to_a_table(text) == [4]
