"""``JobOwner``: what a Batch API job needs of the module that submits it (``BaseModule`` has all of it).

A protocol, so that ``modules/jobs`` never imports ``modules/base``, which imports ``submit_batch`` from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from aiforge.core.costs import CostTracker
    from aiforge.core.output import OutputSpec
    from aiforge.core.settings import AIForgeSettings
    from aiforge.core.types import CallParams
    from aiforge.modules.batch.results import BatchItem
    from aiforge.providers.base import Provider
    from aiforge.store import BatchFingerprint


class JobOwner(Protocol):
    """The agent behind a ``BatchJob``: its provider, model and settings, its cost tracker, its batch identity."""

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

    def result_type(self) -> type[BatchItem]:
        """What one item's result is (``ChatResponse`` for a ``ChatAgent``)."""
        ...

    def _request_context(self) -> tuple[str, list[Any]]:
        """The system prompt and tool specs sent with every item."""
        ...

    def _call_params(self) -> CallParams:
        """The parameters of one item's call (a ``ChatAgent``'s are its own, as its live turns use them)."""
        ...

    def _batch_fingerprint(self, inputs: list[str], spec: OutputSpec | None) -> BatchFingerprint:
        """What identifies the batch (for its checkpoint)."""
        ...

    def _checkpoint(self, path: Any, batch: BatchFingerprint, restart: bool) -> Any:
        """The checkpoint at ``path`` for ``batch``, or None without a path."""
        ...
