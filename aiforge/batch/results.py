"""What ``run_batch`` returns: ``BatchResult`` (successes in input order, failures, skipped items) and its rows.

``BatchResult.saved`` is what the batch did not spend against asking every row (``savings.Savings``); its summary
line says how many rows were deduplicated (answered by an identical row's request) and served by the cache.

Its DataFrame rows come from the results themselves (``item.BatchItem``), so this module knows no module's
result type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiforge.batch.item import BatchItem as BatchItem  # where modules and BatchOwner read it
from aiforge.batch.savings import DEDUP, Savings, row_savings
from aiforge.core.errors import BudgetExceededError, FileInputError, MissingValueError
from aiforge.core.output import OutputSpec
from aiforge.core.report import OperationReport
from aiforge.core.timeline import MAX_ROWS

if TYPE_CHECKING:
    import pandas as pd

    from aiforge.batch.cascade.report import CascadeReport
    from aiforge.batch.packing_report import PackingStats
    from aiforge.core.timeline import Order, Timeline


@dataclass(frozen=True, slots=True)
class BatchFailure:
    """An item of a batch that failed: its index label, its input and the error.

    ``index`` is the row's label in the input's pandas index (as in ``to_dataframe()`` and the Dask summary),
    the position for a list; ``position`` is always the position. A row with a missing value fails with a
    ``MissingValueError`` and was never sent.
    """

    index: Any
    input: str
    error: BaseException
    position: int = -1
    """The input position; -1 (not given) takes ``index``, which is the position for a list."""

    def __post_init__(self) -> None:
        if self.position < 0:
            object.__setattr__(self, "position", self.index)

    def __repr__(self) -> str:
        error = f"{type(self.error).__name__}: {self.error}"
        return f"BatchFailure(index={self.index!r}, input={self.input[:40]!r}, error={error})"


@dataclass(slots=True, repr=False)
class BatchResult(OperationReport):
    """Results of ``run_batch``: successes in input order, failures with their index label; an ``OperationReport``
    (``core.report``) whose line for ``print`` and notebooks says more than the base's (skipped, cached, time).

    ``to_dataframe()`` is on the input's index; with ``output=`` it has one typed column per output field.
    """

    title = "Batch"

    item_type: type[BatchItem]
    """The type of ``results``, which lays out the DataFrame rows."""
    results: list[Any] = field(default_factory=list)
    failed: list[BatchFailure] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    indices: list[int] = field(default_factory=list)
    """Input position of each entry of ``results``."""
    wall_time_s: float = 0.0
    index: Any = None
    """The pandas index of a Series or DataFrame input (``None``: a list, rows by position)."""
    output: OutputSpec | None = None
    """The ``output=`` type of the batch, whose fields become columns."""
    extra_saved: Savings = field(default_factory=Savings)
    """Savings not read from the rows (``saved`` adds them): ``result.extra_saved += Savings.of("packing", ...)``."""
    report: CascadeReport | PackingStats | None = None
    """What the batch's strategy did, when it says more than its rows: a ``PackingStats`` with ``pack=k``, a
    ``CascadeReport`` with ``cascade=`` (also as ``packing`` and ``cascade``); a new strategy adds a report type."""
    plan: str = "as_is"
    """How the batch ran, as the estimate's plans are named (``batch.plans.PLANS``): ``deduped`` (the default),
    ``as_is`` (``dedup=False``: every row asked), ``packed``, ``flex`` or ``batch_api`` (``plan="cheapest"``),
    ``cascade``."""

    @property
    def cascade(self) -> CascadeReport | None:
        """What a ``cascade=`` batch did (each row's ``answered_by`` is a column of ``to_dataframe()``)."""
        from aiforge.batch.cascade.report import CascadeReport

        return self.report if isinstance(self.report, CascadeReport) else None

    @property
    def packing(self) -> PackingStats | None:
        """With ``pack=k`` (k > 1): the packed requests and rows, what packing saved is computed from."""
        from aiforge.batch.packing_report import PackingStats

        return self.report if isinstance(self.report, PackingStats) else None

    @property
    def total_cost(self) -> float:
        """USD spent: every result's cost, and with ``cascade`` the cheap model's scoring of every row.

        A result of a model aiforge has no price for counts $0.00: ``unpriced`` says how many, and the repr and
        summary say the total leaves them out (add the model to the ``PRICES`` setting).
        """
        if self.cascade is not None:  # the cheap pass scored the rows the strong model answered too
            return self.cascade.first_cost + self.cascade.then_cost
        total: float = sum(r.cost for r in self.results)
        return total

    @property
    def unpriced(self) -> int:
        """Results whose model aiforge has no price for (``priced=False``): ``total_cost`` leaves their cost out."""
        return sum(not getattr(r, "priced", True) for r in self.results)

    @property
    def total_tokens(self) -> int:
        """Input and output tokens: every result's, and with ``cascade`` the cheap model's on every row."""
        if self.cascade is not None:
            by = self.cascade.answered_by
            strong = (r for i, r in zip(self.indices, self.results, strict=True) if by[i] == "then")
            strong_tokens: int = sum(r.input_tokens + r.output_tokens for r in strong)
            return self.cascade.first_tokens + strong_tokens
        return sum(r.input_tokens + r.output_tokens for r in self.results)

    @property
    def requests(self) -> int:
        """Requests sent to the model: each answer's model steps (output retries included; a cached or repeated
        row's none), each packed request once, and one per row that failed once sent (a missing value or a row
        ``max_cost`` skipped was never sent). With ``cascade``, the rows the first pass kept count as its requests
        (``CascadeReport.first_requests``: the proxy's embeddings, or the cheap model's scoring of each distinct
        prompt)."""
        sent = 0
        by = self.cascade.answered_by if self.cascade is not None else ()
        for index, result in zip(self.indices, self.results, strict=True):
            if getattr(result, "cached", False) or getattr(result, "packed", False):
                continue
            if index < len(by) and by[index] == "first":
                continue
            trace = getattr(result, "trace", None)
            steps = sum(record.get("step") == "model" for record in trace) if trace else 0
            sent += steps or 1
        unsent = sum(isinstance(f.error, MissingValueError | BudgetExceededError | FileInputError) for f in self.failed)
        first = self.cascade.first_requests(self.inputs) if self.cascade is not None else 0
        return sent + first + (self.packing.requests if self.packing is not None else 0) + len(self.failed) - unsent

    @property
    def skipped(self) -> list[BatchFailure]:
        """The items a ``max_cost`` budget did not start (also in ``failed``); a rerun runs them."""
        return [f for f in self.failed if isinstance(f.error, BudgetExceededError)]

    @property
    def cached(self) -> int:
        """How many results made no request (cost 0): response-cache hits and ``deduplicated`` rows."""
        return sum(bool(getattr(r, "cached", False)) for r in self.results)

    @property
    def deduplicated(self) -> int:
        """How many results were answered by an identical earlier row's request (in-batch dedup)."""
        dedup = self.saved.by_source.get(DEDUP)
        return 0 if dedup is None else dedup.requests

    @property
    def saved(self) -> Savings:
        """Requests, tokens and dollars not spent against asking every row with a value once (``Savings``)."""
        missing = sum(isinstance(f.error, MissingValueError) for f in self.failed)
        return row_savings(self.inputs, self.indices, self.results, len(self.inputs) - missing) + self.extra_saved

    def __len__(self) -> int:
        return len(self.inputs)

    def fail(self, position: int, error: BaseException) -> None:
        """Record input ``position`` as failed with ``error``, under its index label."""
        self.failed.append(BatchFailure(self._label(position), self.inputs[position], error, position))

    def _label(self, position: int) -> Any:
        """Input ``position``'s label in the input's index (the position for a list)."""
        label = position if self.index is None else self.index[position]
        if hasattr(label, "dtype") and hasattr(label, "item"):  # a NumPy scalar: the Python value reads plainly
            label = label.item()
        return label

    def to_dataframe(self) -> pd.DataFrame:
        """One row per input on the input's index; failed items carry their error.

        With ``output=``, the output's fields follow ``input`` as typed columns (null for a failed row,
        see ``core.columns``); a batch column whose name a field takes is renamed ``batch_<name>``.
        """
        import pandas as pd

        from aiforge.core.columns import output_columns
        from aiforge.core.file_markers import shown

        rows: list[dict[str, Any] | None] = [None] * len(self.inputs)
        values: list[Any] = [None] * len(self.inputs)
        for index, result in zip(self.indices, self.results, strict=True):
            rows[index] = {"input": shown(self.inputs[index]), **result.to_row()}  # a file by its name
            values[index] = result.output if self.output is not None else None
        for failure in self.failed:
            error = f"{type(failure.error).__name__}: {failure.error}"
            rows[failure.position] = {"input": shown(failure.input), **self.item_type.failed_row(error)}
        frame = pd.DataFrame(rows, columns=["input", *self.item_type.failed_row("")], index=self.index)
        dtypes: dict[str, str] = getattr(self.item_type, "column_dtypes", {})  # optional on a result type
        if dtypes:
            frame = frame.astype(dtypes)
        if self.cascade is not None:
            frame["answered_by"] = pd.array(list(self.cascade.answered_by), dtype="string")
        if self.output is None:
            return frame
        typed = output_columns(values, self.output, frame.index)
        frame = frame.rename(columns={name: f"batch_{name}" for name in frame.columns if name in typed.columns})
        for position, name in enumerate(typed.columns, start=1):
            frame.insert(position, name, typed[name].array)  # by position: an index may repeat labels
        return frame

    def timeline(self, *, order: Order = "slowest", max_rows: int | None = MAX_ROWS) -> Timeline:
        """Every row's turn on the batch's time axis (waits, model calls, tools, retries): HTML bars in a notebook.

        ``order="slowest"`` shows the rows with the longest latency first (failed rows last), ``"input"`` in input
        order; the HTML shows ``max_rows`` rows (None: all) and says how many it left out; ``.to_frame()`` has
        every row's steps.

        >>> result = agent.run_batch(prompts, concurrency=4)   # doctest: +SKIP
        >>> result.timeline(max_rows=10)                       # doctest: +SKIP
        """
        from aiforge.core.timeline import batch_timeline

        rows: dict[int, tuple[Any, Any, str | None]] = {
            i: (self._label(i), result, None) for i, result in zip(self.indices, self.results, strict=True)
        }
        for f in self.failed:
            rows[f.position] = (f.index, None, f"{type(f.error).__name__}: {f.error}")
        in_order = [rows[i] for i in sorted(rows)]
        return batch_timeline(in_order, order=order, max_rows=max_rows, wall_ms=self.wall_time_s * 1000.0)

    def own_fields(self) -> dict[str, str]:
        """Rows in and answered, and when there are any, the rows a repeat answered and the unpriced ones."""
        deduplicated, unpriced = self.deduplicated, self.unpriced
        return (
            {"items": str(len(self.inputs)), "ok": str(len(self.results))}
            | ({"deduplicated": str(deduplicated)} if deduplicated else {})
            | ({"unpriced": f"{unpriced} (left out of total_cost)"} if unpriced else {})
        )

    def __str__(self) -> str:
        skipped, deduplicated = len(self.skipped), self.deduplicated
        hits = self.cached - deduplicated
        spared = [f"{deduplicated} deduplicated"] * bool(deduplicated) + [f"{hits} cached"] * bool(hits)
        return (
            f"{len(self.results)}/{len(self.inputs)} ok"
            + (f" ({', '.join(spared)})" if spared else "")
            + f" · {len(self.failed) - skipped} failed"
            + (f" · {skipped} skipped (budget)" if skipped else "")
            + f" · {self.total_tokens} tokens · ${self.total_cost:.5f}"
            + (f" (leaves out {self.unpriced} unpriced: no price, see PRICES)" if self.unpriced else "")
            + f" · {self.wall_time_s:.1f} s"
        )

    def _repr_markdown_(self) -> str:
        cascade = "" if self.cascade is None else f"\n\n{self.cascade}"
        return f"**Batch** · {self}{cascade}"

    def _repr_html_(self) -> str:
        import html

        failures = "".join(
            f"<li>#{html.escape(str(f.index))}: {html.escape(f'{type(f.error).__name__}: {str(f.error)[:200]}')}</li>"
            for f in self.failed[:10]
        )
        more = f"<li>… {len(self.failed) - 10} more</li>" if len(self.failed) > 10 else ""
        saved = self.saved
        note = f"<br><small>{html.escape(str(saved))}</small>" if saved.requests or saved.dollars else ""
        cascade = "" if self.cascade is None else self.cascade._repr_html_()
        return f"<div><b>Batch</b> · {html.escape(str(self))}{note}{cascade}" + (
            f"<ul>{failures}{more}</ul></div>" if failures else "</div>"
        )
