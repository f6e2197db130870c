"""``compute(result)``: one progress bar on the client, over a Dask job's partitions as they finish.

Workers draw no bar (``partition.process_agent``): in JupyterLab a ``LocalCluster``'s workers write to the kernel's
stderr, one box of stale bars per partition. ``distributed.progress(result.persist())`` and the dashboard work as
usual.
"""

from __future__ import annotations

from typing import Any

from aiforge.core.progress import progress_bar, progress_enabled


def compute(result: Any, *, progress: bool = True) -> Any:
    """``result.compute()``, with one progress bar on the client over the partitions as they finish.

    The bar is every long run's (``core.progress``: a widget in a notebook that ends as one line);
    ``TQDM_DISABLE=1`` or ``progress=False`` turn it off.
    """
    if not progress_enabled(progress):
        return result.compute()
    from distributed import as_completed, futures_of, get_client

    persisted = get_client().persist(result)
    futures = futures_of(persisted)
    with progress_bar(len(futures), "aiforge partitions", unit="partition", leave=True) as bar:
        for _ in as_completed(futures):
            bar.update(1)
    return persisted.compute()
