"""The documentation site builds strictly, offline, and documents what the package exports.

``mkdocs build --strict`` (mkdocs.yml) fails on any warning: a broken link, a nav entry without its page, a
reference (``::: aiforge.X``) to nothing, a docstring naming a parameter the signature does not have. The build runs
once per module, in a subprocess of this interpreter, into a temporary folder, with every proxy pointing at the
discard port: a plugin that fetches anything fails it. What the built site must hold is then read from its files:
the object inventory mkdocstrings writes (``objects.inv``: every object rendered on a page), the tutorial pages,
the settings table and the ``llms.txt`` files. Marked slow (plain ``pytest`` leaves it out; ``--all`` runs it);
tests/docs/test_reference_pages.py checks the reference pages' sources in the fast loop.
"""

from __future__ import annotations

import ast
import inspect
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

import aiforge
from aiforge.core.settings import AIForgeSettings
from tests.docs.build import mkdocs_build

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
ACCESSORS = {
    "aiforge.dataframes.frame_accessor.DataFrameOperations": (
        "aiforge.dataframes.frame_accessor",
        "DataFrameOperations",
    ),
    "aiforge.dataframes.series_accessor.SeriesOperations": ("aiforge.dataframes.series_accessor", "SeriesOperations"),
    "aiforge.dataframes.groupby_accessor.GroupByOperations": (
        "aiforge.dataframes.groupby_accessor",
        "GroupByOperations",
    ),
    "aiforge.dataframes.dask.accessor.DaskOperations": ("aiforge.dataframes.dask.accessor", "DaskOperations"),
}
"""The accessors' classes (``df.aiforge``, ``s.aiforge``, ``df.groupby(k).aiforge``, ``ddf.aiforge``)."""

pytestmark = pytest.mark.slow  # one build, 10-40 s: `pytest --all` (the README's test command) runs it


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    pytest.importorskip("mkdocs", reason="the docs extra (pip install -e '.[docs]') builds the site")
    folder = tmp_path_factory.mktemp("site")
    built = mkdocs_build(folder / "site", folder)
    output = built.stdout + built.stderr
    assert built.returncode == 0, f"mkdocs build --strict failed:\n{output[-6000:]}"
    problems = [line for line in output.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert not problems, "the build logged:\n" + "\n".join(problems)
    yield folder / "site"


def inventory(site: Path) -> set[str]:
    """The names of every object the site renders (Sphinx's ``objects.inv`` format, which mkdocstrings writes)."""
    header, _, body = (site / "objects.inv").read_bytes().partition(b"zlib.\n")
    assert header.startswith(b"# Sphinx inventory version 2"), header[:60]
    return {line.split(" ", 1)[0] for line in zlib.decompress(body).decode().splitlines()}


def test_every_public_name_has_a_reference_entry(site: Path) -> None:
    """A name added to ``aiforge.__all__`` without a ``::: aiforge.<name>`` on a reference page fails here."""
    documented = inventory(site)
    missing = [name for name in aiforge.__all__ if f"aiforge.{name}" not in documented]
    assert not missing, f"add `::: aiforge.<name>` to a page of docs/reference/ for: {', '.join(missing)}"


def _public_methods(module: str, cls: str) -> list[str]:
    """The public methods a class defines or inherits from aiforge's own classes, read from the source."""
    found = getattr(__import__(module, fromlist=[cls]), cls)
    names = []
    for klass in found.__mro__:
        if not klass.__module__.startswith("aiforge"):
            continue
        tree = ast.parse(inspect.getsource(klass))
        body = tree.body[0].body  # type: ignore[attr-defined]
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_"):
                names.append(node.name)
    return sorted(set(names))


@pytest.mark.parametrize("path", sorted(ACCESSORS))
def test_every_accessor_method_is_on_the_reference(site: Path, path: str) -> None:
    pytest.importorskip("dask.dataframe")  # the Dask accessor's module imports it
    documented = inventory(site)
    methods = _public_methods(*ACCESSORS[path])
    assert {"agg"} & set(methods) or "GroupBy" not in path
    missing = [name for name in methods if f"{path}.{name}" not in documented]
    assert not missing, f"{path}: no reference entry for {missing} (docs/reference/dataframes.md)"


def test_the_chat_module_has_its_reference_page(site: Path) -> None:
    """The public API contract names the page ``aiforge.modules.chat``; it documents the module and its classes."""
    documented = inventory(site)
    assert "aiforge.modules.chat" in documented
    page = (site / "reference" / "chat" / "index.html").read_text()
    for name in ("ChatAgent", "ChatResponse", "ToolCallRecord", "chat", "run_batch"):
        assert f'id="aiforge.{name}' in page or f"aiforge.ChatAgent.{name}" in page, name


def test_the_tutorials_render_with_their_stored_outputs(site: Path) -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    for notebook in NOTEBOOKS:
        assert f"tutorials/{notebook.name}" in nav, f"mkdocs.yml's nav lists no tutorials/{notebook.name}"
        page = (site / "tutorials" / notebook.stem / "index.html").read_text()
        assert '"cell_type"' not in page, f"{notebook.name} was rendered as raw JSON"
        assert "jp-OutputArea" in page or "output_area" in page, f"{notebook.name}: no rendered output"
    assert not list(DOCS.glob("tutorials/*.ipynb")), "the tutorials live in notebooks/ only (docs/hooks.py adds them)"


def test_the_settings_table_is_built_from_the_code(site: Path) -> None:
    """Every field of ``AIForgeSettings`` has a row on the configuration page, written at build time."""
    assert "<!-- settings-table -->" in (DOCS / "guides" / "configuration.md").read_text()
    page = (site / "guides" / "configuration" / "index.html").read_text()
    rows = re.findall(r"<tr>\s*<td><code>(\w+)</code><br", page)
    assert rows == list(AIForgeSettings.model_fields), "the settings table is not the class's fields, in order"
    assert "<code>AIFORGE_MODEL</code>" in page
    assert "<code>OPENAI_API_KEY</code> or <code>AIFORGE_OPENAI_API_KEY</code>" in page


def test_llms_txt_lists_the_reference_and_the_full_text_holds_it(site: Path) -> None:
    index = (site / "llms.txt").read_text()
    full = (site / "llms-full.txt").read_text()
    for page in sorted((DOCS / "reference").glob("*.md")):
        stem = "" if page.stem == "index" else f"{page.stem}/"
        assert f"reference/{stem}index.md" in index, f"llms.txt lists no {page.name}"
    for page in sorted((DOCS / "guides").glob("*.md")):
        assert f"guides/{page.stem}/index.md" in index, f"llms.txt lists no guides/{page.name}"
    assert "class ChatAgent" in full or "ChatAgent(" in full
    assert "df.aiforge" in full
