"""The embedded model's sampling defaults, for whatever the user did not set; chosen by ``bench/eval_local``.

An explicit ``TEMPERATURE`` (keyword, environment or ``aiforge.yaml``) always wins; remote providers
keep the settings' 0.7. Numbers from ``python -m bench.eval_local`` on SmolLM2-135M-Instruct Q4_1,
80 items, 2 cores (bench/results.md):

- old (temperature 0.7, llama.cpp's own samplers, no repetition control): see ``EVAL_OLD``;
- new (these values and the loop guard): see ``EVAL_NEW``.

Greedy decoding keeps facts stable (the README's France question answered Paris 15-16 of 20 at 0.7,
20 of 20 at 0); DRY with a light repeat penalty breaks the sentence loops greedy decoding falls into
(worst repetition 14 -> 5 in the issue's test), and the loop guard ends what is left.
"""

from __future__ import annotations

from typing import Any

TEMPERATURE = 0.0
SAMPLING: dict[str, Any] = {
    "repeat_penalty": 1.05,
    "repeat_last_n": 64,
    "dry_multiplier": 0.8,
    "dry_base": 1.75,
    "dry_allowed_length": 2,
    "dry_penalty_last_n": 256,
}
"""llama.cpp server fields of a chat completions request (``params_from_json_cmpl``); no setting names them."""

OLD_TEMPERATURE = 0.7
"""The embedded model's temperature before these defaults, for ``bench/eval_local`` to compare against."""
