"""Evaluation: candidate grids (prompts x agents) as tidy DataFrames with the statistics that mean something
(Wilson intervals, Cohen's kappa, macro-F1), judges, and their agreement with people. ``df.aiforge.evaluate`` and
``df.aiforge.judge`` in ``dataframes/`` are the public surface; ``agreement(predicted, human)`` compares any two
label columns."""

from aiforge.evaluation.agreement import Agreement, agreement
from aiforge.evaluation.result import EvalResult

__all__ = ["Agreement", "EvalResult", "agreement"]
