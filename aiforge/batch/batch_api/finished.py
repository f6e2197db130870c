"""A finished Batch API job's answers: a ``BatchResult`` in input order (an item never run, a missing value and an
answer that does not validate each a failure), and those items recorded in the checkpoint ``run_batch`` reads.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from aiforge.batch.batch_api.requests import to_result
from aiforge.batch.identity import batch_identity
from aiforge.batch.results import BatchResult
from aiforge.batch.resume import open_checkpoint
from aiforge.core.errors import (
    FileInputError,
    ItemNotRunError,
    MissingValueError,
    OutputRefusedError,
    OutputValidationError,
)

if TYPE_CHECKING:
    from aiforge.batch.owner import BatchOwner
    from aiforge.core.output import OutputSpec
    from aiforge.store import Checkpoint


def job_result(
    module: BatchOwner,
    inputs: list[str],
    outcomes: dict[int, Any],
    *,
    missing: dict[int, str | BaseException],
    reason: str,
    output: OutputSpec | None,
    discount: float,
    index: Any,
    wall_time_s: float,
) -> BatchResult:
    """Each of ``inputs`` answered from ``outcomes`` (by position; an exception is that item's failure) at the Batch
    API's ``discount``; an item with no outcome was never run (``ItemNotRunError(reason)``)."""
    result = BatchResult(module.result_type(), inputs=inputs, wall_time_s=wall_time_s, index=index, output=output)
    for position in range(len(inputs)):
        error: BaseException
        if position in missing:  # a missing value (its reason), or a file that could not be sent (its error)
            why = missing[position]
            error = why if isinstance(why, BaseException) else MissingValueError(why)
        elif isinstance(outcome := outcomes.get(position, ItemNotRunError(reason)), BaseException):
            error = outcome
        else:
            try:
                result.results.append(to_result(module, outcome, output, discount))
                result.indices.append(position)
                continue
            except (OutputValidationError, OutputRefusedError) as exc:
                error = exc
        result.fail(position, error)
    return result


def record_finished(
    result: BatchResult,
    module: BatchOwner,
    output: OutputSpec | None,
    path: str | os.PathLike[str],
    store: Checkpoint | None,
) -> None:
    """Write the finished items to the checkpoint at ``path`` that ``run_batch`` reads for the same batch (``store``:
    that checkpoint already open)."""
    # The very checkpoint run_batch opens for these inputs and settings.
    checkpoint = store or open_checkpoint(path, batch_identity(module, result.inputs, output), False)
    assert checkpoint is not None  # a path gives a checkpoint
    for position, item in zip(result.indices, result.results, strict=True):
        checkpoint.record(position, payload=item.to_payload())
    for failure in result.failed:
        if not isinstance(failure.error, MissingValueError | FileInputError):  # never sent: not recorded
            checkpoint.record(failure.position, error=f"{type(failure.error).__name__}: {failure.error}")
