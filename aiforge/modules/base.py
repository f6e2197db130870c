"""``BaseModule``: settings, provider and costs for every aiforge module; the run/batch contract.

``run_batch`` returns a ``BatchResult``; its DataFrame rows come from the results themselves
(``BatchItem``), so this module knows no module's result type. Items may be a list, a pandas Series or
DataFrame, with a row template (``core.templates.batch_prompts``); a row with a missing value fails
without a call.
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
from aiforge.core.output import OutputSpec
from aiforge.core.settings import AIForgeSettings, load_settings
from aiforge.core.templates import RowTemplate, batch_prompts

if TYPE_CHECKING:
    import pandas as pd

    from aiforge.providers.base import Provider


class BatchItem(Protocol):
    """What a module's ``arun`` returns: a result ``BatchResult`` can total and show as a row."""

    cost: float
    input_tokens: int
    output_tokens: int
    output: Any
    """The validated structured output; read only for batches run with ``output=``."""

    def to_row(self) -> dict[str, Any]:
        """This result's row of ``BatchResult.to_dataframe``: every column but ``input``."""
        ...

    @classmethod
    def failed_row(cls, error: str) -> dict[str, Any]:
        """The row of an item that failed with ``error``; its keys are the columns, in order."""
        ...


@dataclass(frozen=True, slots=True)
class BatchFailure:
    """An item of a batch that failed: its position, its input and the error.

    A row with a missing value fails with a ``MissingValueError`` and was never sent.
    """

    index: int
    input: str
    error: BaseException

    def __repr__(self) -> str:
        error = f"{type(self.error).__name__}: {self.error}"
        return f"BatchFailure(index={self.index}, input={self.input[:40]!r}, error={error})"


class MissingValueError(ValueError):
    """A batch row whose item or template field is None, NaN or ``pd.NA``: it fails without a call."""


@dataclass(slots=True)
class BatchResult:
    """Results of ``run_batch``: successes in input order, failures with their position.

    ``to_dataframe()`` is on the input's index; with ``output=`` it has one typed column per output field.
    """

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

    @property
    def total_cost(self) -> float:
        return sum(r.cost for r in self.results)

    @property
    def total_tokens(self) -> int:
        return sum(r.input_tokens + r.output_tokens for r in self.results)

    def __len__(self) -> int:
        return len(self.inputs)

    def to_dataframe(self) -> pd.DataFrame:
        """One row per input on the input's index; failed items carry their error.

        With ``output=``, the output's fields follow ``input`` as typed columns (null for a failed row,
        see ``core.columns``); a batch column whose name a field takes is renamed ``batch_<name>``.
        """
        import pandas as pd

        from aiforge.core.columns import output_columns

        rows: list[dict[str, Any] | None] = [None] * len(self.inputs)
        values: list[Any] = [None] * len(self.inputs)
        for index, result in zip(self.indices, self.results, strict=True):
            rows[index] = {"input": self.inputs[index], **result.to_row()}
            values[index] = result.output if self.output is not None else None
        for failure in self.failed:
            error = f"{type(failure.error).__name__}: {failure.error}"
            rows[failure.index] = {"input": failure.input, **self.item_type.failed_row(error)}
        frame = pd.DataFrame(rows, columns=["input", *self.item_type.failed_row("")], index=self.index)
        if self.output is None:
            return frame
        typed = output_columns(values, self.output, frame.index)
        frame = frame.rename(columns={name: f"batch_{name}" for name in frame.columns if name in typed.columns})
        for position, name in enumerate(typed.columns, start=1):
            frame.insert(position, name, typed[name].array)  # by position: an index may repeat labels
        return frame

    def __deepcopy__(self, memo: dict[int, Any]) -> BatchResult:
        # A finished batch is a record, shared rather than copied: pandas deep-copies ``attrs`` (where the
        # accessor keeps it) on every operation on the frame.
        return self

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

    async def _arun_batch_item(self, text: str, *, output: Any = None) -> Any:
        """Process one batch item; modules with state override this to isolate items."""
        return await (self.arun(text) if output is None else self.arun(text, output=output))

    def run(self, text: str, **kwargs: Any) -> Any:
        return run_sync(self.arun(text, **kwargs))

    def run_stream(self, text: str, **kwargs: Any) -> Iterator[str]:
        return iterate_sync(self.arun_stream(text, **kwargs))

    # -- batch -------------------------------------------------------------------------

    def run_batch(
        self,
        items: Sequence[str] | Any,
        concurrency: int = 10,
        max_batch: int = 100,
        *,
        output: Any = None,
        prompt: str | RowTemplate | None = None,
    ) -> BatchResult:
        """Process ``items`` with at most ``concurrency`` in flight; see ``arun_batch``."""
        return run_sync(
            self.arun_batch(items, concurrency=concurrency, max_batch=max_batch, output=output, prompt=prompt)
        )

    async def arun_batch(
        self,
        items: Sequence[str] | Any,
        concurrency: int = 10,
        max_batch: int = 100,
        *,
        output: Any = None,
        prompt: str | RowTemplate | None = None,
    ) -> BatchResult:
        """Process a list of strings, a pandas Series or a DataFrame concurrently.

        ``prompt`` is a template filled from each row: ``"Classify: {review}"`` names DataFrame columns;
        a list's or Series' values are ``{value}`` (a named Series' also its name). A DataFrame of one
        column needs no prompt; of several, it must have one. With ``output=`` (a type), each reply is
        validated into ``response.output``. Results come back in input order; a failed item is recorded
        in ``failed`` and never stops the others; a row with a missing value (None, NaN, ``pd.NA``) fails
        with "missing value: <column>" and makes no call. A template naming an unknown column, or more
        than ``max_batch`` items, is a ``ValueError`` before any call rather than a silent truncation.
        """
        item_type = self.result_type()
        spec = None if output is None else OutputSpec.of(output)
        prompts = batch_prompts(items, prompt)
        inputs = prompts.texts
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
        errors: dict[int, BaseException] = {i: MissingValueError(why) for i, why in prompts.missing.items()}
        pending = iter([i for i in range(len(inputs)) if i not in errors])
        progress = _progress_bar(len(inputs)) if _progress_enabled(self.settings) and inputs else None
        if progress is not None and errors:
            progress.update(len(errors))
        started = time.perf_counter()

        async def worker() -> None:
            # A fixed pool of workers pulling the next index bounds concurrency exactly and
            # keeps 1 000 items from becoming 1 000 waiting tasks.
            for index in pending:
                try:
                    outcomes[index] = await self._arun_batch_item(inputs[index], output=output)
                except Exception as exc:  # noqa: BLE001 - one item's failure must not lose the others
                    errors[index] = exc
                if progress is not None:
                    progress.update(1)

        try:
            await asyncio.gather(*(worker() for _ in range(min(concurrency, len(inputs) - len(errors)))))
        finally:
            if progress is not None:
                progress.close()
        result = BatchResult(
            item_type, inputs=inputs, wall_time_s=time.perf_counter() - started, index=prompts.index, output=spec
        )
        for index in range(len(inputs)):
            if index in errors:
                result.failed.append(BatchFailure(index, inputs[index], errors[index]))
            else:
                result.results.append(outcomes[index])
                result.indices.append(index)
        return result


def _progress_bar(total: int) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="aiforge batch", unit="item", leave=False)
