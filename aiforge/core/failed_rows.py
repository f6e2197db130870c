"""The one warning an operation gives when it returns with rows that failed: a failed row is never a silent null.

``df.aiforge.map`` (and classify, filter, extract, judge, dedup's confirmation) keep going when a row fails (a
context-length error, a provider error after its retries, a reply that never validated, a missing value): the row
is null in the result (left out by ``filter``) and its error is in ``result.attrs["aiforge"].failed``. The call then
says so once, in one line (``FailedRowsWarning``): how many failed, the first reason, and where to read them all::

    FailedRowsWarning: 3 of 20 rows failed (first: ContextLengthError: ...); see result.attrs['aiforge'].failed

Silence it where the failures are expected, as any warning:
``warnings.filterwarnings("ignore", category=aiforge.FailedRowsWarning)``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Protocol

from aiforge.core.costs import caller_stacklevel
from aiforge.core.errors import FailedRowsWarning
from aiforge.core.logs import redact

REASON_CHARS = 160
"""The first reason is cut to this many characters (and to its first line): the warning stays one line."""


class FailedRow(Protocol):
    """What the warning reads of a failed row: a ``batch.results.BatchFailure`` (core imports nothing above it)."""

    @property
    def position(self) -> int: ...

    @property
    def error(self) -> BaseException: ...


def failed_rows_message(
    failed: Sequence[FailedRow], total: int, *, what: str = "rows", where: str = "result.attrs['aiforge'].failed"
) -> str:
    """The warning's line: ``"3 of 20 rows failed (first: ContextLengthError: ...); see <where>"``.

    >>> failed_rows_message([BatchFailure(4, "a long row", ValueError("too long\\nmore"))], 20)
    "1 of 20 rows failed (first: ValueError: too long); see result.attrs['aiforge'].failed"
    """
    first = min(failed, key=lambda failure: failure.position)  # the first row, whatever order they finished in
    return f"{len(failed)} of {total} {what} failed (first: {first_reason(first.error)}); see {where}"


def first_reason(error: BaseException) -> str:
    """``"ContextLengthError: <first line of the message>"``, keys redacted, cut to ``REASON_CHARS``."""
    lines = str(error).strip().splitlines()
    text = redact(f"{type(error).__name__}: {lines[0].strip()}" if lines else type(error).__name__)
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1].rstrip() + "…"


def warn_failed_rows(
    failed: Sequence[FailedRow], total: int, *, what: str = "rows", where: str = "result.attrs['aiforge'].failed"
) -> None:
    """One ``FailedRowsWarning`` when ``failed`` is not empty, pointing at the caller's line; nothing otherwise."""
    if failed:
        warnings.warn(
            failed_rows_message(failed, total, what=what, where=where),
            FailedRowsWarning,
            stacklevel=caller_stacklevel(),
        )
