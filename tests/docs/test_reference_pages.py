"""The API reference's sources name every public name (fast; tests/docs/test_site.py checks the built pages)."""

from __future__ import annotations

import re
from pathlib import Path

import aiforge

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference"


def test_every_public_name_has_a_directive_on_a_reference_page() -> None:
    """``aiforge.__all__`` grows a name: a ``::: aiforge.<name>`` line on a page of docs/reference/ must follow."""
    directives = {
        match
        for page in REFERENCE.glob("*.md")
        for match in re.findall(r"^::: aiforge\.(\w+)\s*$", page.read_text(), re.M)
    }
    missing = sorted(set(aiforge.__all__) - directives)
    assert not missing, f"add `::: aiforge.<name>` to a page of docs/reference/ for: {', '.join(missing)}"
