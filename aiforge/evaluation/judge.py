"""Judges: a rubric turned into a row template and a score-and-reason output, for ``df.aiforge.judge``.

The default output asks for the reason first and the score second (the model writes its reasoning before it
commits to a number) and bounds the score to the rubric's scale, so a score outside it fails validation and is
asked again like any invalid structured answer. Whether the judge may replace people is for
``evaluation.agreement`` to say, on rows people scored too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiforge.core.templates import RowTemplate
from aiforge.core.types import UsageError

DEFAULT_SCALE = (1, 5)
"""The scores a rubric given as text runs over."""
JUDGEMENT_COLUMNS = ["score", "reason"]
"""The columns of a judge with the default output, in the order shown."""


def judgement_model(scale: tuple[int, int]) -> type[Any]:
    """A pydantic model ``Judgement(reason: str, score: int)`` with the score bounded to ``scale`` (inclusive)."""
    from pydantic import Field, create_model

    low, high = scale
    return create_model(
        "Judgement",
        reason=(str, Field(description="One or two sentences: why this score, citing the text.")),
        score=(int, Field(ge=low, le=high, description=f"The score, from {low} (worst) to {high} (best).")),
    )


def judge_request(
    criteria: str | Mapping[int, str],
    *,
    column: str | None = None,
    template: str | None = None,
    output: Any = None,
    scale: tuple[int, int] | None = None,
) -> tuple[str, Any]:
    """The row template and output type a judge asks with: the rubric, then the text (``{column}`` or ``template``).

    ``criteria`` is a rubric as text (scored over ``scale``, 1-5 by default) or levels ``{1: "wrong", 3: ..., 5:
    "complete and correct"}`` (the scale is then their lowest to highest)::

        prompt, output = judge_request("Is the answer polite?", column="answer")
    """
    rubric, scale = _rubric(criteria, scale)
    if (column is None) == (template is None):
        raise UsageError("judge: give the text to judge as column='answer' or as template='Q: {question} A: {answer}'")
    if template is not None:
        body = RowTemplate(template).template
    elif not isinstance(column, str):
        raise UsageError(f"judge: column= names the text column to judge, e.g. column='answer', not {column!r:.60}")
    else:
        body = f"Text:\n{{{column}}}"
    low, high = scale
    instructions = (
        "You are a careful, strict evaluator. Judge the text below against this rubric.\n\n"
        f"Rubric:\n{_escaped(rubric)}\n\n"
        f"Give a short reason, then a score from {low} (worst) to {high} (best)."
    )
    return f"{instructions}\n\n{body}", judgement_model(scale) if output is None else output


def _rubric(criteria: Any, scale: tuple[int, int] | None) -> tuple[str, tuple[int, int]]:
    if isinstance(criteria, Mapping):
        levels = dict(criteria)
        if len(levels) < 2 or not all(isinstance(k, int) and not isinstance(k, bool) for k in levels):
            raise UsageError(f"judge: criteria levels are {{score: description}} with int scores, got {levels!r:.80}")
        if scale is not None:
            raise UsageError("judge: criteria given as levels set the scale themselves; leave out scale=")
        text = "\n".join(f"{score}: {levels[score]}" for score in sorted(levels))
        return text, (min(levels), max(levels))
    if not isinstance(criteria, str) or not criteria.strip():
        raise UsageError("judge: criteria is the rubric as text, e.g. 'Is the answer correct and complete?'")
    scale = DEFAULT_SCALE if scale is None else scale
    integers = isinstance(scale, tuple) and all(isinstance(v, int) and not isinstance(v, bool) for v in scale)
    if not (integers and len(scale) == 2 and scale[0] < scale[1]):
        raise UsageError(f"judge: scale= is (lowest, highest) as two integers, e.g. (1, 5), not {scale!r}")
    return criteria.strip(), scale


def _escaped(text: str) -> str:
    """The rubric as literal template text: its braces are not row fields."""
    return text.replace("{", "{{").replace("}", "}}")
