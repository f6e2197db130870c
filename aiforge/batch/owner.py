"""``BatchOwner``: what running many items needs of the agent that owns them (a ``ChatAgent`` has all of it).

A protocol, so that ``aiforge.batch`` never imports the agent: the agent imports the batch runner and hands
itself to it (composition; nothing here is a base class). It declares public members only: what every request
of a batch carries is one frozen ``RequestContext`` the agent builds once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

if TYPE_CHECKING:
    from aiforge.batch.request.answer import ItemRequest
    from aiforge.batch.results import BatchItem
    from aiforge.core.costs import CostTracker
    from aiforge.core.output import OutputSpec
    from aiforge.core.settings import AIForgeSettings
    from aiforge.core.types import CallParams, ToolSpec
    from aiforge.providers.base import Provider
    from aiforge.store import ResponseCache


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What every request of an agent's batch carries besides the item: built once, with the agent."""

    provider: Provider
    """The agent's own provider (its ``complete``, ``score_labels``, ``batch_api``)."""
    provider_name: str
    model: str
    settings: AIForgeSettings
    system_prompt: str
    """The fully resolved system prompt (tool instructions included when tools are prompted)."""
    tools: tuple[ToolSpec, ...]
    """The tool specs sent with every request (empty without tools)."""
    params: CallParams
    """The parameters of one item's call: the agent's own, as its live turns use them."""
    items: ItemRequest | None = None
    """How a row is answered below ``chat/`` (``batch.request.answer``), for an agent without tools; None: a row
    is the owner's ``arun_batch_item`` (an agent with tools runs it on its LangGraph loop)."""


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
    def request_context(self) -> RequestContext:
        """The system prompt, tool specs and call parameters sent with every item."""
        ...

    @property
    def response_cache(self) -> ResponseCache | None:
        """The cache the ``CACHE`` setting names (None when off)."""
        ...

    def result_type(self) -> type[BatchItem]:
        """What one item's result is (``ChatResponse`` for a ``ChatAgent``)."""
        ...

    async def arun_batch_item(self, text: str, *, output: OutputSpec | None, cache: ResponseCache | None) -> Any:
        """One item, isolated from the others (a fresh conversation for a ``ChatAgent``)."""
        ...


def is_batch_owner(value: object) -> TypeGuard[BatchOwner]:
    """Whether ``value`` is an agent a batch can run on: one with a ``RequestContext`` and an item's run.

    Reads no other member: a ``ChatAgent``'s ``response_cache`` would open its cache file.
    """
    return isinstance(getattr(value, "request_context", None), RequestContext) and callable(
        getattr(value, "arun_batch_item", None)
    )
