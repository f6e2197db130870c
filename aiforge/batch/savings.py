"""``Savings``: what a batch did not spend against the naive run, by source; ``row_savings`` measures a result's rows.

The naive run asks every row with a value (a missing-value row is no request) as one full request, each at the
price its answer was actually paid for. A saving is a request (and its tokens and dollars) that run would have
made and this one did not. Sources, named by the constants below:

- ``dedup``: a row whose rendered prompt an earlier row of the same batch has: it was answered by that row's
  request (``run_batch``'s in-batch dedup), marked ``cached`` with cost 0 and the twin's cost as ``cached_cost``.
- ``cache``: a row served by the response cache (``CACHE`` / ``cache=``).

Both are read from the rows themselves, so rows restored from a checkpoint or an interrupted run count as what
they were when they ran: ``total_cost + saved.dollars`` is the naive price of the column whichever run paid it.
Restoring a row is no saving of its own (the run that made it paid or saved it), and a row that failed saves
nothing. Other sources (row packing, cascades, provider prompt caches, flex and Batch API
tiers) add a ``Savings.of(source, ...)`` to ``BatchResult.extra_saved`` or, measured per row, a term here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiforge.core.types import UsageError

DEDUP = "dedup"
"""Rows answered by an identical earlier row's request in the same batch."""
CACHE = "cache"
"""Rows answered by the response cache."""
PACKING = "packing"
"""Rows answered k to a request (``pack=k``): the requests and input tokens one request per row would have taken."""
CASCADE = "cascade"
"""Rows a cascade's cheap model kept: the strong model's requests and dollars not spent (``BatchResult.cascade``)."""


@dataclass(frozen=True, slots=True)
class Savings:
    """Requests, tokens and dollars not spent against the naive run (one request per row), with each source's share.

    ``a + b`` adds two (partitions of a Dask job, or another source's saving); ``sum(parts, Savings())`` works.
    ``str()`` is one line: ``saved 12 of 40 requests, 3,100 tokens, $0.0042 (dedup 10, cache 2)``.
    """

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    dollars: float = 0.0
    naive_requests: int = 0
    """The requests of the naive run: every row with a value, one request each (0 when not known)."""
    by_source: Mapping[str, Savings] = field(default_factory=dict, hash=False)
    """Each source's own share (a ``Savings`` with no sources of its own), in the order they were added."""

    def __post_init__(self) -> None:
        for name in ("requests", "input_tokens", "output_tokens", "naive_requests"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise UsageError(f"Savings.{name} must be an integer >= 0, got {value!r}")
        if isinstance(self.dollars, bool) or not isinstance(self.dollars, int | float) or not self.dollars >= 0:
            raise UsageError(f"Savings.dollars must be a number of USD >= 0, got {self.dollars!r}")
        object.__setattr__(self, "by_source", dict(self.by_source))  # a copy: the caller's dict may change

    @classmethod
    def of(
        cls, source: str, *, requests: int = 0, input_tokens: int = 0, output_tokens: int = 0, dollars: float = 0.0
    ) -> Savings:
        """The saving of one ``source`` (``"dedup"``, ``"cache"``, ``"packing"``...): its totals and its breakdown."""
        if not isinstance(source, str) or not source:
            raise UsageError(f"Savings.of takes a source name such as 'dedup', got {source!r}")
        own = cls(requests, input_tokens, output_tokens, dollars)
        return cls(requests, input_tokens, output_tokens, dollars, by_source={source: own})

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: object) -> Savings:
        if not isinstance(other, Savings):
            return NotImplemented
        sources = dict(self.by_source)
        for name, part in other.by_source.items():
            sources[name] = sources[name] + part if name in sources else part
        return Savings(
            self.requests + other.requests,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.dollars + other.dollars,
            self.naive_requests + other.naive_requests,
            sources,
        )

    def __radd__(self, other: object) -> Savings:
        # sum(parts) starts from 0
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self
        return NotImplemented

    def __str__(self) -> str:
        of = f" of {self.naive_requests:,}" if self.naive_requests else ""
        text = f"saved {self.requests:,}{of} requests, {self.tokens:,} tokens, ${self.dollars:.4f}"
        parts = [f"{name} {part._headline()}" for name, part in self.by_source.items() if part._headline()]
        return text + (f" ({', '.join(parts)})" if parts else "")

    def _headline(self) -> str:
        """A source's share in a few characters: its requests, else its dollars, else its tokens ("" if none)."""
        if self.requests:
            return f"{self.requests:,}"
        if self.dollars:
            return f"${self.dollars:.4f}"
        return f"{self.tokens:,} tokens" if self.tokens else ""

    def __repr__(self) -> str:
        return f"Savings({self})"

    def _repr_html_(self) -> str:
        import html

        return f"<small>{html.escape(str(self))}</small>"


def row_savings(inputs: list[str], indices: Iterable[int], results: Iterable[Any], naive_requests: int) -> Savings:
    """The ``dedup`` and ``cache`` savings of a batch's successful rows (``results`` at input positions ``indices``).

    A row marked ``cached`` saved its tokens and its ``cached_cost``; it is ``dedup`` when an earlier successful
    row has the same prompt, else ``cache``.
    """
    seen: set[str] = set()
    counts: dict[str, list[Any]] = {DEDUP: [0, 0, 0, 0.0], CACHE: [0, 0, 0, 0.0]}
    for index, result in zip(indices, results, strict=True):
        text = inputs[index]
        twin = text in seen
        seen.add(text)
        if not getattr(result, "cached", False):
            continue
        count = counts[DEDUP if twin else CACHE]
        count[0] += 1
        count[1] += result.input_tokens
        count[2] += result.output_tokens
        count[3] += getattr(result, "cached_cost", None) or 0.0
    total = Savings(naive_requests=naive_requests)
    for source, (requests, input_tokens, output_tokens, dollars) in counts.items():
        if requests:
            total += Savings.of(
                source, requests=requests, input_tokens=input_tokens, output_tokens=output_tokens, dollars=dollars
            )
    return total
