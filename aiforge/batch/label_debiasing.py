"""Debiasing scored label rows by their batch (batch calibration, ``run_batch(calibrate=True)``, issue 24).

A small model leans towards some labels whatever the row: the embedded model gives most reviews "positive" its
highest probability. Batch calibration asks instead which label is likelier *for this row* than for the batch's
average row: each label's mean log-probability over the batch's scored rows is subtracted from the row's, and the
answer and its confidence come from a softmax of what is left. Measured on the embedded model (bench/results.md,
"cost"): on the raw scores 56% -> 73% right on 66 reviews' sentiment and 50% -> 73% on 44 yes/no rows; through
``classify`` (its prompt and system prompt) 50% -> 70% and 52% -> 57%.

The price is that a row's answer depends on the rest of its batch: the same row may be answered otherwise in
another batch, and a batch of a few rows, or of rows that truly share one label, is pushed towards labels it does
not hold. So it is asked for, never the default. It runs after every row is scored, on the rows' model
probabilities (``label_probabilities``, which stay as the model gave them), so cache hits, checkpoints,
resumed and deduplicated rows take part as any other; a row answered without scores is left as it is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from aiforge.providers.labels import normalised

FLOOR = 1e-300
"""The least probability counted, so a label a row rules out (probability 0) has a finite log."""


def calibrated(results: Mapping[int, Any], values: Mapping[str, Any]) -> dict[int, Any]:
    """``results`` (input position -> a batch row) with each scored row answered again after batch calibration.

    ``values`` is each label's text -> its output value. A scored row has ``label_probabilities`` and
    ``relabelled(value, confidence)`` (a ``ChatResponse``); other rows are returned unchanged.
    """
    logs = {
        position: {label: math.log(max(probability, FLOOR)) for label, probability in probabilities.items()}
        for position, result in results.items()
        if (probabilities := getattr(result, "label_probabilities", None))
    }
    if not logs:
        return dict(results)
    means = {label: sum(row[label] for row in logs.values()) / len(logs) for label in values}
    answered = dict(results)
    for position, row in logs.items():
        probabilities = normalised({label: row[label] - means[label] for label in values})
        answer = max(probabilities, key=probabilities.__getitem__)
        answered[position] = results[position].relabelled(values[answer], probabilities[answer])
    return answered
