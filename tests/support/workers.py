"""How the tests use pytest-xdist's workers (pyproject.toml's addopts: ``-n 4 --dist loadfile``).

``--dist loadfile`` sends all of a file's tests to one worker: a notebook's cells run in order in one kernel, and a
module-scoped fixture (a Dask cluster, a Jupyter kernel, Chromium, a llama.cpp server) starts once per file.
Naming a file on the command line turns the workers off (``no_workers_for_named_files``).
"""

from __future__ import annotations

import pytest


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
