"""The ``docs`` extra (what builds the site) is in ``dev``, so the README's test command builds it strictly."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_docs_extra_is_in_dev() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["docs"], "pyproject.toml has no docs extra"
    assert set(extras["docs"]) <= set(extras["dev"]), set(extras["docs"]) - set(extras["dev"])
