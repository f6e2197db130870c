"""Semantic operators: what agg, join, topk, embed and dedup ask, against the calls a naive loop would make.

One module a measure, each a ``quick -> list[Row]`` function listed in ``MEASURES``:

- agg over 10 000 rows at three context windows: requests, input tokens and the largest request against the
  window (``bench/semantic_agg.py``).
- join on a synthetic 200 x 200 set with known matches: requests against the 40 000 pairs, recall and precision,
  at three candidate counts, and the small-right-side classification rewrite (``bench/semantic_join.py``); and
  one multiple-choice question per mention against a yes/no per pair on 200 paraphrased mentions x 40 products,
  on MiniLM vectors (``bench/join_mentions.py``).
- topk: requests against n log2 k and all pairs, and agreement with a full sort under a noisy judge
  (``bench/semantic_topk.py``).
- embed: rows a second on the embedded model, sentence-transformers' MiniLM and through a server
  (``bench/semantic_embed.py``).
- dedup: planted duplicates found (precision, recall) at three thresholds, and the model requests of
  ``confirm=`` against all pairs, and the same on the embedded model's vectors (``bench/semantic_dedup.py``).
- dedup thresholds: the threshold of best F1 per embedding model on planted paraphrases and rewordings, what
  ``semantic.dedup_thresholds`` is set from (``bench/dedup_thresholds.py``).
- dedup ``threshold="auto"``: precision, recall and requests on MiniLM vectors with a judge answering from the
  planted truth, and with the embedded SmolLM2 (``bench/dedup_auto.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from bench.common import Row, run_measures
from bench.dedup_auto import auto_rows
from bench.dedup_thresholds import threshold_rows
from bench.join_mentions import mention_rows
from bench.semantic_agg import agg_rows
from bench.semantic_dedup import dedup_embedded_rows, dedup_rows
from bench.semantic_embed import embed_rows
from bench.semantic_join import join_rows
from bench.semantic_topk import topk_rows

GROUP = "semantic"

MEASURES: list[Callable[[bool], list[Row]]] = [
    agg_rows, join_rows, mention_rows, topk_rows, embed_rows, dedup_rows, dedup_embedded_rows, threshold_rows,
    auto_rows,
]
"""The group's rows, one small function each (``quick -> rows``)."""


def run(quick: bool) -> list[Row]:
    return run_measures(GROUP, MEASURES, quick)
