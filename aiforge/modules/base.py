"""``BaseModule``: settings, provider and costs for every aiforge module; the run/batch contract.

``run_batch`` returns a ``BatchResult`` (``modules/batch``). Items may be a list, a pandas Series or
DataFrame, with a row template (``core.templates.batch_prompts``); a row with a missing value fails
without a call. A batch can use the response cache, resume from a checkpoint or an interrupted run, stop at a
budget, or only be estimated (see ``arun_batch``).
"""

from __future__ import annotations

import asyncio
import os
import typing
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from aiforge.core.aio import iterate_sync, run_sync
from aiforge.core.costs import CostTracker
from aiforge.core.output import OutputSpec
from aiforge.core.progress import progress_bar, progress_enabled
from aiforge.core.settings import AIForgeSettings, load_settings
from aiforge.core.templates import RowTemplate, batch_prompts
from aiforge.core.types import CallParams, UsageError
from aiforge.modules.batch.embedded import warn_if_embedded
from aiforge.modules.batch.estimate import BatchEstimate, ItemPricer, estimate_of, item_pricer
from aiforge.modules.batch.results import BatchFailure, BatchItem, BatchResult, MissingValueError
from aiforge.modules.batch.runner import BatchRun, KeptBatch, forget, interrupted, keep, kept
from aiforge.modules.jobs.submit import SubmitsBatchJobs

if TYPE_CHECKING:
    from aiforge.providers.base import Provider
    from aiforge.store import BatchFingerprint, ResponseCache

__all__ = ["BaseModule", "BatchFailure", "BatchItem", "BatchResult", "MissingValueError"]
"""The batch types live in ``modules/batch``; importing them from here keeps working."""


class BaseModule(SubmitsBatchJobs, ABC):
    """Settings, provider and cost tracking shared by aiforge modules.

    Subclasses implement ``arun`` and ``arun_stream``; the sync and batch forms come from here.
    ``arun``'s return annotation names its result type, a ``BatchItem``.
    """

    settings: AIForgeSettings
    cost_tracker: CostTracker
    provider: Provider
    provider_name: str

    def __init__(
        self, *, quality: str | None = None, provider: Any = None, cache: Any = None, **overrides: Any
    ) -> None:
        from aiforge.core.router import select_model
        from aiforge.providers import create_provider, resolve_provider_name
        from aiforge.providers.base import Provider

        if provider is not None and not isinstance(provider, str | Provider):
            raise UsageError(f"provider must be a provider name or a Provider instance, got {type(provider).__name__}")
        if isinstance(provider, str):
            overrides["PROVIDER"] = provider
        if cache is not None:
            overrides["CACHE"] = cache
        self.settings = load_settings(**overrides)
        if self.settings.PRICES:
            from aiforge.core.pricing import parse_price_overrides

            parse_price_overrides(self.settings.PRICES)  # a malformed entry fails here, not mid-conversation
        if quality is not None and quality not in ("high", "medium", "low"):
            raise UsageError(f"quality must be 'high', 'medium' or 'low', got {quality!r}")
        self.quality = quality or self.settings.DEFAULT_QUALITY
        if isinstance(provider, Provider):
            self.provider = provider
            self.provider_name = provider.registry_name
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

    supports_cache: typing.ClassVar[bool] = False
    """Whether ``_arun_batch_item`` serves replies from a ``ResponseCache`` (the ``CACHE`` setting)."""

    @property
    def response_cache(self) -> ResponseCache | None:
        """The response cache the ``CACHE`` setting names, or None when it is off; opened on first use."""
        if "_response_cache" not in self.__dict__:
            self._response_cache = self._open_cache(self.settings.CACHE)
        return self._response_cache

    def _open_cache(self, value: Any) -> ResponseCache | None:
        from aiforge.store import ResponseCache, Store

        store = Store.for_setting(value, kind="cache")
        if store is not None and not self.supports_cache:
            raise UsageError(f"{type(self).__name__} has no response cache; leave CACHE / cache= off for it.")
        return None if store is None else ResponseCache(store)

    async def _arun_batch_item(self, text: str, *, output: Any = None, cache: ResponseCache | None = None) -> Any:
        """Process one batch item; modules with state override this to isolate items (and to use ``cache``)."""
        return await (self.arun(text) if output is None else self.arun(text, output=output))

    def _request_context(self) -> tuple[str, list[Any]]:
        """The system prompt and tool specs sent with every item (for estimates and batch identity)."""
        return "", []

    def _call_params(self) -> CallParams:
        """The parameters of one model call, as the module's settings give them (a Batch API job's requests)."""
        return CallParams(model=self.model, temperature=self.settings.TEMPERATURE, max_tokens=self.settings.MAX_TOKENS)

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
        cache: bool | str | os.PathLike[str] | None = None,
        checkpoint: str | os.PathLike[str] | None = None,
        restart: bool = False,
        max_cost: float | None = None,
        estimate: bool = False,
    ) -> Any:
        """Process ``items`` with at most ``concurrency`` in flight; see ``arun_batch``.

        Ctrl-C keeps the finished items in memory and ends with one line saying so (``BatchInterrupted``);
        the same call again in this process runs only the others, also through another agent of the same
        settings (the accessor builds one per call): items are kept by batch fingerprint, not by agent.
        """
        stopped: list[KeptBatch] = []
        options = dict(cache=cache, checkpoint=checkpoint, restart=restart, max_cost=max_cost, estimate=estimate)
        spec = self._typed_batch(output, estimate)
        try:
            return run_sync(self._batch(items, concurrency, max_batch, spec, prompt, options, stopped))
        except KeyboardInterrupt:
            if not stopped:
                raise
            raise interrupted(stopped[0]) from None

    async def arun_batch(
        self,
        items: Sequence[str] | Any,
        concurrency: int = 10,
        max_batch: int = 100,
        *,
        output: Any = None,
        prompt: str | RowTemplate | None = None,
        cache: bool | str | os.PathLike[str] | None = None,
        checkpoint: str | os.PathLike[str] | None = None,
        restart: bool = False,
        max_cost: float | None = None,
        estimate: bool = False,
    ) -> Any:
        """Process a list of strings, a pandas Series or a DataFrame concurrently; a ``BatchResult``.

        ``prompt`` is a template filled from each row: ``"Classify: {review}"`` names DataFrame columns;
        a list's or Series' values are ``{value}`` (a named Series' also its name). A DataFrame of one
        column needs no prompt; of several, it must have one. With ``output=`` (a type), each reply is
        validated into ``response.output``. Results come back in input order; a failed item is recorded
        in ``failed`` and never stops the others; a row with a missing value (None, NaN, ``pd.NA``) fails
        with "missing value: <column>" and makes no call. A template naming an unknown column, or more
        than ``max_batch`` items, is a ``ValueError`` before any call rather than a silent truncation.

        ``cache``: None uses the ``CACHE`` setting; False turns it off; True, a path or ``"memory"`` use
        that cache. ``checkpoint``: a file recording each finished item as it lands; the same batch run
        again (after Ctrl-C, a kernel restart, ``kill -9``) runs only the unfinished and the failed items.
        A checkpoint of another batch is a ``CheckpointMismatchError``; ``restart=True`` starts over.
        ``max_cost`` (USD): no item starts once the cost spent plus an estimate for the items in flight
        would pass it; the rest are in ``skipped`` (and ``failed``). ``estimate=True``: spend nothing,
        return a ``BatchEstimate``. See ``modules/batch`` for the rules.
        """
        options = dict(cache=cache, checkpoint=checkpoint, restart=restart, max_cost=max_cost, estimate=estimate)
        spec = self._typed_batch(output, estimate)
        return await self._batch(items, concurrency, max_batch, spec, prompt, options, None)

    def estimate_batch(
        self, items: Sequence[str] | Any, *, output: Any = None, prompt: str | RowTemplate | None = None,
        checkpoint: str | os.PathLike[str] | None = None,
    ) -> BatchEstimate:
        """What ``run_batch`` with these arguments would cost, before anything is spent (``BatchEstimate``)."""
        estimate: BatchEstimate = self.run_batch(items, len(items) or 1, max(len(items), 1), output=output,
                                                 prompt=prompt, checkpoint=checkpoint, estimate=True)
        return estimate

    def _typed_batch(self, output: Any, estimate: bool) -> OutputSpec | None:
        """``output=`` converted (the one conversion), with the embedded model's warning for a typed batch."""
        spec = None if output is None else OutputSpec.of(output)
        if spec is not None and not estimate:
            warn_if_embedded(self.provider)
        return spec

    async def _batch(
        self, items: Any, concurrency: int, max_batch: int, output: Any, prompt: str | RowTemplate | None,
        options: dict[str, Any], interrupted: list[KeptBatch] | None,
    ) -> Any:
        item_type = self.result_type()
        spec = None if output is None else OutputSpec.of(output)  # a spec already: passes through
        prompts = batch_prompts(items, prompt)
        inputs = prompts.texts
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise UsageError(f"concurrency must be an integer >= 1, got {concurrency!r}")
        if isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1:
            raise UsageError(f"max_batch must be an integer >= 1, got {max_batch!r}")
        if len(inputs) > max_batch:
            raise UsageError(
                f"run_batch got {len(inputs)} items but max_batch={max_batch}; "
                f"pass max_batch={len(inputs)} to process them all, or split the list"
            )
        max_cost = options["max_cost"]
        if max_cost is not None and (isinstance(max_cost, bool) or not isinstance(max_cost, int | float)
                                     or not max_cost >= 0):
            raise UsageError(f"max_cost must be a number of USD >= 0, got {max_cost!r}")
        cache = self.response_cache if options["cache"] is None else self._open_cache(options["cache"])
        batch = self._batch_fingerprint(inputs, spec)
        checkpoint = self._checkpoint(options["checkpoint"], batch, options["restart"])
        done = self._finished(batch, checkpoint, item_type, spec, restart=options["restart"])
        errors: dict[int, BaseException] = {i: MissingValueError(why) for i, why in prompts.missing.items()}
        if options["estimate"]:
            return estimate_of(self._pricer(spec), inputs, done, errors)
        pricer = self._pricer(spec) if max_cost is not None else None
        progress = progress_bar(len(inputs)) if progress_enabled(self.settings.PROGRESS_BAR) and inputs else None
        if progress is not None and (errors or done):
            progress.update(len(errors) + len(done))
        run = BatchRun(
            inputs,
            lambda text: self._arun_batch_item(text, output=spec, cache=cache),  # converted once, above
            done,
            errors,
            checkpoint=checkpoint,
            to_payload=None if checkpoint is None else item_type.to_payload,
            max_cost=max_cost,
            pricer=pricer,
            progress=progress,
        )
        try:
            wall_time_s = await run.run(concurrency)
        except (asyncio.CancelledError, KeyboardInterrupt):
            entry = keep(batch.key, done, len(inputs))
            if interrupted is not None:
                interrupted.append(entry)
            raise
        finally:
            if progress is not None:
                progress.close()
        forget(batch.key)
        result = BatchResult(item_type, inputs=inputs, wall_time_s=wall_time_s, index=prompts.index, output=spec)
        for index in range(len(inputs)):
            if index in errors:
                result.fail(index, errors[index])
            else:
                result.results.append(done[index])
                result.indices.append(index)
        return result

    def _batch_fingerprint(self, inputs: list[str], spec: OutputSpec | None) -> BatchFingerprint:
        """What identifies this batch: its prompts, and everything its replies depend on (never a key)."""
        from aiforge.store import batch_fingerprint, fingerprint
        from aiforge.store.fingerprint import public_endpoint

        system_prompt, tools = self._request_context()
        settings = {
            "module": type(self).__name__,
            "provider": self.provider_name,
            "endpoint": public_endpoint(self.provider.base_url),
            "model": self.model,
            "temperature": self.settings.TEMPERATURE,
            "max_tokens": self.settings.MAX_TOKENS,
            "system_prompt": system_prompt,
            "tools": tools,
            "output": None if spec is None else spec.wire_schema,
        }
        return batch_fingerprint([fingerprint(text) for text in inputs], settings)

    def _checkpoint(self, path: Any, batch: BatchFingerprint, restart: bool) -> Any:
        if path is None:
            return None
        from aiforge.store import Checkpoint, Store

        if isinstance(path, bool) or path == "memory":
            raise UsageError(f"checkpoint= is a file path (one file per batch), not {path!r}")
        return Checkpoint(Store.for_setting(path, kind="data"), batch, restart=restart)  # type: ignore[arg-type]

    def _finished(
        self, batch: BatchFingerprint, checkpoint: Any, item_type: type[BatchItem], spec: OutputSpec | None,
        *, restart: bool,
    ) -> dict[int, Any]:
        """Items an interrupted run of this batch in this process (any agent) or the checkpoint finished, not failed."""
        earlier = kept(batch.key)
        done = {} if earlier is None or restart else dict(earlier.results)
        if checkpoint is not None:
            for index, record in checkpoint.done().items():
                if record.status == "ok" and index not in done:
                    done[index] = item_type.from_payload(record.payload, spec)
        return done

    def _pricer(self, spec: OutputSpec | None) -> ItemPricer:
        system_prompt, tools = self._request_context()
        return item_pricer(
            model=self.model,
            system_prompt=system_prompt,
            extras=[*tools, *([] if spec is None else [spec.wire_schema])],
            max_tokens=self.settings.MAX_TOKENS,
            free=self.provider.free,
            prices=self.settings.PRICES,
        )
