"""Which label batches are answered by scoring: ``Provider.score_labels`` instead of a generated answer (issue 24).

A row whose output is a label (``classify``'s Literal, ``filter``'s bool, an Enum: ``output_labels.label_values``)
can be answered by reading each label's likelihood as the whole answer. On the embedded model that is more
accurate and 3-5x faster than decoding under a grammar of the labels (``bench/cost_label_scoring.py``), so there it
is the default. The ``LABELS_BY`` setting decides: ``"auto"`` scores where the provider ``classifies_by_scoring``
and the agent has no tools (a scored row runs none), ``"scoring"`` wherever the provider can score,
``"generation"`` never. Other outputs are always generated.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import TYPE_CHECKING, Any

from aiforge.batch.output_labels import label_values
from aiforge.core.costs import caller_stacklevel
from aiforge.core.types import UsageError
from aiforge.providers.labels import unrepeated_labels

if TYPE_CHECKING:
    from aiforge.batch.options import BatchOptions
    from aiforge.core.output import OutputSpec
    from aiforge.core.settings import AIForgeSettings
    from aiforge.providers.base import Provider


def scored_labels(
    provider: Provider, settings: AIForgeSettings, spec: OutputSpec | None, *, tools: bool
) -> dict[str, Any] | None:
    """Each label's text -> its output value when a batch row of ``spec`` is scored on ``provider``; None when it
    is generated. ``LABELS_BY="scoring"`` where scoring cannot answer is a ``UsageError`` saying what to change."""
    mode = settings.LABELS_BY
    if spec is None or mode == "generation":
        return None
    try:
        values = label_values(spec)
        unrepeated_labels(list(values))
    except UsageError:  # not a label output (or labels no provider can score): generated
        return None
    if mode == "auto":
        return values if provider.classifies_by_scoring and not tools else None
    name = provider.registry_name
    if not provider.scores_labels:
        raise UsageError(
            f"LABELS_BY=scoring, but the {name} provider cannot score labels (scores_labels is False); "
            "set LABELS_BY='auto' (env AIFORGE_LABELS_BY, or aiforge.yaml) to generate its answers"
        )
    if tools:
        raise UsageError(
            "LABELS_BY=scoring answers each row without running tools, and this agent has tools; "
            "use an agent without tools, or LABELS_BY='auto' to generate the answers"
        )
    return values


def check_calibration(options: BatchOptions, scored: dict[str, Any] | None) -> None:
    """A ``UsageError`` for ``calibrate=True`` on a batch whose rows are not all scored."""
    if not options.calibrate or options.estimate:
        return
    if scored is None:
        raise UsageError(
            "calibrate=True calibrates scored labels, and this batch's rows are generated: it needs a label output "
            "(classify, filter, a Literal, Enum or bool) on a provider that scores them (LABELS_BY='scoring' or "
            "'auto' on the embedded model)"
        )
    if options.pack > 1:
        raise UsageError("calibrate=True does not combine with pack=: packed rows are generated, not scored")


def unpacked_if_scored(options: BatchOptions, scored: dict[str, Any] | None, mode: str) -> BatchOptions:
    """``options`` without ``pack=`` when the rows are scored, which is one row a call (a packed request would be
    generated, mixing generated and scored rows in one column): a ``UsageError`` under ``LABELS_BY="scoring"``,
    one warning line under ``"auto"``."""
    if scored is None or options.pack == 1:
        return options
    if mode == "scoring":
        raise UsageError(
            "LABELS_BY=scoring answers each row by itself and does not combine with pack=; drop pack=, or set "
            "LABELS_BY='generation' to pack generated answers"
        )
    warnings.warn(
        f"pack={options.pack} is not used: this provider scores label rows one by one (LABELS_BY=auto); set "
        "LABELS_BY='generation' to pack generated answers instead",
        UserWarning,
        stacklevel=caller_stacklevel(),
    )
    return dataclasses.replace(options, pack=1)
