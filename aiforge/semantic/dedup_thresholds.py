"""``dedup``'s threshold when none is given: the embedding model's own, from ``DEDUP_THRESHOLDS``.

Cosine similarities mean different things for different models: MiniLM puts a reworded duplicate at 0.5-0.9,
a chat model's pooled vectors put unrelated texts at 0.7-0.9. So there is no one threshold for all; each entry
below is chosen from the pairwise F1 that ``bench/dedup_thresholds.py`` measures on planted duplicates (the numbers
under ``DEDUP_THRESHOLDS``), and a model not in the table keeps ``FALLBACK_THRESHOLD``.
"""

from __future__ import annotations

FALLBACK_THRESHOLD = 0.9
"""A model not in the table: the threshold ``dedup`` has always had (near-copies, not paraphrases)."""

DEDUP_THRESHOLDS: dict[str, float] = {
    "all-MiniLM-L6-v2": 0.65,
    "SmolLM2-135M-Instruct": 0.99,
    "text-embedding-3-small": FALLBACK_THRESHOLD,
}
"""Threshold by embeddings model (the name ``EmbeddingReport.model`` gives; a folder by its last part). Pairwise F1
of ``dedup``'s groups, measured by ``bench/dedup_thresholds.py`` (2026-12-06, 2 cores):

- all-MiniLM-L6-v2: on 81 bug titles, 36 bugs each in 2-3 people's own words, F1 0.70 at 0.65 (precision 1.00,
  recall 0.54), 0.73 at 0.55 (0.83 / 0.65, a false pair appears), 0.43 at 0.7, 0.00 at 0.9 (no paraphrase is that
  close); issue 32's 200 bug titles: 0.78 / 0.78 at 0.6, 0.94 / 0.46 at 0.7. On 2 000 templated tickets whose
  distinct ones differ only in names and numbers (``semantic_dedup.planted_tickets``), 0.65 merges them (precision
  0.07): best F1 0.79 at 0.94. Paraphrases are what a default is for; for records that differ in a name or a
  number, give ``threshold=0.9`` or more, or ``confirm=``.
- SmolLM2-135M-Instruct (the embedded chat model's pooled vectors): no threshold works; the best F1 is 0.07 on the
  bug titles (at 0.93) and 0.41 on the tickets at 0.99 (0.00 at 0.9, where every pair is a duplicate).
- text-embedding-3-small: not measured here (no key in the test environment): today's 0.9 is kept.
"""


def default_threshold(model: str) -> float:
    """The table's threshold for ``model`` (``org/name`` or a folder path by its last part), else the fallback.

    >>> default_threshold("all-MiniLM-L6-v2"), default_threshold("/models/all-MiniLM-L6-v2/")
    (0.65, 0.65)
    """
    name = model.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    return DEDUP_THRESHOLDS.get(model, DEDUP_THRESHOLDS.get(name, FALLBACK_THRESHOLD))
