"""Resuming work: what an earlier run of the same batch finished, from its checkpoint file or this process's memory.

A batch is identified by its ``BatchFingerprint`` (``identity.batch_identity``): the ordered fingerprints of its
prompts and the fingerprint of the settings its replies depend on. Items finished by an earlier run of the same
batch are taken from the checkpoint file (``checkpoint=``: one file for a whole call, ``checkpoint_file``; a call of
several batches gives each a ``CheckpointPart`` of it) and, after an interrupt in this process, from the
memory of interrupted work, kept by key for the whole process (not per agent: ``df.aiforge.map`` builds a new agent
per call, and the same call again must not pay twice). Failed items are recorded in the checkpoint with their
error but are run again on a rerun: a failure is usually transient (a timeout, a 429), and the user reruns to get
those rows. Items a budget skipped, and rows with a missing value, are never recorded.

``interrupted_work`` is that memory for any operation (a batch's finished rows, ``agg``'s answered chunks): the
last ``KEPT_BATCHES`` keys, the oldest dropped first.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from aiforge.core.errors import BatchInterrupted
from aiforge.core.types import UsageError

if TYPE_CHECKING:
    from aiforge.batch.item import BatchItem
    from aiforge.core.output import OutputSpec
    from aiforge.store import BatchFingerprint, Checkpoint

KEPT_BATCHES = 8
"""Interrupted runs whose finished work the process keeps in memory (the oldest is dropped first)."""

T = TypeVar("T")


class InterruptedWork:
    """What interrupted runs finished, by key, for the next run of the same work in this process."""

    def __init__(self, size: int = KEPT_BATCHES) -> None:
        self._size = size
        self._kept: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, key: str, value: Any) -> None:
        """Keep ``value`` for ``key`` (as the newest)."""
        with self._lock:
            self._kept.pop(key, None)
            self._kept[key] = value
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)

    def get(self, key: str) -> Any:
        """What is kept for ``key``; None if nothing."""
        with self._lock:
            return self._kept.get(key)

    def live(self, key: str, new: Callable[[], T], *, restart: bool = False) -> T:
        """What is kept for ``key`` (``new()`` if nothing, or with ``restart``), kept from now on as it grows."""
        with self._lock:
            value = self._kept.pop(key, None)
        value = new() if value is None or restart else value
        self.put(key, value)
        return value

    def forget(self, key: str) -> None:
        """Drop what was kept for ``key`` (its run has finished)."""
        with self._lock:
            self._kept.pop(key, None)

    def clear(self) -> None:
        """Forget everything: what a restarted kernel has in memory."""
        with self._lock:
            self._kept.clear()


interrupted_work = InterruptedWork()
"""The process's one memory of interrupted work."""


@dataclass(slots=True)
class KeptBatch:
    """The finished items of an interrupted batch, by index."""

    results: dict[int, Any]
    total: int


def keep(key: str, results: dict[int, Any], total: int) -> KeptBatch:
    """Keep an interrupted batch's finished items for the next run of the same batch (``key``) in this process."""
    entry = KeptBatch(dict(results), total)
    interrupted_work.put(key, entry)
    return entry


def forget(key: str) -> None:
    """Drop what was kept for batch ``key`` (its run has finished)."""
    interrupted_work.forget(key)


def interrupted(kept: KeptBatch) -> BatchInterrupted:
    """The one-line interrupt an interrupted ``run_batch`` ends with."""
    finished = len(kept.results)
    return BatchInterrupted(
        f"run_batch interrupted: {finished} of {kept.total} items finished and are kept; run the same call "
        f"again to run only the other {kept.total - finished}.",
        finished=finished,
        total=kept.total,
    )


class CheckpointPart(os.PathLike[str]):
    """One batch's place in a call's checkpoint file: the file (``os.fspath``) and the name of the part.

    ``agg``'s levels, ``evaluate``'s candidates and ``topk``'s rounds are each a batch of
    their own; each is given the call's ``checkpoint=`` file with its part's name, and ``run_batch`` keeps its
    finished rows there under that name (``store.Checkpoint``).
    """

    def __init__(self, path: str | os.PathLike[str], part: str) -> None:
        self.path = os.fspath(path)
        self.part = part

    def __fspath__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f"CheckpointPart({self.path!r}, {self.part!r})"


def checkpoint_file(checkpoint: Any, operation: str = "run_batch") -> str | None:
    """The checkpoint rule, the same for every operation: ``checkpoint=`` is one SQLite file holding every batch
    of the call, made if missing; None stays None. A folder (what ``agg``, ``evaluate`` and Dask took before), a
    bool or ``"memory"`` is a ``UsageError`` saying what to pass."""
    if checkpoint is None:
        return None
    if isinstance(checkpoint, CheckpointPart):
        return checkpoint.path
    if isinstance(checkpoint, bool) or not isinstance(checkpoint, str | os.PathLike) or checkpoint == "memory":
        raise UsageError(
            f"{operation}: checkpoint= is a file path (one SQLite file for every batch of the call), not {checkpoint!r}"
        )
    path = os.fspath(checkpoint)
    if os.path.isdir(path):
        raise UsageError(
            f"{operation}: checkpoint= is one file (every batch of the call in it), and {path} is a folder: "
            f"pass a file, e.g. checkpoint={os.path.join(path, 'checkpoint.sqlite')!r}"
        )
    return path


def checkpoint_beside(checkpoint: Any, name: str, operation: str) -> str | None:
    """The file of a batch that runs in another process, perhaps on another host (a Dask partition): beside the
    call's ``checkpoint=`` file, ``<stem>.<name><suffix>``, so that each file has one writer. SQLite's write-ahead
    log needs every writer of a file on one host; one writer per file keeps a shared filesystem usable."""
    path = checkpoint_file(checkpoint, operation)
    if path is None:
        return None
    stem, suffix = os.path.splitext(path)
    return f"{stem}.{name}{suffix}"


def checkpoint_part(checkpoint: Any, part: str, operation: str) -> CheckpointPart | None:
    """The batch ``part`` of a call whose ``checkpoint=`` is ``checkpoint`` (None without one); checked by the rule."""
    path = checkpoint_file(checkpoint, operation)
    return None if path is None else CheckpointPart(path, part)


def open_checkpoint(
    path: str | os.PathLike[str] | None,
    batch: BatchFingerprint,
    restart: bool,
    describe: Callable[[int], str | None] | None = None,
) -> Checkpoint | None:
    """The checkpoint at ``path`` for ``batch`` (None without a path): its part when ``path`` names one;
    ``describe`` names an item whose input differs from the checkpoint's (its files)."""
    if path is None:
        return None
    from aiforge.store import Checkpoint, Store

    store = Store.for_setting(checkpoint_file(path), kind="data")
    assert store is not None  # a path always names a store
    part = path.part if isinstance(path, CheckpointPart) else ""
    return Checkpoint(store, batch, restart=restart, part=part, describe=describe)


def finished_items(
    batch: BatchFingerprint, checkpoint: Checkpoint | None, item_type: type[BatchItem], spec: OutputSpec | None,
    *, restart: bool,
) -> dict[int, Any]:
    """Items an interrupted run of this batch in this process (any agent) or the checkpoint finished, not failed."""
    earlier = interrupted_work.get(batch.key)
    done = dict(earlier.results) if isinstance(earlier, KeptBatch) and not restart else {}
    if checkpoint is not None:
        for index, record in checkpoint.done().items():
            if record.status == "ok" and record.payload is not None and index not in done:
                done[index] = item_type.from_payload(record.payload, spec)
    return done


def recorded_job(checkpoint: str | os.PathLike[str] | None, provider_name: str) -> str:
    """The Batch API job id a checkpoint file holds (``BatchJob.attach(checkpoint=...)`` without a job id)."""
    from aiforge.store import Checkpoint, Store

    if checkpoint is None:
        raise UsageError("BatchJob.attach needs a job_id, or the checkpoint= that submit_batch was given.")
    if not os.path.exists(checkpoint):
        raise UsageError(f"checkpoint={os.fspath(checkpoint)!r} does not exist: there is no job to attach to.")
    store = Store.for_setting(checkpoint, kind="data")
    stored = None if store is None else Checkpoint.stored_job(store)
    if stored is None:
        raise UsageError(f"{os.fspath(checkpoint)} holds no Batch API job (it was not given to submit_batch).")
    job_id, provider = stored
    if provider != provider_name:
        raise UsageError(f"{os.fspath(checkpoint)} holds a {provider} job; the agent talks to {provider_name}.")
    return job_id
