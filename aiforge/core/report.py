"""What every operation's report has: ``result.attrs["aiforge"]`` reads the same four fields, whatever the operation.

``df.aiforge.map`` (classify, filter, extract, judge) puts a ``BatchResult`` there, ``agg`` an ``AggReport``,
``embed`` an ``EmbeddingReport``, ``dedup`` a ``DedupReport``, ``cluster`` a ``ClusterReport``, ``topk`` a
``TopKRun``, ``join`` a ``JoinReport``; a Dask job's summary is a ``JobSummary``, ``evaluate`` returns an
``EvalResult``, and a batch's strategy says what it did in a ``PackingStats`` or a ``CascadeReport``. Each is an
``OperationReport``:

- ``total_cost``: USD spent (an unpriced model's requests count $0.00);
- ``total_tokens``: input and output tokens of the requests made;
- ``requests``: requests sent to a provider (cache hits and repeated rows made none);
- ``failed``: one record per failure, in the operation's own shape (a ``BatchFailure`` for a row, a
  ``JoinFailure`` for a joined pair, ``(label, "Error: message")`` for a Dask row); empty when nothing failed
  or the operation raises rather than returns with a failure (``embed``, ``cluster``, ``topk``, ``agg``).

plus its own fields, which are all a report declares: the base writes every report the same way, its own fields
first and the four after them, as a repr (``JoinReport(strategy='classify', matches=3, ..., requests=3, failed=0,
total_tokens=120, total_cost=0.000210)``), a line for ``print`` (``strategy 'classify' · matches 3 · ... · 3 requests
· 0 failed · 120 tokens · $0.000210``) and a notebook's HTML (the line after the report's ``title``).

A report is a finished record, never changed once attached, and stays lean: pandas deep-copies ``.attrs`` on most
operations (``head``, ``copy``, arithmetic, ``__finalize__``), so every report's ``__deepcopy__`` returns itself
and no report holds a row-sized array (``embed``'s vectors are the Series' values, not its report's): ``s.head(5)``
of an embedding Series costs what a plain Series' does.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import fields, is_dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Self

SHARED_FIELDS = ("requests", "failed", "total_tokens", "total_cost")
"""What every report has, in the order its repr and summary show them (after the report's own fields)."""


class SharedOnDeepcopy:
    """A mixin: ``copy.deepcopy`` returns the report itself, so pandas' deep copy of ``.attrs`` copies nothing."""

    __slots__ = ()

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return self  # a finished record, shared: pandas deep-copies ``attrs`` on every operation


class OperationReport(SharedOnDeepcopy):
    """The base of every ``.attrs["aiforge"]`` report (see the module docstring): the four shared fields and how a
    report is written. A subclass is a dataclass (``repr=False``, so this repr is kept) that declares its own fields
    and the four, as fields or properties; a field declared ``repr=False`` is left out of the repr and summary, and
    ``shown()`` writes a field some other way (``AggReport``'s ``chunks=39 -> 5 -> 1``)."""

    __slots__ = ()
    title: ClassVar[str] = "Report"
    """The word a report's line starts with in a notebook's HTML (``Join``, ``Dedup``)."""

    if TYPE_CHECKING:  # declared for type checkers only: a subclass gives each as a field or a property

        @property
        def total_cost(self) -> float: ...

        @property
        def total_tokens(self) -> int: ...

        @property
        def requests(self) -> int: ...

        @property
        def failed(self) -> Sequence[Any]: ...

    def own_fields(self) -> dict[str, str]:
        """The report's own fields as they are written (``shown``): its dataclass fields in declared order, less
        those declared ``repr=False``, those holding None (a field that does not apply) and the four shared ones."""
        if not is_dataclass(self):
            return {}
        own = ((f.name, getattr(self, f.name)) for f in fields(self) if f.repr and f.name not in SHARED_FIELDS)
        return {name: self.shown(name, value) for name, value in own if value is not None}

    def shown(self, name: str, value: Any) -> str:
        """How the field ``name`` holding ``value`` is written: a float to 6 significant digits, others as reprs."""
        return f"{value:.6g}" if isinstance(value, float) else repr(value)

    def shared_fields(self) -> dict[str, str]:
        """The four shared fields as they are written: ``failed`` as a count, the cost to the micro-dollar."""
        return {
            "requests": str(self.requests),
            "failed": str(len(self.failed)),
            "total_tokens": str(self.total_tokens),
            "total_cost": f"{self.total_cost:.6f}",
        }

    def __str__(self) -> str:
        """One line for a person (``print(report)``): the own fields, then requests, failures, tokens and USD."""
        own = [f"{name.replace('_', ' ')} {value}" for name, value in self.own_fields().items()]
        shared = [
            f"{self.requests} requests",
            f"{len(self.failed)} failed",
            f"{self.total_tokens} tokens",
            f"${self.total_cost:.6f}",
        ]
        return " · ".join(own + shared)

    def __repr__(self) -> str:
        written = {**self.own_fields(), **self.shared_fields()}
        return f"{type(self).__name__}({', '.join(f'{name}={value}' for name, value in written.items())})"

    def _repr_html_(self) -> str:
        return f"<div><b>{html.escape(self.title)}</b> · {html.escape(str(self))}</div>"
