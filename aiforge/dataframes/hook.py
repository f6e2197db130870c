"""Register ``df.aiforge`` when pandas is loaded (``ddf.aiforge`` when dask.dataframe is), importing neither.

If the library is imported already, its accessor is registered at once. Otherwise a finder on
``sys.meta_path`` waits for the first import of it, removes itself, and wraps the library's own loader so
the accessor is registered right after the library has finished executing. Stdlib only, so it costs nothing.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

ACCESSOR_MODULE = "aiforge.dataframes.accessor"


def register_accessor_with_pandas() -> None:
    """Register each accessor now if its library is loaded, else when it is (pandas, then dask.dataframe)."""
    for finder in (_PandasImportFinder, _DaskImportFinder):
        if finder.library in sys.modules:
            _register(finder.accessor)
        elif not any(isinstance(waiting, finder) for waiting in sys.meta_path):
            sys.meta_path.insert(0, finder())


def _register(accessor: str) -> None:
    try:
        importlib.import_module(accessor)
    except Exception as exc:  # noqa: BLE001 - a broken accessor must never break `import pandas`
        warnings.warn(f"aiforge could not register the accessor {accessor}: {exc!r}", stacklevel=2)


class _ImportFinder:
    """Finds nothing itself: hands the library's spec on with a loader that registers after executing it."""

    library = ""
    accessor = ""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != self.library:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            # A loader by duck typing: what it does not define itself comes from the wrapped loader.
            spec.loader = cast("Loader", _RegisteringLoader(spec.loader, self.accessor))
        return spec


class _PandasImportFinder(_ImportFinder):
    library = "pandas"
    accessor = ACCESSOR_MODULE


class _DaskImportFinder(_ImportFinder):
    library = "dask.dataframe"
    accessor = "aiforge.dataframes.dask"


class _RegisteringLoader:
    """The library's loader, then the registration; the library is left with its own loader."""

    def __init__(self, loader: Loader, accessor: str) -> None:
        self._loader = loader
        self._accessor = accessor

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec: Any) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        _register(self._accessor)
