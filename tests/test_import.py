"""`import aiforge` stays light (no provider SDK, LangGraph, pandas or ipywidgets); imports point down, in no circle."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import aiforge

HEAVY = ("openai", "anthropic", "langgraph", "langchain_core", "pandas", "ipywidgets", "xllamacpp", "httpx", "dask")


def imported_after(code: str) -> set[str]:
    probe = f"import sys; {code}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return {name.split(".")[0] for name in out.split()}


def test_import_aiforge_loads_no_heavy_dependency() -> None:
    assert not imported_after("import aiforge") & set(HEAVY)


def test_load_ext_loads_no_heavy_dependency() -> None:
    loaded = imported_after(
        "from IPython.core.interactiveshell import InteractiveShell; "
        "InteractiveShell.instance().run_line_magic('load_ext', 'aiforge')"
    )
    assert not loaded & set(HEAVY)


def test_public_names_resolve_lazily() -> None:
    import aiforge

    assert aiforge.ChatAgent.__name__ == "ChatAgent"
    assert {"ChatAgent", "ChatResponse", "ToolCallRecord", "ChatPanel", "register_provider"} <= set(dir(aiforge))


LAYERS = {
    "core": 0,
    "providers": 1,
    "store": 2,
    "batch": 3,
    "tools": 3,
    "chat": 4,
    "semantic": 5,
    "evaluation": 5,
    "dataframes": 6,
    "jupyter": 7,
    "cli": 8,
    "modules": 8,
    "__init__": 8,
    "__main__": 8,
}
"""Rank of each part of ``aiforge/``: a module may import only from its own rank or below. The folders' ranks are
the Architecture diagram of docs/contributing.md, bottom line 0 (``test_the_ranks_are_the_architecture_diagram``);
the package's own ``__init__`` (``aiforge.ChatAgent`` and the other lazy names) and ``__main__`` sit on top with the
CLI."""

ARCHITECTURE_PAGE = Path(__file__).resolve().parents[1] / "docs" / "contributing.md"

MAX_LINES = 300
"""No module of ``aiforge/`` is longer: one past it is usually two ideas (STYLE.md), split by idea."""


def _diagram_ranks(page: str) -> dict[str, int]:
    """The folder ranks the Architecture diagram of a page draws: a line that starts at column 0 names the folders of
    one layer (``batch/, tools/``), the description follows after two spaces; the bottom line is rank 0."""
    section = page.split("\n## Architecture\n", 1)[1]
    diagram = section.split("```", 2)[1]
    layers = [
        [name.strip().rstrip("/") for name in line.split("  ", 1)[0].split(",")]
        for line in diagram.splitlines()
        if line[:1].strip()
    ]
    return {name: rank for rank, names in enumerate(reversed(layers)) for name in names}


def test_diagram_ranks_read_one_layer_a_line() -> None:
    page = "## Intro\n\n## Architecture\n\ntext\n```\ncli/, a/        top\n                 more\nb/     x, y\n```\n"
    assert _diagram_ranks(page) == {"cli": 1, "a": 1, "b": 0}


def test_the_ranks_are_the_architecture_diagram() -> None:
    """The layer test checks what docs/contributing.md documents: every folder of ``aiforge/`` in the diagram, at its
    rank."""
    folders = {path.parent.name for path in Path(aiforge.__file__).parent.glob("*/__init__.py")}
    ranks = _diagram_ranks(ARCHITECTURE_PAGE.read_text(encoding="utf-8"))
    assert set(ranks) == folders
    assert ranks == {part: rank for part, rank in LAYERS.items() if part not in ("__init__", "__main__")}


def test_no_module_is_over_300_lines() -> None:
    """Lists every offender, longest first, with its length."""
    root = Path(aiforge.__file__).parent
    lengths = {
        str(path.relative_to(root.parent)): len(path.read_text(encoding="utf-8").splitlines())
        for path in root.rglob("*.py")
    }
    offenders = sorted(((n, path) for path, n in lengths.items() if n > MAX_LINES), reverse=True)
    listed = "\n".join(f"  {path}: {n} lines" for n, path in offenders)
    assert not offenders, f"{len(offenders)} module(s) over {MAX_LINES} lines, split each by idea:\n{listed}"


OLD_HOMES: dict[str, str] = {}
"""Public import paths whose module moved up a layer: each only re-exports its new home. None today: the reference
page's ``aiforge.modules.chat`` paths (``widget`` included) are the ``modules`` layer, above all they re-export."""


def _part(module: str) -> str:
    """``aiforge.providers.openai`` -> ``providers``; the package itself -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path, package: str) -> list[str]:
    """Every aiforge module ``path`` imports, at top level, in functions or under TYPE_CHECKING."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            found.append(".".join(filter(None, [base, node.module or ""])))
    return [name for name in found if name == "aiforge" or name.startswith("aiforge.")]


def test_imports_point_down_the_layers_only() -> None:
    root = Path(aiforge.__file__).parent
    upward = []
    for path in sorted(root.rglob("*.py")):
        module = ".".join(("aiforge", *path.relative_to(root).with_suffix("").parts))
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        source = _part(module.removesuffix(".__init__"))
        assert source in LAYERS, f"{path} is in no layer: give aiforge/{source} a rank in LAYERS"
        upward += [
            f"{module} imports {target}"
            for target in _imports(path, package)
            if LAYERS[_part(target)] > LAYERS[source] and OLD_HOMES.get(module) != target
        ]
    assert upward == []


def _modules(root: Path) -> Iterator[tuple[str, Path]]:
    """Every module of the package at ``root`` by dotted name (a package by its own name), with its file."""
    for path in sorted(root.rglob("*.py")):
        yield ".".join((root.name, *path.relative_to(root).with_suffix("").parts)).removesuffix(".__init__"), path


def _import_graph(root: Path) -> dict[str, set[str]]:
    """Each module under ``root`` -> the modules of ``root`` it imports anywhere (top level, in functions, under
    TYPE_CHECKING).

    ``from aiforge.store import db`` imports the module ``aiforge.store.db``; ``from aiforge.store import Store``
    imports the package ``aiforge.store``. A package's ``__init__`` running first is Python's, not an edge.
    """
    files = dict(_modules(root))
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = package.rsplit(".", node.level - 1)[0] if node.level else ""
                source = ".".join(filter(None, [base, node.module or ""]))
                targets |= {f"{source}.{a.name}" if f"{source}.{a.name}" in files else source for a in node.names}
        graph[module] = {target for target in targets if target in files and target != module}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = stack[stack.index(module) :]
            del stack[stack.index(module) :]
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_cycles_finds_a_circle_through_any_number_of_modules() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_import_graph_counts_imports_in_functions_and_under_type_checking(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from pkg.sub.low import X\n")
    (package / "sub" / "low.py").write_text("X = 1\n")
    (package / "top.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import mid\n"
        "def f():\n    from . import sub\n    from .sub import X\n"
    )
    (package / "mid.py").write_text("import os\ndef g():\n    import pkg.top\n")
    graph = _import_graph(package)
    assert graph["pkg.top"] == {"pkg.mid", "pkg.sub"}
    assert graph["pkg.mid"] == {"pkg.top"}
    assert graph["pkg.sub"] == {"pkg.sub.low"}
    assert _cycles(graph) == [["pkg.mid", "pkg.top"]]


@pytest.mark.parametrize("package", ["aiforge", "bench", "fakellm"])
def test_no_import_circle_between_modules(package: str) -> None:
    """Even an import in a function or under TYPE_CHECKING counts: two modules that need each other are one
    idea, or miss a lower module both can import (or one should be handed what it needs). The benchmarks and the
    fake server the tests run against keep the rule too."""
    cycles = _cycles(_import_graph(Path(aiforge.__file__).parent.parent / package))
    assert [" <-> ".join(cycle) for cycle in cycles] == []
