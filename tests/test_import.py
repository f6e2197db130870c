"""`import aiforge` stays light (no provider SDK, LangGraph, pandas or ipywidgets) and imports point down only."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

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
    "modules": 3,
    "tools": 3,
    "dataframes": 4,
    "jupyter": 5,
    "cli": 5,
    "cli_batch": 5,
    "cli_batch_files": 5,
    "__init__": 5,
    "__main__": 5,
}
"""Rank of each part of ``aiforge/``: a module may import only from its own rank or below."""


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
            if LAYERS[_part(target)] > LAYERS[source]
        ]
    assert upward == []
