"""A LocalCluster of 2 worker processes for the Dask tests, with the environment its workers start in.

Workers inherit ``os.environ`` as it is when they start, so a key and a base URL reach them exactly as on a real
cluster: through their environment, never through the pickled task. ``local_client`` sets those variables in this
process for as long as the cluster lives and restores them after; a function-scoped ``monkeypatch`` would come
too late for a module-scoped cluster.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from distributed import Client

    from fakellm import LLMServer


def openai_env(server: LLMServer, key: str) -> dict[str, str]:
    """The variables that point the openai provider at the test server with ``key`` (and keep tqdm quiet)."""
    return {"OPENAI_API_KEY": key, "OPENAI_BASE_URL": server.openai_base_url, "TQDM_DISABLE": "1"}


@contextmanager
def local_client(env: Mapping[str, str] | None = None, *, threads_per_worker: int = 1) -> Iterator[Client]:
    """A client of a LocalCluster of 2 worker processes started with ``env`` added to this process's environment.

    Example::

        with local_client(openai_env(server, KEY)) as client:
            ddf.aiforge.map("Say {city}.", provider="openai").compute()
    """
    from distributed import Client, LocalCluster

    added = dict(env or {})
    saved = {name: os.environ.get(name) for name in added}
    os.environ.update(added)
    try:
        with (
            LocalCluster(
                processes=True,
                n_workers=2,
                threads_per_worker=threads_per_worker,
                host="127.0.0.1",
                # a free port: the scheduler's HTTP server listens even without a dashboard, on 8787 when
                # this is None, and a second Dask on the machine (another test run) makes that bind fail
                # and leak a socket (a ResourceWarning, an error here)
                dashboard_address=":0",
            ) as cluster,
            Client(cluster) as client,
        ):
            yield client
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
