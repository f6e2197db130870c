"""Specification of ``aiforge.core.pricing``: the price table, name resolution and cost arithmetic."""

from __future__ import annotations

import pytest

from aiforge.core.pricing import PRICE_TABLE, ModelPrice, lookup_price, price_of
from aiforge.core.settings import load_settings
from aiforge.core.types import ConfigError, Usage


def test_openai_cost_charges_cached_input_at_the_cached_rate() -> None:
    usage = Usage(input_tokens=10_000, output_tokens=2_000, cached_input_tokens=4_000)

    cost, priced = price_of(usage, "gpt-4o")

    # 6,000 uncached at $2.50, 4,000 cached at $1.25, 2,000 output at $10.00 per 1M.
    assert priced is True
    assert cost == pytest.approx((6_000 * 2.50 + 4_000 * 1.25 + 2_000 * 10.00) / 1e6)
    assert cost == pytest.approx(0.04)


def test_gpt_4o_mini_cost_uses_its_own_rates() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cached_input_tokens=500_000)

    cost, _ = price_of(usage, "gpt-4o-mini")

    assert cost == pytest.approx(0.5 * 0.15 + 0.5 * 0.075 + 0.60)


def test_anthropic_cost_charges_cache_reads_and_writes_at_their_rates() -> None:
    usage = Usage(input_tokens=10_000, output_tokens=1_000, cached_input_tokens=6_000, cache_write_tokens=3_000)

    cost, priced = price_of(usage, "claude-sonnet-4-5")

    # 1,000 uncached at $3, 6,000 reads at $0.30, 3,000 writes at $3.75, 1,000 output at $15 per 1M.
    assert priced is True
    assert cost == pytest.approx((1_000 * 3.00 + 6_000 * 0.30 + 3_000 * 3.75 + 1_000 * 15.00) / 1e6)
    assert cost == pytest.approx(0.03105)


def test_anthropic_cache_rates_are_a_tenth_and_one_and_a_quarter_of_input() -> None:
    # Claude 3 Haiku predates the multipliers: $0.30 writes and $0.03 reads on $0.25 input.
    for name, price in PRICE_TABLE.items():
        if name.startswith("claude-") and name != "claude-3-haiku":
            assert price.cached_input == pytest.approx(price.input * 0.1), name
            assert price.cache_write == pytest.approx(price.input * 1.25), name


def test_zero_usage_costs_nothing_but_is_priced() -> None:
    assert price_of(Usage(), "gpt-4.1") == (0.0, True)


@pytest.mark.parametrize(
    ("snapshot", "base"),
    [
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("gpt-4.1-nano-2025-04-14", "gpt-4.1-nano"),
        ("gpt-5-mini-2025-08-07", "gpt-5-mini"),
        ("o3-mini-2025-01-31", "o3-mini"),
        ("claude-3-5-haiku-20241022", "claude-3-5-haiku"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("claude-3-7-sonnet-latest", "claude-3-7-sonnet"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("claude-3-5-haiku@20241022", "claude-3-5-haiku"),
    ],
)
def test_snapshot_names_resolve_to_their_base_entry(snapshot: str, base: str) -> None:
    assert lookup_price(snapshot) == PRICE_TABLE[base]


def test_mini_snapshot_does_not_resolve_to_the_larger_model() -> None:
    assert lookup_price("gpt-4o-mini-2024-07-18") == PRICE_TABLE["gpt-4o-mini"]
    assert lookup_price("gpt-4o-mini-2024-07-18") != PRICE_TABLE["gpt-4o"]


def test_newer_model_does_not_resolve_to_an_older_prefix() -> None:
    assert lookup_price("claude-opus-4-5-20251101") == ModelPrice(5.00, 25.00, 0.50, 6.25)
    assert lookup_price("gpt-4o-audio-preview") is None


def test_exact_snapshot_entry_wins_over_its_base() -> None:
    assert lookup_price("gpt-4o-2024-05-13") == ModelPrice(5.00, 15.00, 5.00, 5.00)


def test_provider_prefixed_names_resolve() -> None:
    assert lookup_price("openai/gpt-4o") == PRICE_TABLE["gpt-4o"]
    assert lookup_price("anthropic/claude-3-5-haiku-20241022") == PRICE_TABLE["claude-3-5-haiku"]


def test_lookup_ignores_case_and_surrounding_space() -> None:
    assert lookup_price(" GPT-4o ") == PRICE_TABLE["gpt-4o"]


def test_unknown_model_is_unpriced_at_zero() -> None:
    assert lookup_price("my-finetune") is None
    assert price_of(Usage(input_tokens=1_000, output_tokens=1_000), "my-finetune") == (0.0, False)


def test_override_adds_a_model() -> None:
    overrides = {"my-finetune": {"input": 1.0, "output": 4.0, "cached_input": 0.5, "cache_write": 2.0}}
    usage = Usage(
        input_tokens=4_000_000, output_tokens=1_000_000, cached_input_tokens=1_000_000, cache_write_tokens=1_000_000
    )

    assert price_of(usage, "my-finetune", overrides) == (pytest.approx(2.0 * 1.0 + 0.5 + 2.0 + 4.0), True)


def test_override_replaces_a_builtin_price_for_its_snapshots_too() -> None:
    overrides = {"gpt-4o": {"input": 1.0, "output": 2.0}}

    assert lookup_price("gpt-4o-2024-11-20", overrides) == ModelPrice(1.0, 2.0, 1.0, 1.0)


def test_override_without_cache_rates_charges_them_at_the_input_rate() -> None:
    price = lookup_price("my-model", {"my-model": {"input": 3, "output": 6}})

    assert price == ModelPrice(input=3.0, output=6.0, cached_input=3.0, cache_write=3.0)


def test_prices_setting_is_accepted_as_overrides() -> None:
    settings = load_settings(PRICES={"house-model": {"input": 2.0, "output": 8.0}})

    assert price_of(Usage(input_tokens=1_000_000), "house-model", settings.PRICES) == (2.0, True)


@pytest.mark.parametrize(
    ("entry", "key"),
    [
        ({"output": 1.0}, "input"),
        ({"input": 1.0}, "output"),
        ({"input": 1.0, "output": 2.0, "cached": 0.5}, "cached"),
        ({"input": -1.0, "output": 2.0}, "input"),
        ({"input": 1.0, "output": "ten"}, "output"),
        ({"input": 1.0, "output": float("nan")}, "output"),
    ],
)
def test_malformed_override_raises_config_error_naming_model_and_key(entry: dict, key: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        lookup_price("gpt-4o", {"broken-model": entry})

    message = str(excinfo.value)
    assert "broken-model" in message
    assert repr(key) in message
    assert "PRICES" in message


def test_override_that_is_not_a_mapping_raises_config_error() -> None:
    with pytest.raises(ConfigError, match="broken-model"):
        lookup_price("gpt-4o", {"broken-model": 2.5})


# --- service tiers --------------------------------------------------------------------------------------------------


USAGE = Usage(input_tokens=10_000, output_tokens=2_000, cached_input_tokens=4_000)


@pytest.mark.parametrize("tier", [None, "default", "auto", "standard"])
def test_the_default_tier_is_the_list_price(tier: str | None) -> None:
    assert price_of(USAGE, "gpt-5", service_tier=tier) == price_of(USAGE, "gpt-5")


def test_flex_is_half_the_list_price_for_the_models_that_have_it() -> None:
    cost, priced = price_of(USAGE, "gpt-5-mini-2025-08-07", service_tier="flex")
    assert priced and cost == pytest.approx(price_of(USAGE, "gpt-5-mini")[0] / 2)
    assert price_of(USAGE, "gpt-4o", service_tier="flex") == (0.0, False)  # no flex tier: unknown, not guessed


def test_flex_halves_a_price_set_with_prices_too() -> None:
    overrides = {"o3": {"input": 4.0, "output": 16.0}}
    cost, _ = price_of(Usage(input_tokens=1_000_000), "o3", overrides, service_tier="flex")
    assert cost == pytest.approx(2.0)


def test_priority_has_its_own_published_prices() -> None:
    cost, priced = price_of(USAGE, "gpt-4.1", service_tier="priority")
    # 6,000 uncached at $3.50, 4,000 cached at $0.875, 2,000 output at $14 per 1M.
    assert priced and cost == pytest.approx((6_000 * 3.50 + 4_000 * 0.875 + 2_000 * 14.00) / 1e6)
    assert price_of(USAGE, "gpt-5-nano", service_tier="priority") == (0.0, False)


def test_a_tier_without_prices_is_unpriced() -> None:
    assert price_of(USAGE, "gpt-4o", service_tier="scale") == (0.0, False)
