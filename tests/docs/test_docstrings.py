"""Every docstring of the package reads cleanly as the API reference reads it (griffe, Google style), also for
objects no reference page shows: an ``Args:`` entry naming a parameter the signature does not have, or a section
griffe cannot parse, fails here in the fast loop (the strict site build fails on it too, for the pages it renders).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _parse_all(obj: Any) -> None:
    if obj.docstring is not None:
        obj.docstring.parsed  # noqa: B018 - parsing is what logs the warnings
    for member in obj.members.values():
        if not member.is_alias:
            _parse_all(member)


def test_no_docstring_makes_griffe_warn(caplog: pytest.LogCaptureFixture) -> None:
    griffe = pytest.importorskip("griffe", reason="the docs extra (pip install -e '.[docs]') brings griffe")
    package = griffe.load("aiforge", search_paths=[str(ROOT)], docstring_parser="google", resolve_aliases=False)
    with caplog.at_level(logging.WARNING, logger="griffe"):
        _parse_all(package)
    warnings = [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]
    assert not warnings, "docstrings the API reference cannot read:\n" + "\n".join(warnings)
