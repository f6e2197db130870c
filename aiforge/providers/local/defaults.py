"""The embedded model's sampling defaults, for whatever the user did not set; chosen by ``bench/eval_local``.

An explicit ``TEMPERATURE`` (keyword, environment or ``aiforge.yaml``) always wins; remote providers
keep the settings' 0.7. Chosen by ``python -m bench.eval_local`` (78 labelled items, SmolLM2-135M-Instruct
Q4_1, 2 cores; bench/results.md), old defaults (temperature 0.7, llama.cpp's own samplers, no loop
guard) -> these values with the loop guard, every tool offered:

- facts 50% -> 100%, extraction 62% -> 88%, long answers 67% -> 83%, all items 40% -> 47%;
- replies that looped 2 -> 0 of 78, most repeats of one sentence in a reply 67 -> 1;
- replies cut at the token cap 3 -> 1 of 78.

Greedy decoding keeps facts stable (the README's France question: Paris in 15-16 of 20 fresh runs at
0.7, 20 of 20 now); DRY with a light repeat penalty breaks the sentence loops greedy decoding falls
into, and the loop guard (``loops.py``) ends what is left. Arithmetic (50% -> 38%) and greetings
(83% -> 50%: terser replies) are where greedy decoding measured worse.
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
