"""``topk``: the k rows that best satisfy a prompt, by model comparisons in a tournament, never n² calls.

Two methods, both deterministic for a deterministic model. The agent built when ``agent=None`` sends TEMPERATURE=0
unless the settings give one; an agent you pass is used as it is (give it TEMPERATURE=0 for a repeatable run).

- ``"listwise"`` (the default; RankGPT's finding that a model ranks a window of passages at once well): the
  candidates are split into windows of about ``w = max(window, 2k)`` rows; one request per window returns the ids of
  its best ``min(k, size)`` rows, best first; the kept rows are the next round's candidates, until one window holds
  them all and its ranking is the answer. A window holds more than k rows, so every round at least halves the
  candidates: ``calls = Σ_r ⌈c_r / w⌉`` with ``c_0 = n`` and ``c_{r+1} = k·⌈c_r / w⌉`` (``listwise_calls``), about
  ``n / (w - k)``: 60 for n = 300, k = 5.
- ``"pairwise"`` (tournament sort; LOTUS offers quickselect and a heap over pairwise comparisons, whose quickselect
  is n² in its worst case): a knockout tournament finds the best row in ``n - 1`` comparisons, played a level at a
  time (each level one concurrent batch); each next row replays only the winner's path, at most ``⌈log2 n⌉``
  comparisons in a row. ``calls ≤ n - 1 + (k - 1)·⌈log2 n⌉`` (``pairwise_calls``); a pair is never asked twice.

Position bias: a window lists its rows in a fixed pseudo-random order (seeded, so the same data gives the same
windows), so the rows that come first in the frame are not always shown first; in a pairwise comparison which row
is shown as A is a fixed coin flip per pair (a CRC of the two positions), so neither order is favoured. Each
comparison is asked once, in one order.

Failures: a reply that does not parse (a ranking with a repeated or unknown id, an answer other than A or B) goes
back to the model with what was wrong (the agent's ``output_retries``), and transport errors are retried by the
provider (``MAX_RETRIES``). A comparison still failing after that is asked once more in a batch of its own; a second
failure raises ``ComparisonFailedError`` naming the rows it compared: a row is never dropped, nor guessed at.
A comparison ``max_cost`` did not start raises ``BudgetExceededError``. ``cache=True`` makes the rerun free for every
comparison already answered.
"""

from aiforge.semantic.topk.methods import DEFAULT_WINDOW, listwise_calls, pairwise_calls
from aiforge.semantic.topk.rank import METHODS, RANK_COLUMN, rank_rows, ranked_frame
from aiforge.semantic.topk.rounds import TopKRun

__all__ = [
    "DEFAULT_WINDOW",
    "METHODS",
    "RANK_COLUMN",
    "TopKRun",
    "listwise_calls",
    "pairwise_calls",
    "rank_rows",
    "ranked_frame",
]
