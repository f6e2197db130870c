"""How a join sends its questions: both sides' texts embedded once (``embedded``), and each list of questions as one
``run_batch`` with the join's batch options (``Asker``), what they asked and spent noted on the ``JoinReport``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiforge.batch.results import BatchResult
from aiforge.core.errors import BudgetExceededError, MissingValueError
from aiforge.semantic.join.report import JoinReport
from aiforge.semantic.join.rows import DistinctRows
from aiforge.semantic.join.template import PairTemplate, side_text

if TYPE_CHECKING:
    from aiforge.chat.agent import ChatAgent


@dataclass(frozen=True, slots=True)
class Asker:
    """Sends a list of questions as one ``run_batch`` with the join's options, and notes it on the report."""

    agent: ChatAgent
    concurrency: int
    options: dict[str, Any]
    report: JoinReport

    def ask(self, questions: list[str], output: Any, *, sample: bool = False) -> BatchResult:
        """One batch: the join's questions (``report.batch``), or the sample that chooses the candidate depth
        (``report.sample_batch``, its checkpoint in a file of its own: a checkpoint holds one batch)."""
        options, report = dict(self.options), self.report
        if options.get("max_cost") is not None:  # the embeddings and the sample spent part of the budget
            spent = report.embedding_cost + (0.0 if report.sample_batch is None else report.sample_batch.total_cost)
            options["max_cost"] = max(options["max_cost"] - spent, 0.0)
        if sample and options.get("checkpoint") is not None:
            path = Path(options["checkpoint"])
            options["checkpoint"] = path.with_name(f"{path.stem}.sample{path.suffix}")
        batch: BatchResult = self.agent.run_batch(questions, self.concurrency, len(questions), output=output, **options)
        if sample:
            report.sample_batch, report.sample_questions = batch, len(questions)
        else:
            report.batch = batch
        report.questions += len(questions)
        report.chat_requests += requests_made(batch)
        return batch


def requests_made(batch: BatchResult) -> int:
    """Model requests of a batch: each answer's model steps, and one at least per question that failed once sent."""
    answered = sum(sum(r.get("step") == "model" for r in result.trace) for result in batch.results)
    sent_and_failed = sum(not isinstance(f.error, MissingValueError | BudgetExceededError) for f in batch.failed)
    return answered + sent_and_failed


def embedded(asker: Asker, template: PairTemplate, lefts: DistinctRows, rights: DistinctRows) -> tuple[Any, Any]:
    """Both sides' vectors from one embeddings run (the texts of the columns the prompt names), its cost reported."""
    from aiforge.batch.embedded import warn_if_chat_model_vectors
    from aiforge.semantic.embeddings import embedding_provider_of, run_embeddings

    warn_if_chat_model_vectors(embedding_provider_of(asker.agent)[0], "join")
    texts = [side_text(row, template.fields("left")) for row in lefts.values]
    texts += [side_text(row, template.fields("right")) for row in rights.values]
    run = run_embeddings(asker.agent, texts, cache=asker.options.get("cache"))
    report = asker.report
    report.embedding_requests, report.embedded_texts = run.requests, run.embedded
    report.embedding_tokens, report.embedding_cost = run.usage.input_tokens, run.cost
    return run.vectors[: len(lefts.values)], run.vectors[len(lefts.values) :]
