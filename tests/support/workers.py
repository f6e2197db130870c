"""Which tests must run on the same pytest-xdist worker (``--dist loadgroup``, pyproject.toml's addopts).

Tests are spread over worker processes one by one, except those of one ``xdist_group``: a group runs on one
worker. ``share_a_worker`` puts in one group, named for the file, every test of a file that uses a module-scoped
fixture (a Dask cluster, a Jupyter kernel, Chromium, a llama.cpp server: started once per worker that runs any of
the file's tests, so once), and every cell of a notebook (nbval runs a notebook's cells in order in one kernel).
Naming a file on the command line turns the workers off (``no_workers_for_named_files``).
"""

from __future__ import annotations

import pytest

_SHARED_SCOPES = {"module", "class", "package"}


def share_a_worker(items: list[pytest.Item]) -> None:
    """Mark the items that must share a worker with ``xdist_group(<their file>)``; call from collection."""
    for item in items:
        if any(mark.name == "xdist_group" for mark in item.iter_markers("xdist_group")):
            continue
        if item.path.suffix == ".ipynb" or _SHARED_SCOPES & _fixture_scopes(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))


def _fixture_scopes(item: pytest.Item) -> set[str]:
    fixtures = getattr(item, "_fixtureinfo", None)  # pytest's own record of the fixtures an item uses
    if fixtures is None:
        return set()
    return {definition.scope for definitions in fixtures.name2fixturedefs.values() for definition in definitions}


def no_workers_for_named_files(config: pytest.Config) -> None:
    """A named file (``pytest tests/x.py -k name``, a notebook): no worker processes, whose start-up would cost
    more than the test. Call from ``pytest_cmdline_main`` (tryfirst); an explicit ``-n`` is kept."""
    args = [str(arg) for arg in config.invocation_params.args]
    if any(arg.startswith(("-n", "--numprocesses")) for arg in args) or not hasattr(config.option, "numprocesses"):
        return
    root = config.invocation_params.dir
    named = [arg.split("::", 1)[0] for arg in args if not arg.startswith("-")]  # an option's value too: a .cfg
    if any(path.endswith((".py", ".ipynb")) and (root / path).is_file() for path in named):
        config.option.numprocesses = 0
