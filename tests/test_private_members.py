"""No private members between packages: a part of ``aiforge/`` reads another part's objects by public names only.

A ``_name`` read on anything but ``self``/``cls`` (``owner._request_context``) is allowed only when the part
reading it defines that name itself; a protocol, which says what one part needs of another, declares public
members only.
"""

from __future__ import annotations

import ast
from pathlib import Path

import aiforge

ROOT = Path(aiforge.__file__).parent

NOT_AIFORGE = {
    "_getframe": "sys._getframe: the caller's frame for a warning's stacklevel",
    "_meta": "a Dask collection's empty pandas object, Dask's documented way to read its columns and dtypes",
    "_actions": "argparse.ArgumentParser._actions: the options a magic's parser declares",
    "_state": "httpx.AsyncClient._state: whether an SDK's client is already closed",
}
"""Private names of other libraries read on purpose, with the reason."""


def _part(path: Path) -> str:
    """``aiforge/batch/cascade.py`` -> ``batch``; a top-level module is its own part."""
    return path.relative_to(ROOT).parts[0].removesuffix(".py")


def _private(name: str) -> bool:
    # _repr_html_ and friends are IPython's display protocol, public by its convention.
    return name.startswith("_") and not name.startswith("__") and not name.endswith("_")


def _is_protocol(node: ast.AST) -> bool:
    return isinstance(node, ast.ClassDef) and any(
        ast.unparse(base).split("[")[0].endswith("Protocol") for base in node.bases
    )


def _defined(tree: ast.AST, *, protocols: bool = False) -> set[str]:
    """The private names a module gives an object: methods, class attributes, ``self._x = ...``.

    A protocol's members count only with ``protocols=True``: declaring ``_x`` there defines nothing.
    """
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and (protocols or not _is_protocol(node)):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
                elif isinstance(item, ast.Assign):
                    names |= {t.id for t in item.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return {name for name in names if _private(name)}


def _reads(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, name)`` of each private attribute read on an object other than ``self`` or ``cls``."""
    return [
        (node.lineno, node.attr)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and _private(node.attr)
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
    ]


def _trees() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text(encoding="utf-8")) for path in sorted(ROOT.rglob("*.py"))}


def test_no_part_reads_another_parts_private_attribute() -> None:
    trees = _trees()
    defined: dict[str, set[str]] = {}
    for path, tree in trees.items():
        defined.setdefault(_part(path), set()).update(_defined(tree))
    crossing = [
        f"{path.relative_to(ROOT.parent)}:{line} reads .{name} (defined in {', '.join(sorted(owners))})"
        for path, tree in trees.items()
        for line, name in _reads(tree)
        if name not in defined[_part(path)] and name not in NOT_AIFORGE
        for owners in [{part for part, names in defined.items() if name in names} or {"no part of aiforge"}]
    ]
    assert crossing == []


def test_protocols_declare_public_members_only() -> None:
    private = [
        f"{path.relative_to(ROOT.parent)}: {node.name}.{name}"
        for path, tree in _trees().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and _is_protocol(node)
        for name in sorted(_defined(node, protocols=True))
    ]
    assert private == []


def test_the_rule_sees_a_private_read_across_parts() -> None:
    reader = ast.parse("def run(owner):\n    return owner._request_context()\n")
    owner = ast.parse("class Agent:\n    def _request_context(self):\n        return 1\n")
    protocol = ast.parse("class Owner(Protocol):\n    def _request_context(self): ...\n")
    assert _reads(reader) == [(2, "_request_context")]
    assert _defined(owner) == {"_request_context"}
    assert _defined(protocol) == set()  # declaring it in a protocol defines nothing
    assert _defined(protocol, protocols=True) == {"_request_context"}
    assert _reads(ast.parse("def f(self):\n    return self._x, cls._y, obj._repr_html_, obj.__dict__\n")) == []


def _private_imports(path: Path, tree: ast.Module) -> list[str]:
    """``from aiforge.<part> ... import _name`` in ``path`` where ``<part>`` is not the importing module's own part."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("aiforge."):
            source = node.module.split(".")[1]
            if source != _part(path):
                found += [
                    f"{path.relative_to(ROOT)}:{node.lineno} {node.module}.{alias.name}"
                    for alias in node.names
                    if _private(alias.name)
                ]
    return found


def test_no_part_imports_another_parts_private_function() -> None:
    """``core.costs._caller_stacklevel`` was imported by seven modules of four parts, ``store.db._default_path`` by
    the CLI: what another part needs is public (and then kept as a promise)."""
    found = [line for path, tree in _trees().items() for line in _private_imports(path, tree)]
    assert not found, "private names imported across parts:\n" + "\n".join(found)


def test_the_import_rule_sees_a_private_import_across_parts() -> None:
    tree = ast.parse("from aiforge.core.costs import _caller_stacklevel\nfrom aiforge.batch.x import _own\n")
    assert _private_imports(ROOT / "batch" / "embedded.py", tree) == [
        "batch/embedded.py:1 aiforge.core.costs._caller_stacklevel"
    ]
