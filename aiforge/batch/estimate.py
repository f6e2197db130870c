"""A batch's cost before anything is spent: tokens counted from the prompts, priced from the price table.

Input tokens: the system prompt, the tool specs and output schema as JSON, and the item's prompt, counted with
tiktoken for OpenAI models when it is installed and its encoding is available, otherwise approximated as
``core.tokens.CHARS_PER_TOKEN`` characters per token (close for English prose; code and other scripts run
higher), plus ``MESSAGE_OVERHEAD_TOKENS`` per message. Output tokens cannot be counted before the replies exist:
each item is assumed to produce ``MAX_TOKENS`` when that setting is set, else ``core.tokens.DEFAULT_OUTPUT_TOKENS``;
a label output (a Literal, Enum or bool: ``classify``, ``filter``) its longest label's JSON, capped by ``MAX_TOKENS``.

A file a prompt carries as a marker (``core.files``) is counted by its provider's published rules
(``core.file_rules.file_tokens``: an image at the size the wire sends it, a PDF's pages), not as the marker's text;
a PDF on the text path is its extracted text, counted as text.
"""

from __future__ import annotations

import functools
import html
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aiforge.batch.plans import Plan, plans_html, plans_text
from aiforge.core.file_inputs import FileRules, ImageDetail
from aiforge.core.file_markers import MARKER, has_markers
from aiforge.core.file_rules import marker_tokens
from aiforge.core.pricing import ModelPrice, lookup_price
from aiforge.core.tokens import CHARS_PER_TOKEN, DEFAULT_OUTPUT_TOKENS, estimate_tokens
from aiforge.core.types import Usage

MESSAGE_OVERHEAD_TOKENS = 4
"""Role and separators of one message (OpenAI's chat format costs 3-4 tokens per message)."""


@dataclass(frozen=True, slots=True)
class BatchEstimate:
    """What a batch would cost: ``run_batch(..., estimate=True)`` or ``agent.estimate_batch(...)``."""

    items: int
    to_run: int
    """Items that would make a request (no missing value, not already finished, not a duplicate of another)."""
    input_tokens: int
    output_tokens: int
    """``to_run`` x the assumed reply length (``output_tokens_each``)."""
    output_tokens_each: int
    cost: float | None
    """USD, or None when the model has no price (a free provider's cost is 0)."""
    model: str
    counting: str
    """How input tokens were counted: ``tiktoken (<encoding>)`` or ``~4 characters per token``."""
    finished: int = 0
    """Items a checkpoint or an interrupted run already holds."""
    plans: tuple[Plan, ...] = ()
    """Every way to run this batch, compared (``batch.plan_table``): as is, deduped, flex, Batch API, packed,
    cascade; the fields above are what ``run_batch`` with these exact options would do."""
    files: str = ""
    """The path each file column takes (``"invoice: PDFs sent as files"``: the provider's own block, counted by its
    rules; ``"as their text, extracted here"``: the PDF's text extracted locally); empty without files."""

    @property
    def cheapest(self) -> Plan | None:
        """The available plan of the fewest dollars (None when no plan is priced)."""
        return next((plan for plan in self.plans if plan.cheapest), None)

    def to_dataframe(self) -> Any:
        """The plans as a pandas DataFrame, one row per plan (``Plan.row``)."""
        import pandas as pd

        return pd.DataFrame([plan.row() for plan in self.plans]).set_index("plan")

    def _summary(self) -> str:
        cost = "unknown (model not in the price table)" if self.cost is None else f"${self.cost:.4f}"
        return (
            f"{self.to_run}/{self.items} items to run"
            + (f" ({self.finished} already done)" if self.finished else "")
            + f" · ~{self.input_tokens} input + ~{self.output_tokens} output tokens · ~{cost} on {self.model}"
            + (f" · files: {self.files}" if self.files else "")
        )

    def __repr__(self) -> str:
        table = f"\n{plans_text(self.plans)}" if self.plans else ""
        return (
            f"BatchEstimate({self._summary()}; input counted by {self.counting}, "
            f"{self.output_tokens_each} output tokens per item assumed){table}"
        )

    def _repr_html_(self) -> str:
        return (
            f"<div><b>Batch estimate</b> · {html.escape(self._summary())}<br><small>input tokens counted by "
            f"{html.escape(self.counting)}; {self.output_tokens_each} output tokens per item assumed "
            f"(MAX_TOKENS, or {DEFAULT_OUTPUT_TOKENS}); times are a rough model (aiforge.batch.plans)</small>"
            f"{plans_html(self.plans) if self.plans else ''}</div>"
        )


@dataclass(frozen=True, slots=True)
class ItemPricer:
    """Counts and prices one item's request; built once per batch."""

    model: str
    fixed_tokens: int
    """System prompt, tools, output schema and message overheads: the same for every item."""
    output_tokens: int
    count: Callable[[str], int]
    counting: str
    price: ModelPrice | None
    free: bool
    file_rules: FileRules | None = None
    """Whose rules count a marker's file (``Provider.file_rules``); None: OpenAI's."""
    detail: ImageDetail = "auto"
    """``IMAGE_DETAIL``, the detail an image is counted at."""

    def input_tokens(self, text: str) -> int:
        if not has_markers(text):
            return self.fixed_tokens + self.count(text)
        rules = self.file_rules or "openai"
        files = sum(marker_tokens(d, rules, self.model, self.detail) for d in MARKER.findall(text))
        return self.fixed_tokens + self.count(MARKER.sub("", text)) + files

    def cost(self, text: str) -> float | None:
        """The estimated USD of ``text``'s request, 0 for a free provider, None when unpriced."""
        if self.free:
            return 0.0
        if self.price is None:
            return None
        return self.price.cost_of(Usage(self.input_tokens(text), self.output_tokens))


def item_pricer(
    *,
    model: str,
    system_prompt: str,
    extras: Sequence[Any],
    max_tokens: int | None,
    free: bool,
    prices: dict[str, dict[str, float]] | None,
    file_rules: FileRules | None = None,
    detail: ImageDetail = "auto",
) -> ItemPricer:
    """The pricer of a batch on ``model``: ``extras`` are the tool specs and output schema sent with each item."""
    count, counting = _counter(model)
    extra = json.dumps(list(extras), separators=(",", ":")) if extras else ""
    fixed = count(system_prompt) + count(extra) + 2 * MESSAGE_OVERHEAD_TOKENS
    price = None if free else lookup_price(model, prices or None)
    return ItemPricer(
        model, fixed, max_tokens or DEFAULT_OUTPUT_TOKENS, count, counting, price, free, file_rules, detail
    )


def estimate_of(pricer: ItemPricer, todo: list[str], *, items: int, finished: int = 0) -> BatchEstimate:
    """The ``BatchEstimate`` of a batch of ``items`` that asks ``todo`` (its leads: ``prepare.PreparedBatch``),
    ``finished`` of them done already."""
    costs = [pricer.cost(text) for text in todo]
    return BatchEstimate(
        items=items,
        to_run=len(todo),
        input_tokens=sum(pricer.input_tokens(text) for text in todo),
        output_tokens=len(todo) * pricer.output_tokens,
        output_tokens_each=pricer.output_tokens,
        cost=None if None in costs else sum(c for c in costs if c is not None),
        model=pricer.model,
        counting=pricer.counting,
        finished=finished,
    )


def _counter(model: str) -> tuple[Callable[[str], int], str]:
    encoding = _tiktoken_encoding(model)
    if encoding is None:
        return estimate_tokens, f"~{CHARS_PER_TOKEN} characters per token"
    return (lambda text: len(encoding.encode(text, disallowed_special=()))), f"tiktoken ({encoding.name})"


@functools.cache
def _tiktoken_encoding(model: str) -> Any:
    """tiktoken's encoding of an OpenAI ``model``; None when tiktoken, the model or the encoding file is missing."""
    try:
        import tiktoken

        return tiktoken.get_encoding(tiktoken.encoding_name_for_model(model))
    except Exception:  # noqa: BLE001 - not installed, not an OpenAI model, or no network to fetch the file
        return None
