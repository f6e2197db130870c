"""Every error and warning a user can meet lives in one home, ``aiforge.core.errors``, and is importable from
``aiforge`` (``except aiforge.BudgetExceededError``, ``warnings.filterwarnings("ignore",
category=aiforge.FailedRowsWarning)``), whichever module raises it.

The tests walk the package for exception and warning classes, so a new one defined anywhere else, or not exported,
fails them until it moves home (or is named in ``INTERNAL`` with where it is caught)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys

import aiforge

INTERNAL = {
    "ToolInterrupted": "chat.tool_runner: carries a tool thread's KeyboardInterrupt to the agent, which re-raises it",
    "BandOverflow": "semantic.similarity: dedup turns it into a UsageError naming the confirmation band",
    "BatchUsageError": "cli.batch: the CLI prints it as one line and exits 2; Python callers never call cli.batch",
    "BatchWriteError": "cli.batch: the CLI prints it as one line and exits 1; Python callers never call cli.batch",
}
"""Exceptions defined in aiforge that never reach a user, each with where it is caught."""


def _defined_errors() -> dict[str, type[BaseException]]:
    """Every public exception or warning class defined in a module of aiforge (``__main__`` modules run the CLI)."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(aiforge.__path__, "aiforge."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)  # Exception, Warning, and KeyboardInterrupt's Interrupted
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[name] = value
    return found


def test_the_walk_finds_errors_of_every_layer() -> None:
    found = _defined_errors()
    assert {"AIForgeError", "FailedRowsWarning", "BudgetExceededError", "BatchInterrupted", "AggregationError"} <= set(
        found
    )
    assert "_CalculatorError" not in found  # private by name


def test_every_public_error_is_importable_from_aiforge() -> None:
    found = _defined_errors()
    assert set(INTERNAL) <= set(found), "an INTERNAL entry names no class any more: drop it"
    missing = sorted(name for name in found if name not in INTERNAL and getattr(aiforge, name, None) is not found[name])
    assert missing == []
    assert not set(INTERNAL) & set(aiforge.__all__)
    assert {name for name in found if name not in INTERNAL} <= set(aiforge.__all__)


def test_every_public_error_lives_in_the_errors_home() -> None:
    """A user reads every error aiforge can raise in one module; the module that raises one imports it."""
    strays = sorted(f"{value.__module__}.{name}" for name, value in _defined_errors().items() if name not in INTERNAL)
    assert [stray for stray in strays if not stray.startswith("aiforge.core.errors.")] == []


def test_every_name_in_all_resolves() -> None:
    assert [name for name in aiforge.__all__ if not hasattr(aiforge, name)] == []


def test_the_errors_load_lazily_and_alone() -> None:
    """Naming ``aiforge.AggregationError`` imports the errors home then, not at ``import aiforge``, and nothing of
    the operation that raises it: ``except aiforge.AggregationError`` costs no pandas, batch or agent import."""
    probe = (
        "import sys, aiforge; before = set(sys.modules); aiforge.AggregationError; aiforge.BatchInterrupted; "
        "new = sorted(set(sys.modules) - before); print('aiforge.core.errors' in before, 'aiforge.core.errors' in new, "
        "[m for m in new if m.startswith('aiforge.') and not m.startswith('aiforge.core')])"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True", "[]"]
