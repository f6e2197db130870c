"""A semantic join, by idea: ``run`` (``semantic_join``: the strategy chosen by the size of the right side, its
questions asked), ``template`` (the prompt's ``{left.col}``/``{right.col}`` fields and the questions built from it),
``candidates`` (the embeddings' nearest right rows of each left row), ``choices`` (one multiple-choice question per
left row over them, its depth chosen for ``target_recall``), ``asker`` (the embeddings run and each batch of
questions, noted on the report), ``rows`` (one side's distinct rows and the rows not asked), ``frame`` (the joined
DataFrame, by pandas ``merge``'s conventions) and ``report`` (``JoinReport``, ``JoinFailure``). The public surface
is ``left.aiforge.join(right, ...)``."""

from aiforge.semantic.join.report import JoinFailure, JoinReport
from aiforge.semantic.join.run import CLASSIFY_MAX_RIGHT, STRATEGIES, semantic_join

__all__ = ["CLASSIFY_MAX_RIGHT", "STRATEGIES", "JoinFailure", "JoinReport", "semantic_join"]
