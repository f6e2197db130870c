"""The row operations of ``df.aiforge`` and ``s.aiforge``: map, classify, filter, extract and judge, each one
``run_batch`` over the rows, whose results are new columns on the input's index (``results``).

Prompts are row templates (``core.templates``): ``"Classify: {review}"`` names a DataFrame's columns; on a Series,
``{value}`` (or the Series' name) is the value. Rows whose prompt is the same are asked once (``run_batch``'s
dedup); the batch options in ``settings`` go to ``run_batch``, the rest make the agent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from aiforge.batch.options import DEFAULT_CONCURRENCY, ROW_OPTIONS, BatchOptions, batch_options, with_options
from aiforge.chat.operation_agent import operation_agent
from aiforge.core.columns import OUTPUT_COLUMN
from aiforge.core.files import is_file_value
from aiforge.core.labels import checked_labels
from aiforge.core.output import OutputSpec
from aiforge.core.templates import VALUE_FIELD
from aiforge.dataframes.results import LABEL_COLUMN, attach, batch_columns

if TYPE_CHECKING:
    from aiforge.batch.results import BatchResult
    from aiforge.chat.agent import ChatAgent


class RowOperations:
    """The operations that ask the model about each row independently; ``_data`` is what the prompts are built
    from (a DataFrame's rows, or a Series' values)."""

    _data: pd.DataFrame | pd.Series

    @with_options(ROW_OPTIONS)
    def map(
        self,
        prompt: str,
        output: Any = None,
        *,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.DataFrame:
        """A DataFrame on the input's index: one text column ``response``, or the fields of ``output``."""
        batch = self._run(prompt, output, agent, concurrency, settings)
        return attach(batch_columns(batch), batch)

    @with_options(ROW_OPTIONS)
    def classify(
        self,
        prompt: str,
        labels: Sequence[str],
        *,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.Series:
        """A categorical Series ``label`` of ``labels``: the answer constrained to them, or scored (``LABELS_BY``)."""
        labels = checked_labels(labels, "classify")
        batch = self._run(prompt, Literal[labels], agent, concurrency, settings)
        return attach(batch_columns(batch)[OUTPUT_COLUMN].rename(LABEL_COLUMN), batch)

    @with_options(ROW_OPTIONS)
    def filter(
        self,
        prompt: str,
        *,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.DataFrame | pd.Series:
        """The rows for which the model answers true (a boolean output); failed rows are left out."""
        batch = self._run(prompt, bool, agent, concurrency, settings)
        keep = batch_columns(batch)[OUTPUT_COLUMN].fillna(False).to_numpy(dtype=bool)
        return attach(self._data[keep], batch)

    @with_options(ROW_OPTIONS)
    def judge(
        self,
        criteria: str | Mapping[int, str],
        column: str | None = None,
        template: str | None = None,
        output: Any = None,
        scale: tuple[int, int] | None = None,
        *,
        agent: ChatAgent | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        **settings: Any,
    ) -> pd.DataFrame:
        """Each row's text scored against a rubric: columns ``score`` (an int on ``scale``, 1-5 by default) and
        ``reason``, or the fields of ``output``; on the input's index (``aiforge.evaluation.judge``).

        The text is ``column`` (a Series: its values) or a row ``template`` (``"Q: {question}\nA: {answer}"``);
        ``criteria`` is the rubric as text or levels ``{1: "wrong", 5: "right"}``. Check it against people with
        ``aiforge.evaluation.agreement(judged["score"], df["human_score"])``.
        """
        from aiforge.evaluation.judge import JUDGEMENT_COLUMNS, judge_request

        if isinstance(self._data, pd.Series) and column is None and template is None:
            column = VALUE_FIELD
        prompt, spec = judge_request(criteria, column=column, template=template, output=output, scale=scale)
        batch = self._run(prompt, spec, agent, concurrency, settings)
        judged = batch_columns(batch)
        return attach(judged[JUDGEMENT_COLUMNS] if output is None else judged, batch)

    def _extract(
        self,
        items: pd.Series,
        output: Any,
        agent: ChatAgent | None,
        concurrency: int,
        settings: dict[str, Any],
    ) -> pd.DataFrame:
        """``extract`` over the texts ``items`` (a DataFrame's column, or a Series' values), or its files."""
        prompt = extraction_prompt(output, document=holds_files(items, settings.get("files") or ()))
        batch = _batch(items, prompt, output, agent, concurrency, settings)
        return attach(batch_columns(batch), batch)

    def _run(
        self, prompt: str, output: Any, agent: ChatAgent | None, concurrency: int, settings: dict[str, Any]
    ) -> BatchResult:
        return _batch(self._data, prompt, output, agent, concurrency, settings)


def extraction_prompt(output: Any, *, document: bool = False) -> str:
    """The row template ``extract`` asks with: what to extract, then the text (``document``: the file) as
    ``{value}``."""
    spec = OutputSpec.of(output)
    source = "document" if document else "text"
    if spec.is_object:
        fields = list(spec.schema["properties"])
        wanted = fields[0] if len(fields) == 1 else f"{', '.join(fields[:-1])} and {fields[-1]}"
        what = f"Extract the {wanted} from the {source} below. Use null for a field the {source} does not give."
    else:
        what = f"Extract the {spec.name} from the {source} below."
    return f"{what}\n\n{source.capitalize()}:\n{{{VALUE_FIELD}}}"


def holds_files(items: pd.Series, files: Sequence[str]) -> bool:
    """Whether the column ``items`` is a file column: named in ``files=``, or holding files by their type."""
    return items.name in files or any(map(is_file_value, items.tolist()))


def _batch(
    items: Any,
    prompt: str,
    output: Any,
    agent: ChatAgent | None,
    concurrency: int,
    settings: dict[str, Any],
) -> BatchResult:
    # run_batch's own options (OPERATION_OPTIONS: checkpoint=, restart=, max_cost=, cache=, ...) pass through; the
    # rest are settings.
    options = batch_options(settings)
    agent = operation_agent(agent, settings, options.get("cascade"))
    # A DataFrame operation covers the whole frame: run_batch's max_batch guards lists built by hand. Straight into
    # the pipeline (what agent.run_batch does), so output= goes down from here and never back through the agent.
    from aiforge.batch.orchestrator import run_items_sync  # loads the pipeline on first use

    batch = BatchOptions.of(concurrency=concurrency, max_batch=max(len(items), 1), output=output, prompt=prompt,
                            **options)
    result: BatchResult = run_items_sync(agent, items, batch)
    return result

