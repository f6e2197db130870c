"""Row packing (issue 24, ``run_batch(pack=k)``): k rows in one request, answered as a list keyed by id.

Batch prompting ("BatchPrompt", EMNLP 2023 Industry) pays the shared part of a prompt once per k rows: the
system prompt, the row template's fixed text and the output schema. A packed request lists its rows under short
ids (``r1``..``rk``, never the rows' index labels) and asks, through structured output, for
``{"answers": [{"id", "answer"}, ...]}`` where ``answer`` is the row's ``output=`` type (a string without one).

Answers are matched by id, never by position. A row whose id is missing (or given twice), or whose answer does
not validate as ``output=``, is asked again alone, as ``pack=1`` would ask it; so is every row of a pack whose
request failed. Only the pack's outer shape is validated with the turn's own retries.

Accounting: a packed request's cost and tokens are split evenly across its rows (token remainders to the first
rows), so batch totals stay exact; a row asked again alone carries its share of the pack plus its own request.
Rows answered from a pack have ``packed=True``. Packed requests neither read nor write the response cache (a
pack's reply is not one row's): use ``checkpoint=`` to keep a packed batch's answers; rows asked alone use the
cache as usual. ``pack`` is not part of the batch's identity: a checkpoint resumes with any ``pack``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from types import GenericAlias
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, TypeAdapter, create_model

from aiforge.batch.packing_report import PackingStats
from aiforge.core.errors import OutputValidationError
from aiforge.core.output import WRAPPER_KEY, OutputSpec
from aiforge.core.types import UsageError

if TYPE_CHECKING:
    from aiforge.batch.owner import BatchOwner
    from aiforge.core.templates import BatchPrompts, RowTemplate
    from aiforge.store import ResponseCache

PACKED_NAME = "packed_answers"
"""The schema name of a packed request's structured output."""


def check_packable(owner: BatchOwner, pack: int) -> None:
    """Returns if ``owner``'s batch can send ``pack`` rows per request; a ``UsageError`` before any request if not."""
    if pack > 1 and owner.request_context.tools:
        raise UsageError(
            f"pack={pack} cannot be used with tools: a packed request answers several rows at once and a tool "
            "call belongs to one row. Use pack=1 (the default) with this agent, or an agent without tools."
        )


def pack_texts(prompts: BatchPrompts) -> list[str]:
    """Each row's own text in a pack: its template's field values (one field: the value; several: ``name: value``
    lines), or without a template its whole prompt. Rows with a missing value read oddly here but are never sent."""
    template, values = prompts.template, prompts.values
    if template is None or values is None:
        return prompts.texts
    if len(template.fields) == 1:
        return [str(row[template.fields[0]]) for row in values]
    return ["\n".join(f"{name}: {row[name]}" for name in template.fields) for row in values]


def packed_prompt(template: RowTemplate | None, rows: list[tuple[str, str]]) -> str:
    """The user message of a packed request: the shared instruction once, then each row's text under its id.

    ``rows`` are ``(id, text)`` (``pack_texts``). With a row template, the instruction is the template with its
    fields as ``{name}``, which stand for each row's values; without one, each row is a request of its own. The
    reply's shape is the request's output schema (``packed_spec``); this text says what goes in it. Kept short:
    its fixed words are paid once per pack, the per-row wrapper (``[r1]`` and a blank line) once per row.
    """
    count = len(rows)
    if template is None:
        head = f"Answer each of these {count} requests on its own."
    else:
        fields = ", ".join(f"{{{name}}}" for name in template.fields)
        means = "is the item's text" if len(template.fields) == 1 else "are the item's values"
        head = f"Do this task for each of the {count} items below, separately ({fields} {means}):\n\n{template.shown()}"
    items = "\n\n".join(f"[{row_id}]\n{text}" for row_id, text in rows)
    return f"{head}\n\nItems:\n\n{items}\n\nAnswer every item, by its id."


def row_ids(count: int) -> list[str]:
    """The ids of a pack's rows: ``r1``..``r<count>``, short and never the rows' index labels."""
    return [f"r{n}" for n in range(1, count + 1)]


@functools.lru_cache(maxsize=64)
def packed_spec(spec: OutputSpec | None, count: int) -> OutputSpec:
    """The structured output of a pack of ``count`` rows: ``answers``, ``count`` entries ``{id, answer}``.

    ``id`` is one of the pack's ids and ``answer`` has ``spec``'s type (a string without one), so a provider that
    constrains decoding to the schema (strict mode, a grammar) cannot invent ids or stop early. The schema sent
    is that one; validation only reads the list, so that one row's invalid answer does not fail (and resend)
    the whole pack: each answer is validated on its own by ``row_answer``.
    """
    ids: Any = Literal[tuple(row_ids(count))]
    entry = create_model("PackedAnswer", id=(ids, ...), answer=(str if spec is None else spec.output_type, ...))
    entries: Any = Annotated[GenericAlias(list, (entry,)), Field(min_length=count, max_length=count)]
    shape = create_model("PackedAnswers", answers=(entries, ...))
    lenient = create_model("PackedAnswersRead", answers=(list[Any], ...))
    schema = TypeAdapter(shape).json_schema()
    return OutputSpec(shape, PACKED_NAME, schema, True, TypeAdapter(lenient))


def answers_by_id(output: Any) -> dict[str, Any]:
    """Each id's answer in a packed reply; an id given twice is left out (which of its answers is meant?)."""
    answers: dict[str, Any] = {}
    twice: set[str] = set()
    for entry in getattr(output, "answers", []):
        if isinstance(entry, dict) and isinstance(entry.get("id"), str) and "answer" in entry:
            row_id = entry["id"].strip()
            if row_id in answers:
                twice.add(row_id)
            answers[row_id] = entry["answer"]
    return {row_id: answer for row_id, answer in answers.items() if row_id not in twice}


_NO_ANSWER = object()


def row_answer(answer: Any, spec: OutputSpec | None) -> tuple[str, Any] | None:
    """``(message, output)`` of one row's answer, or None when it is missing or does not validate."""
    if answer is _NO_ANSWER:
        return None
    if spec is None:
        return (answer, None) if isinstance(answer, str) else None
    wrapped = spec.is_object or (isinstance(answer, dict) and set(answer) == {WRAPPER_KEY})
    message = json.dumps(answer if wrapped else {WRAPPER_KEY: answer}, ensure_ascii=False)
    try:
        return message, spec.validate(message)
    except OutputValidationError:
        return None


@dataclass(frozen=True, slots=True)
class Share:
    """One row's part of a packed request's cost and tokens."""

    cost: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0


def shares_of(reply: Any, count: int) -> list[Share]:
    """``reply``'s cost and tokens split evenly over ``count`` rows (token remainders to the first rows)."""
    inputs, outputs = _split(reply.input_tokens, count), _split(reply.output_tokens, count)
    return [Share(reply.cost / count, inputs[n], outputs[n]) for n in range(count)]


def _split(total: int, count: int) -> list[int]:
    each, left = divmod(total, count)
    return [each + (1 if n < left else 0) for n in range(count)]


def with_share(result: Any, share: Share) -> Any:
    """``result`` (a frozen pydantic result) with ``share`` added to its cost and tokens."""
    return result.model_copy(update={
        "cost": result.cost + share.cost,
        "input_tokens": result.input_tokens + share.input_tokens,
        "output_tokens": result.output_tokens + share.output_tokens,
    })


@dataclass(slots=True)
class Packer:
    """Runs a batch's rows k at a time through its owner; ``run`` is ``BatchRun.run_pack``."""

    owner: BatchOwner
    spec: OutputSpec | None
    template: RowTemplate | None
    texts: list[str]
    """Each row's own text in a pack (``pack_texts``)."""
    inputs: list[str]
    """Each row's whole prompt, as it is asked alone."""
    cache: ResponseCache | None
    stats: PackingStats
    count_alone: Callable[[str], int]
    """Estimated input tokens of a row's prompt sent alone (``ItemPricer.input_tokens``)."""

    async def run(self, indices: list[int]) -> AsyncGenerator[tuple[int, Any], None]:
        """``(index, result or exception)`` of each row: the pack's answers first, then each row asked alone."""
        ids = row_ids(len(indices))
        rows = [(row_id, self.texts[index]) for row_id, index in zip(ids, indices, strict=True)]
        prompt = packed_prompt(self.template, rows)
        self.stats.requests += 1
        self.stats.rows += len(indices)
        try:
            reply = await self.owner.arun_batch_item(prompt, output=packed_spec(self.spec, len(indices)), cache=None)
        except Exception:  # noqa: BLE001 - every row is asked again alone, and fails there on its own if it must
            reply = None
        alone: list[tuple[int, Share]] = []
        if reply is None:
            alone = [(index, Share()) for index in indices]
        else:
            self.stats.input_tokens += reply.input_tokens
            self.stats.output_tokens += reply.output_tokens
            self.stats.cost += reply.cost
            answers = answers_by_id(reply.output)
            for row_id, index, share in zip(ids, indices, shares_of(reply, len(indices)), strict=True):
                answer = row_answer(answers.get(row_id, _NO_ANSWER), self.spec)
                if answer is None:
                    alone.append((index, share))
                    continue
                self.stats.answered += 1
                self.stats.answered_alone_input_tokens += self.count_alone(self.inputs[index])
                packed = reply.strategy.model_copy(update={"packed": True})
                yield index, reply.model_copy(update={
                    "cost": share.cost, "input_tokens": share.input_tokens, "output_tokens": share.output_tokens,
                    "message": answer[0], "output": answer[1], "strategy": packed,
                })
        for index, share in alone:
            self.stats.retried += 1
            try:
                result = await self.owner.arun_batch_item(self.inputs[index], output=self.spec, cache=self.cache)
            except Exception as exc:  # noqa: BLE001 - recorded as this row's failure
                yield index, exc
            else:
                yield index, with_share(result, share)

