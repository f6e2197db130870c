"""``BatchItem``: what a module's result must be to be a batch row (a ``ChatResponse`` is one)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from aiforge.core.output import OutputSpec


class BatchItem(Protocol):
    """What a module's ``arun`` returns: a result ``BatchResult`` can total and show as a row."""

    cost: float
    input_tokens: int
    output_tokens: int
    output: Any
    """The validated structured output; read only for batches run with ``output=``."""

    def to_row(self) -> dict[str, Any]:
        """This result's row of ``BatchResult.to_dataframe``: every column but ``input``.

        A result type may also give some columns a pandas dtype with a ``column_dtypes`` class attribute
        (``{"cached_tokens": "Int64"}``); without one every column's dtype is inferred.
        """
        ...

    @classmethod
    def failed_row(cls, error: str) -> dict[str, Any]:
        """The row of an item that failed with ``error``; its keys are the columns, in order."""
        ...

    def served_again(self) -> Any:
        """This result for another row with the same prompt: no request made, cost 0 (optional: without it,
        ``run_batch`` asks every row, see ``batch.dedup``)."""
        ...

    def to_payload(self) -> dict[str, Any]:
        """This result as JSON for a batch checkpoint (needed only by ``run_batch(checkpoint=...)``)."""
        ...

    @classmethod
    def from_payload(cls, payload: dict[str, Any], output: OutputSpec | None) -> Any:
        """The result ``to_payload`` wrote, its output validated again as ``output``."""
        ...
