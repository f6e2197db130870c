"""``BaseModule``: settings, provider and costs for every aiforge module; the run/batch contract.

``run_batch`` returns a ``BatchResult``; its DataFrame rows come from the results themselves
(``BatchItem``), so this module knows no module's result type.
"""

from __future__ import annotations

import asyncio
import os
import time
import typing
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from aiforge.core.aio import iterate_sync, run_sync
from aiforge.core.costs import CostTracker
from aiforge.core.settings import AIForgeSettings, load_settings

if TYPE_CHECKING:
    import pandas as pd

    from aiforge.providers.base import Provider


class BatchItem(Protocol):
    """What a module's ``arun`` returns: a result ``BatchResult`` can total and show as a row."""

    cost: float
    input_tokens: int
    output_tokens: int

    def to_row(self) -> dict[str, Any]:
        """This result's row of ``BatchResult.to_dataframe``: every column but ``input``."""
        ...

    @classmethod
    def failed_row(cls, error: str) -> dict[str, Any]:
        """The row of an item that failed with ``error``; its keys are the columns, in order."""
        ...


@dataclass(frozen=True, slots=True)
class BatchFailure:
    """An item of a batch that failed: its position, its input and the error."""

    index: int
    input: str
    error: BaseException

    def __repr__(self) -> str:
        error = f"{type(self.error).__name__}: {self.error}"
        return f"BatchFailure(index={self.index}, input={self.input[:40]!r}, error={error})"


@dataclass(slots=True)
class BatchResult:
    """Results of ``run_batch``: successes in input order, failures with their index."""

    item_type: type[BatchItem]
    """The type of ``results``, which lays out the DataFrame rows."""
    results: list[Any] = field(default_factory=list)
    failed: list[BatchFailure] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    indices: list[int] = field(default_factory=list)
    """Input position of each entry of ``results``."""
    wall_time_s: float = 0.0

    @property
    def total_cost(self) -> float:
        return sum(r.cost for r in self.results)

    @property
    def total_tokens(self) -> int:
        return sum(r.input_tokens + r.output_tokens for r in self.results)

    def __len__(self) -> int:
        return len(self.inputs)

    def to_dataframe(self) -> pd.DataFrame:
        """One row per input, in input order; failed items carry their error."""
        import pandas as pd

        rows: list[dict[str, Any] | None] = [None] * len(self.inputs)
        for index, result in zip(self.indices, self.results, strict=True):
            rows[index] = {"input": self.inputs[index], **result.to_row()}
        for failure in self.failed:
            error = f"{type(failure.error).__name__}: {failure.error}"
            rows[failure.index] = {"input": failure.input, **self.item_type.failed_row(error)}
        return pd.DataFrame(rows, columns=["input", *self.item_type.failed_row("")])

    def __repr__(self) -> str:
        return (
            f"BatchResult(items={len(self.inputs)}, ok={len(self.results)}, failed={len(self.failed)}, "
            f"total_cost={self.total_cost:.6f}, total_tokens={self.total_tokens})"
        )

    def _summary(self) -> str:
        return (
            f"{len(self.results)}/{len(self.inputs)} ok · {len(self.failed)} failed · "
            f"{self.total_tokens} tokens · ${self.total_cost:.5f} · {self.wall_time_s:.1f} s"
        )

    def _repr_markdown_(self) -> str:
        return f"**Batch** · {self._summary()}"

    def _repr_html_(self) -> str:
        import html

        failures = "".join(
            f"<li>#{f.index}: {html.escape(type(f.error).__name__)}: {html.escape(str(f.error)[:200])}</li>"
            for f in self.failed[:10]
        )
        more = f"<li>… {len(self.failed) - 10} more</li>" if len(self.failed) > 10 else ""
        return f"<div><b>Batch</b> · {html.escape(self._summary())}" + (
            f"<ul>{failures}{more}</ul></div>" if failures else "</div>"
        )


def _progress_enabled(settings: AIForgeSettings) -> bool:
    flag = os.environ.get("TQDM_DISABLE", "").strip().lower()
    return settings.PROGRESS_BAR and flag in ("", "0", "false", "no")


class BaseModule(ABC):
    """Settings, provider and cost tracking shared by aiforge modules.

    Subclasses implement ``arun`` and ``arun_stream``; the sync and batch forms come from here.
    ``arun``'s return annotation names its result type, a ``BatchItem``.
    """

    settings: AIForgeSettings
    cost_tracker: CostTracker
    provider: Provider
    provider_name: str

    def __init__(self, *, quality: str | None = None, provider: Any = None, **overrides: Any) -> None:
        from aiforge.core.router import select_model
        from aiforge.providers import create_provider, resolve_provider_name
        from aiforge.providers.base import Provider

        if provider is not None and not isinstance(provider, str | Provider):
            raise ValueError(f"provider must be a provider name or a Provider instance, got {type(provider).__name__}")
        if isinstance(provider, str):
            overrides["PROVIDER"] = provider
        self.settings = load_settings(**overrides)
        if self.settings.PRICES:
            from aiforge.core.pricing import parse_price_overrides

            parse_price_overrides(self.settings.PRICES)  # a malformed entry fails here, not mid-conversation
        if quality is not None and quality not in ("high", "medium", "low"):
            raise ValueError(f"quality must be 'high', 'medium' or 'low', got {quality!r}")
        self.quality = quality or self.settings.DEFAULT_QUALITY
        if isinstance(provider, Provider):
            self.provider = provider
            self.provider_name = getattr(provider, "provider_name", None) or provider.name
        else:
            self.provider_name = resolve_provider_name(self.settings)
            self.provider = create_provider(self.settings, self.provider_name)
        self.model = select_model(self.provider_name, self.quality, self.settings) or self.provider.default_model
        self.cost_tracker = CostTracker()

    # -- the contract ------------------------------------------------------------------

    @abstractmethod
    async def arun(self, text: str, **kwargs: Any) -> Any:
        """Process one input."""

    @abstractmethod
    def arun_stream(self, text: str, **kwargs: Any) -> AsyncIterator[str]:
        """Stream the output for one input."""

    @classmethod
    def result_type(cls) -> type[BatchItem]:
        """What ``arun`` returns, read from its return annotation."""
        result = typing.get_type_hints(cls.arun).get("return")
        if not (isinstance(result, type) and hasattr(result, "to_row") and hasattr(result, "failed_row")):
            raise TypeError(
                f"{cls.__name__}.arun must be annotated to return a type with to_row() and failed_row() "
                f"(see aiforge.modules.base.BatchItem), not {result!r}"
            )
        return result

    async def _arun_batch_item(self, text: str) -> Any:
        """Process one batch item; modules with state override this to isolate items."""
        return await self.arun(text)

    def run(self, text: str, **kwargs: Any) -> Any:
        return run_sync(self.arun(text, **kwargs))

    def run_stream(self, text: str, **kwargs: Any) -> Iterator[str]:
        return iterate_sync(self.arun_stream(text, **kwargs))

    # -- batch -------------------------------------------------------------------------

    def run_batch(self, items: Sequence[str] | Any, concurrency: int = 10, max_batch: int = 100) -> BatchResult:
        """Process ``items`` with at most ``concurrency`` in flight; see ``arun_batch``."""
        return run_sync(self.arun_batch(items, concurrency=concurrency, max_batch=max_batch))

    async def arun_batch(self, items: Sequence[str] | Any, concurrency: int = 10, max_batch: int = 100) -> BatchResult:
        """Process a list (or pandas Series) of inputs concurrently.

        Results come back in input order; a failed item is recorded in ``failed`` and never
        stops the others. More than ``max_batch`` items is a ``ValueError`` rather than a
        silent truncation.
        """
        item_type = self.result_type()
        inputs = _batch_inputs(items)
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be an integer >= 1, got {concurrency!r}")
        if isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1:
            raise ValueError(f"max_batch must be an integer >= 1, got {max_batch!r}")
        if len(inputs) > max_batch:
            raise ValueError(
                f"run_batch got {len(inputs)} items but max_batch={max_batch}; "
                f"pass max_batch={len(inputs)} to process them all, or split the list"
            )
        outcomes: list[Any] = [None] * len(inputs)
        errors: dict[int, BaseException] = {}
        progress = _progress_bar(len(inputs)) if _progress_enabled(self.settings) and inputs else None
        next_index = 0
        started = time.perf_counter()

        async def worker() -> None:
            # A fixed pool of workers pulling the next index bounds concurrency exactly and
            # keeps 1 000 items from becoming 1 000 waiting tasks.
            nonlocal next_index
            while next_index < len(inputs):
                index = next_index
                next_index += 1
                try:
                    outcomes[index] = await self._arun_batch_item(inputs[index])
                except Exception as exc:  # noqa: BLE001 - one item's failure must not lose the others
                    errors[index] = exc
                if progress is not None:
                    progress.update(1)

        try:
            await asyncio.gather(*(worker() for _ in range(min(concurrency, len(inputs)))))
        finally:
            if progress is not None:
                progress.close()
        result = BatchResult(item_type, inputs=inputs, wall_time_s=time.perf_counter() - started)
        for index in range(len(inputs)):
            if index in errors:
                result.failed.append(BatchFailure(index, inputs[index], errors[index]))
            else:
                result.results.append(outcomes[index])
                result.indices.append(index)
        return result


def _batch_inputs(items: Any) -> list[str]:
    if isinstance(items, str):
        raise ValueError("run_batch takes a list of strings (or a pandas Series), not a single string")
    try:
        values = list(items.tolist() if hasattr(items, "tolist") else items)
    except TypeError:
        raise ValueError(f"run_batch takes a list of strings, got {type(items).__name__}") from None
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise ValueError(f"run_batch item {i} is {type(value).__name__}, expected str")
    return values


def _progress_bar(total: int) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="aiforge batch", unit="item", leave=False)
