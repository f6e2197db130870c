"""Specification of ``aiforge.core.costs``: cost records and the session tracker."""

from __future__ import annotations

import dataclasses
import threading
import uuid
import warnings

import pytest

from aiforge.core.costs import COLUMNS, CostRecord, CostTracker
from aiforge.core.types import Usage


def _unique_model() -> str:
    # The unpriced warning is once per model per process: each test needs a fresh name.
    return f"unpriced-{uuid.uuid4().hex[:8]}"


def test_record_prices_the_call_and_returns_the_record() -> None:
    tracker = CostTracker()

    entry = tracker.record(
        Usage(input_tokens=10_000, output_tokens=2_000, cached_input_tokens=4_000),
        "gpt-4o",
        provider="openai",
        trace_id="t1",
        conversation_id="c1",
    )

    assert entry.cost == pytest.approx(0.04)
    assert entry.priced is True
    assert (entry.provider, entry.model, entry.kind, entry.trace_id, entry.conversation_id) == (
        "openai",
        "gpt-4o",
        "chat",
        "t1",
        "c1",
    )
    assert (entry.input_tokens, entry.output_tokens, entry.cached_input_tokens, entry.cache_write_tokens) == (
        10_000,
        2_000,
        4_000,
        0,
    )
    assert entry.timestamp > 0


def test_record_is_frozen() -> None:
    entry = CostTracker().record(Usage(), "gpt-4o", provider="openai")

    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.cost = 1.0  # type: ignore[misc]


def test_record_uses_price_overrides() -> None:
    tracker = CostTracker()

    entry = tracker.record(
        Usage(input_tokens=1_000_000),
        "house-model",
        provider="internal_gateway",
        price_overrides={"house-model": {"input": 2.0, "output": 8.0}},
    )

    assert (entry.cost, entry.priced) == (2.0, True)


def test_session_total_and_total_tokens_sum_every_call() -> None:
    tracker = CostTracker()
    tracker.record(Usage(input_tokens=1_000_000, output_tokens=0), "gpt-4o-mini", provider="openai")
    tracker.record(Usage(input_tokens=0, output_tokens=1_000_000), "claude-haiku-4-5", provider="anthropic")

    assert tracker.session_total == pytest.approx(0.15 + 5.00)
    assert tracker.total_tokens == 2_000_000
    assert tracker.calls == 2


def test_by_model_groups_cost_tokens_and_calls() -> None:
    tracker = CostTracker()
    for _ in range(2):
        tracker.record(Usage(input_tokens=1_000_000, output_tokens=10), "gpt-4o-mini", provider="openai")
    tracker.record(Usage(input_tokens=5, output_tokens=1_000_000), "gpt-4o", provider="openai")

    by_model = tracker.by_model

    assert by_model["gpt-4o-mini"] == {
        "cost": pytest.approx(2 * (0.15 + 10 * 0.60 / 1e6)),
        "input_tokens": 2_000_000,
        "output_tokens": 20,
        "calls": 2,
    }
    assert by_model["gpt-4o"]["calls"] == 1
    assert by_model["gpt-4o"]["cost"] == pytest.approx(10.00 + 5 * 2.50 / 1e6)


def test_views_are_copies() -> None:
    tracker = CostTracker()
    tracker.record(Usage(input_tokens=1), "gpt-4o", provider="openai")

    tracker.records.clear()
    tracker.by_model["gpt-4o"]["calls"] = 99

    assert tracker.calls == 1
    assert tracker.by_model["gpt-4o"]["calls"] == 1


def test_unpriced_model_costs_nothing_and_is_listed() -> None:
    tracker = CostTracker()
    model = _unique_model()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        entry = tracker.record(Usage(input_tokens=100, output_tokens=100), model, provider="openai")

    assert (entry.cost, entry.priced) == (0.0, False)
    assert tracker.unpriced_models == {model}
    assert tracker.session_total == 0.0
    assert tracker.total_tokens == 200


def test_unpriced_model_warns_once_per_process_naming_model_and_setting() -> None:
    model = _unique_model()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        CostTracker().record(Usage(input_tokens=1), model, provider="openai")
        CostTracker().record(Usage(input_tokens=1), model, provider="openai")

    assert len(caught) == 1
    assert caught[0].category is UserWarning
    assert model in str(caught[0].message)
    assert "PRICES" in str(caught[0].message)


def test_free_provider_records_zero_cost_as_priced_without_warning() -> None:
    tracker = CostTracker()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        entry = tracker.record(Usage(input_tokens=50), _unique_model(), provider="local", free=True)

    assert (entry.cost, entry.priced) == (0.0, True)
    assert tracker.unpriced_models == set()


def test_reset_forgets_everything() -> None:
    tracker = CostTracker()
    tracker.record(Usage(input_tokens=1_000), "gpt-4o", provider="openai")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tracker.record(Usage(input_tokens=1_000), _unique_model(), provider="openai")

    tracker.reset()

    assert (tracker.session_total, tracker.total_tokens, tracker.calls) == (0.0, 0, 0)
    assert tracker.by_model == {}
    assert tracker.records == []
    assert tracker.unpriced_models == set()


def test_merge_adds_another_trackers_records() -> None:
    parent, child = CostTracker(), CostTracker()
    parent.record(Usage(input_tokens=1_000_000), "gpt-4o-mini", provider="openai")
    child.record(Usage(output_tokens=1_000_000), "gpt-4o-mini", provider="openai", kind="summary")

    parent.merge(child)

    assert parent.session_total == pytest.approx(0.15 + 0.60)
    assert parent.by_model["gpt-4o-mini"]["calls"] == 2
    assert [r.kind for r in parent.records] == ["chat", "summary"]
    assert child.calls == 1


def test_merge_carries_unpriced_models() -> None:
    parent, child = CostTracker(), CostTracker()
    model = _unique_model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        child.record(Usage(input_tokens=1), model, provider="openai")

    parent.merge(child)

    assert parent.unpriced_models == {model}


def test_merge_into_itself_is_refused() -> None:
    tracker = CostTracker()

    with pytest.raises(ValueError):
        tracker.merge(tracker)


def test_extend_adds_records() -> None:
    source = CostTracker()
    source.record(Usage(input_tokens=10, output_tokens=5), "gpt-4o", provider="openai")
    tracker = CostTracker()

    tracker.extend(source.records)

    assert tracker.records == source.records
    assert tracker.total_tokens == 15


def test_to_dataframe_has_one_row_per_record_in_field_order() -> None:
    tracker = CostTracker()
    tracker.record(Usage(input_tokens=100, output_tokens=10), "gpt-4o", provider="openai", trace_id="a")
    tracker.record(Usage(input_tokens=200, output_tokens=20), "claude-haiku-4-5", provider="anthropic", trace_id="b")

    frame = tracker.to_dataframe()

    assert list(frame.columns) == [f.name for f in dataclasses.fields(CostRecord)]
    assert list(frame.columns) == list(COLUMNS)
    assert len(frame) == 2
    assert frame["model"].tolist() == ["gpt-4o", "claude-haiku-4-5"]
    assert frame["input_tokens"].tolist() == [100, 200]
    assert frame["trace_id"].tolist() == ["a", "b"]
    assert frame["cost"].sum() == pytest.approx(tracker.session_total)


def test_to_dataframe_is_empty_with_the_same_columns_when_nothing_was_recorded() -> None:
    frame = CostTracker().to_dataframe()

    assert frame.empty
    assert list(frame.columns) == list(COLUMNS)


def test_repr_shows_total_and_calls() -> None:
    tracker = CostTracker()
    tracker.record(Usage(input_tokens=1_000_000), "gpt-4o", provider="openai")

    assert repr(tracker) == "<CostTracker total=$2.500000 calls=1>"


def test_concurrent_records_add_up_exactly() -> None:
    tracker = CostTracker()
    threads, per_thread = 8, 1000
    usage = Usage(input_tokens=1_000, output_tokens=100, cached_input_tokens=200)
    expected_cost = tracker.record(usage, "gpt-4o-mini", provider="openai").cost
    tracker.reset()
    start = threading.Barrier(threads)

    def worker() -> None:
        start.wait()
        for _ in range(per_thread):
            tracker.record(usage, "gpt-4o-mini", provider="openai")

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()

    calls = threads * per_thread
    assert tracker.calls == calls
    assert len(tracker.records) == calls
    assert tracker.total_tokens == calls * 1_100
    assert tracker.by_model["gpt-4o-mini"]["calls"] == calls
    assert tracker.by_model["gpt-4o-mini"]["input_tokens"] == calls * 1_000
    assert tracker.session_total == pytest.approx(calls * expected_cost, rel=1e-12)


def test_to_dataframe_timestamps_are_utc_datetimes() -> None:
    tracker = CostTracker()
    entry = tracker.record(Usage(input_tokens=1, output_tokens=1), "gpt-4o", provider="openai")

    stamp = tracker.to_dataframe()["timestamp"].iloc[0]

    assert str(tracker.to_dataframe()["timestamp"].dtype).startswith("datetime64") and str(stamp.tz) == "UTC"
    assert stamp.timestamp() == pytest.approx(entry.timestamp, abs=1e-3)


def test_totals_group_calls_by_provider_and_model_most_expensive_first() -> None:
    tracker = CostTracker()
    tracker.record(Usage(input_tokens=100, output_tokens=10), "gpt-4o-mini", provider="openai")
    tracker.record(Usage(input_tokens=100, output_tokens=10), "gpt-4o", provider="openai")
    tracker.record(Usage(input_tokens=50, output_tokens=5), "gpt-4o", provider="openai")

    totals = tracker.totals()

    rows = [(r["model"], r["calls"], r["input_tokens"]) for r in totals]
    assert rows == [("gpt-4o", 2, 150), ("gpt-4o-mini", 1, 100)]
    assert sum(r["cost"] for r in totals) == pytest.approx(tracker.session_total)


def test_html_view_shows_totals_per_model_and_provider_and_the_session_total() -> None:
    tracker = CostTracker()
    tracker.record(Usage(input_tokens=1000, output_tokens=100), "gpt-4o", provider="openai")
    tracker.record(Usage(input_tokens=10, output_tokens=1), "claude-haiku-4-5", provider="anthropic")

    view = tracker._repr_html_()

    assert "<td>openai</td><td>gpt-4o</td><td>1</td><td>1,000</td><td>100</td>" in view
    assert "<td>anthropic</td><td>claude-haiku-4-5</td>" in view
    assert f"<th>${tracker.session_total:.6f}</th>" in view and "<th>1,010</th>" in view
