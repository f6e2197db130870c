"""``BatchOwner``: what running many items needs of the agent that owns them (a ``ChatAgent`` has all of it).

A protocol, so that ``aiforge.batch`` never imports the agent: the agent imports the batch runner and hands
itself to it (composition; nothing here is a base class).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from aiforge.batch.results import BatchItem
    from aiforge.core.costs import CostTracker
    from aiforge.core.output import OutputSpec
    from aiforge.core.settings import AIForgeSettings
    from aiforge.core.types import CallParams
    from aiforge.providers.base import Provider
    from aiforge.store import ResponseCache


class BatchOwner(Protocol):
    """The agent behind a batch or a Batch API job: provider, model, settings, costs, and one item's run."""

    @property
    def settings(self) -> AIForgeSettings: ...

    @property
    def provider(self) -> Provider: ...

    @property
    def provider_name(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def cost_tracker(self) -> CostTracker: ...

    @property
    def response_cache(self) -> ResponseCache | None:
        """The cache the ``CACHE`` setting names (None when off)."""
        ...

    def result_type(self) -> type[BatchItem]:
        """What one item's result is (``ChatResponse`` for a ``ChatAgent``)."""
        ...

    def _request_context(self) -> tuple[str, list[Any]]:
        """The system prompt and tool specs sent with every item."""
        ...

    def _call_params(self) -> CallParams:
        """The parameters of one item's call (a ``ChatAgent``'s are its own, as its live turns use them)."""
        ...

    async def _arun_batch_item(self, text: str, *, output: OutputSpec | None, cache: ResponseCache | None) -> Any:
        """One item, isolated from the others (a fresh conversation for a ``ChatAgent``)."""
        ...
