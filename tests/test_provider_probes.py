"""No layer above ``providers/`` asks a provider what it is: it reads the provider's profile (its attributes, as data).

Walks every module of ``aiforge/`` outside ``core/`` and ``providers/`` with ``ast`` and fails on
- ``getattr``/``hasattr`` on a provider, or for an attribute a provider has (``base_url``, ``provider_name``, ...);
- a provider's name compared to a string literal (``provider.name == "local"``, ``provider_name in ("openai",)``);
- ``isinstance`` with a vendor's provider class, or a provider module looked up in ``sys.modules``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import aiforge
from aiforge.providers.base import Provider

ROOT = Path(aiforge.__file__).parent
BELOW = ("core", "providers")
"""The parts of ``aiforge/`` at or below the provider protocol, where asking a provider's class is its own business."""

PROVIDER_ATTRIBUTES = {name for name in dir(Provider) if not name.startswith("__")} | {
    "base_url", "provider_name", "endpoint", "registry_name",
}
"""What a probe would ask for: every attribute of the protocol, and the per-vendor ones it replaced."""


def _mentions_provider(node: ast.expr) -> bool:
    return "provider" in ast.unparse(node).lower()


def _is_name_of_provider(node: ast.expr) -> bool:
    text = ast.unparse(node)
    return _mentions_provider(node) and (text.endswith((".name", ".registry_name")) or text.endswith("provider_name"))


def _is_str_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    return isinstance(node, ast.Tuple | ast.List | ast.Set) and bool(node.elts) and all(map(_is_str_literal, node.elts))


def probes(source: str) -> list[str]:
    """Each place in ``source`` that asks a provider what it is, as ``line: code``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        bad = False
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            args = node.args
            if node.func.id in ("getattr", "hasattr") and len(args) >= 2:
                named = isinstance(args[1], ast.Constant) and args[1].value in PROVIDER_ATTRIBUTES
                bad = _mentions_provider(args[0]) or named
            elif node.func.id == "isinstance" and len(args) == 2:
                classes = [n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(args[1])
                           if isinstance(n, ast.Name | ast.Attribute)]
                bad = any(c.endswith("Provider") and c != "Provider" for c in classes)
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            bad = any(map(_is_name_of_provider, sides)) and any(map(_is_str_literal, sides))
        elif isinstance(node, ast.Subscript | ast.Call):
            target = node.value if isinstance(node, ast.Subscript) else node.func
            text = ast.unparse(target)
            bad = text.startswith("sys.modules") and "aiforge.providers" in ast.unparse(node)
        if bad:
            found.append(f"{getattr(node, 'lineno', '?')}: {ast.unparse(node)}")
    return found


def _modules_above_providers() -> Iterator[Path]:
    for path in sorted(ROOT.rglob("*.py")):
        if path.relative_to(ROOT).parts[0] not in BELOW:
            yield path


def test_no_module_above_providers_probes_a_provider() -> None:
    found = {
        str(path.relative_to(ROOT.parent)): hits
        for path in _modules_above_providers()
        if (hits := probes(path.read_text(encoding="utf-8")))
    }
    assert found == {}, "read the provider's profile (providers/base.py) instead of probing it"


@pytest.mark.parametrize(
    "code",
    [
        'unset = self.provider.name == "local" and x',
        'if provider_name in ("openai", "anthropic"): pass',
        'name = getattr(provider, "provider_name", None) or provider.name',
        'endpoint = getattr(self.provider, "base_url", None)',
        'url = getattr(inner, "base_url", None)',
        'endpoint = getattr(cls, "endpoint", None)',
        'ok = hasattr(self.provider, "batch_api")',
        "module = sys.modules.get('aiforge.providers.local.provider')",
        "local = isinstance(provider, module.LocalProvider)",
    ],
)
def test_each_kind_of_probe_is_found(code: str) -> None:
    assert probes(code)


@pytest.mark.parametrize(
    "code",
    [
        "if isinstance(provider, str | Provider): pass",
        "unset = self.provider.default_temperature is not None",
        'label = getattr(tool, "tool_call_schema", None)',
        'same = self.provider_name == other.provider_name',
        'kind = job.name == "local"',
    ],
)
def test_reading_the_profile_is_no_probe(code: str) -> None:
    assert probes(code) == []
