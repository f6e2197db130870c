"""``Savings``: what a batch did not spend against one request per row, by source; ``BatchResult.saved`` reads it
from the rows (dedup and response-cache hits), adds what other features report, and sums over runs correctly."""

from __future__ import annotations

import pytest

from aiforge import ChatAgent
from aiforge.batch.savings import Savings
from aiforge.core.types import UsageError
from aiforge.providers.scripted import ScriptedProvider
from fakellm import LLMServer
from tests.support.agents import openai_agent as agent

TEXTS = ["great", "awful", "great", "fine", "awful", "great", "meh", "fine", "great", "awful"]




def test_str_is_one_line_with_each_sources_requests() -> None:
    dedup = Savings.of("dedup", requests=10, input_tokens=2000, output_tokens=600, dollars=0.0035)
    saved = Savings(naive_requests=40) + dedup
    saved += Savings.of("cache", requests=2, input_tokens=400, output_tokens=100, dollars=0.0007)
    assert str(saved) == "saved 12 of 40 requests, 3,100 tokens, $0.0042 (dedup 10, cache 2)"
    assert repr(saved) == f"Savings({saved})"


def test_a_source_that_saves_only_dollars_shows_its_dollars() -> None:
    saved = Savings.of("dedup", requests=3) + Savings.of("prompt_cache", input_tokens=900, dollars=0.0012)
    assert str(saved) == "saved 3 requests, 900 tokens, $0.0012 (dedup 3, prompt_cache $0.0012)"
    unpriced = Savings.of("prompt_cache", input_tokens=900)
    assert str(unpriced) == "saved 0 requests, 900 tokens, $0.0000 (prompt_cache 900 tokens)"


def test_adding_merges_the_sources_and_sum_starts_from_zero() -> None:
    parts = [Savings.of("dedup", requests=1, dollars=0.5), Savings.of("cache", requests=2)]
    parts.append(Savings.of("dedup", requests=4))
    total = sum(parts, Savings())
    assert total == sum(parts)
    assert (total.requests, total.dollars) == (7, 0.5)
    assert {name: part.requests for name, part in total.by_source.items()} == {"dedup": 5, "cache": 2}
    assert total.by_source["dedup"] == Savings(5, dollars=0.5)


def test_adding_something_else_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        Savings() + 1  # noqa: B018


@pytest.mark.parametrize(
    ("arguments", "named"),
    [({"requests": -1}, "requests"), ({"dollars": float("nan")}, "dollars"), ({"input_tokens": 1.5}, "input_tokens")],
)
def test_a_negative_or_non_number_is_a_usage_error_naming_the_field(arguments: dict[str, object], named: str) -> None:
    with pytest.raises(UsageError, match=f"Savings.{named}"):
        Savings(**arguments)  # type: ignore[arg-type]


def test_a_source_must_be_named() -> None:
    with pytest.raises(UsageError, match="source name"):
        Savings.of("", requests=1)


def test_a_batch_saves_its_duplicates_and_its_cache_hits_by_source(srv: LLMServer) -> None:
    cached = agent(srv, CACHE="memory")
    first = cached.run_batch(TEXTS[:4])  # great, awful, great, fine: 3 requests, 1 duplicate
    assert srv.request_count == 3 and str(first.saved).startswith("saved 1 of 4 requests")
    batch = cached.run_batch(TEXTS)  # great, awful, fine: cache hits; 6 twins; meh: a request
    assert srv.request_count == 4
    saved = batch.saved
    assert {name: part.requests for name, part in saved.by_source.items()} == {"dedup": 6, "cache": 3}
    assert (saved.requests, saved.naive_requests, batch.cached, batch.deduplicated) == (9, 10, 9, 6)
    assert "(6 deduplicated, 3 cached)" in batch._repr_markdown_()
    assert saved.input_tokens == sum(r.input_tokens for r in batch.results if r.cached)
    # The naive run pays every row the price its prompt's one request was paid: what was paid plus what was saved.
    paid = {r.message: r.cost for r in first.results + batch.results if not r.cached}
    naive = sum(paid[r.message] for r in batch.results)
    assert saved.dollars > 0 and batch.total_cost + saved.dollars == pytest.approx(naive)


def test_a_batch_without_repeats_or_cache_saves_nothing() -> None:
    batch = ChatAgent(provider=ScriptedProvider()).run_batch(["a", "b"])
    assert batch.saved == Savings(naive_requests=2) and str(batch.saved) == "saved 0 of 2 requests, 0 tokens, $0.0000"
    assert "saved" not in batch._repr_html_()


def test_savings_another_feature_reports_are_added_to_the_rows(srv: LLMServer) -> None:
    batch = agent(srv).run_batch(TEXTS)
    batch.extra_saved += Savings.of("packing", requests=2, input_tokens=100)
    assert batch.saved.requests == 8 and list(batch.saved.by_source) == ["dedup", "packing"]
    assert "(dedup 6, packing 2)" in batch._repr_html_()
