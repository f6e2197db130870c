"""Register ``df.aiforge`` when pandas is loaded, without ``import aiforge`` importing pandas.

If pandas is imported already, the accessor is registered at once. Otherwise a finder on
``sys.meta_path`` waits for the first ``import pandas``, removes itself, and wraps pandas' own loader so
the accessor is registered right after pandas has finished executing. Stdlib only, so it costs nothing.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Any

ACCESSOR_MODULE = "aiforge.dataframes.accessor"


def register_accessor_with_pandas() -> None:
    """Register the accessor now if pandas is loaded, else when it is."""
    if "pandas" in sys.modules:
        _register()
    elif not any(isinstance(finder, _PandasImportFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PandasImportFinder())


def _register() -> None:
    try:
        importlib.import_module(ACCESSOR_MODULE)
    except Exception as exc:  # noqa: BLE001 - a broken accessor must never break `import pandas`
        warnings.warn(f"aiforge could not register the pandas accessor: {exc!r}", stacklevel=2)


class _PandasImportFinder:
    """Finds nothing itself: hands pandas' spec on with a loader that registers after executing it."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "pandas":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _RegisteringLoader(spec.loader)
        return spec


class _RegisteringLoader:
    """pandas' loader, then the registration; pandas is left with its own loader."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec: Any) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        _register()
