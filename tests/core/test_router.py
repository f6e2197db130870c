"""Specification of ``aiforge.core.router``: quality tiers to models."""

from __future__ import annotations

import warnings

import pytest

from aiforge.core.pricing import lookup_price
from aiforge.core.router import QUALITY_TIERS, ROUTER_TABLE, blended_price, select_model
from aiforge.core.settings import load_settings
from aiforge.core.types import ConfigError


@pytest.fixture(autouse=True)
def _no_ambient_config(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AIFORGE_CONFIG", raising=False)
    for name in (
        "AIFORGE_MODEL",
        "AIFORGE_MODEL_ROUTER_ENABLED",
        "AIFORGE_DEFAULT_QUALITY",
        "AIFORGE_QUALITY_MODELS",
        "AIFORGE_PRICES",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("provider", "quality", "model"),
    [
        ("openai", "high", "gpt-4.1"),
        ("openai", "medium", "gpt-4.1-mini"),
        ("openai", "low", "gpt-4.1-nano"),
        ("anthropic", "high", "claude-sonnet-4-5"),
        ("anthropic", "medium", "claude-haiku-4-5"),
        ("anthropic", "low", "claude-3-5-haiku"),
    ],
)
def test_router_picks_the_cheapest_model_of_the_tier_or_better(provider: str, quality: str, model: str) -> None:
    assert select_model(provider, quality, load_settings()) == model


def test_lower_tier_may_pick_a_cheaper_higher_tier_model() -> None:
    # gpt-4.1-mini (medium) made cheaper than every low candidate wins "low".
    settings = load_settings(PRICES={"gpt-4.1-mini": {"input": 0.01, "output": 0.01}})

    assert select_model("openai", "low", settings) == "gpt-4.1-mini"


def test_higher_tier_never_picks_a_lower_tier_model() -> None:
    settings = load_settings(PRICES={"gpt-4.1-nano": {"input": 0.0, "output": 0.0}})

    assert select_model("openai", "high", settings) == "gpt-4.1"


def test_blend_weighs_input_three_to_one_against_output() -> None:
    price = lookup_price("gpt-4.1")
    assert price is not None

    assert blended_price(price) == pytest.approx((3 * 2.00 + 8.00) / 4)


def test_every_candidate_has_a_price_and_a_valid_tier() -> None:
    for provider, candidates in ROUTER_TABLE.items():
        for model, tier in candidates:
            assert tier in QUALITY_TIERS, (provider, model)
            assert lookup_price(model) is not None, (provider, model)


def test_explicit_model_wins_over_quality(fresh_warnings: None) -> None:
    settings = load_settings(MODEL="gpt-4o", DEFAULT_QUALITY="low")

    with pytest.warns(UserWarning, match="quality='high' is ignored: MODEL='gpt-4o' is set"):
        assert select_model("openai", "high", settings) == "gpt-4o"


def test_explicit_model_wins_over_a_pin(fresh_warnings: None) -> None:
    settings = load_settings(MODEL="gpt-4o", QUALITY_MODELS={"openai": {"high": "gpt-5"}})

    with pytest.warns(UserWarning, match="quality='high' is ignored: MODEL='gpt-4o' is set"):
        assert select_model("openai", "high", settings) == "gpt-4o"


def test_disabled_router_leaves_the_model_to_the_provider(fresh_warnings: None) -> None:
    with pytest.warns(UserWarning, match="quality='high' is ignored: MODEL_ROUTER_ENABLED is False"):
        assert select_model("openai", "high", load_settings(MODEL_ROUTER_ENABLED=False)) is None


def test_no_quality_leaves_the_model_to_the_provider() -> None:
    assert select_model("openai", None, load_settings()) is None


def test_default_quality_applies_when_no_quality_is_given() -> None:
    assert select_model("openai", None, load_settings(DEFAULT_QUALITY="low")) == "gpt-4.1-nano"


def test_quality_argument_wins_over_default_quality() -> None:
    assert select_model("openai", "high", load_settings(DEFAULT_QUALITY="low")) == "gpt-4.1"


@pytest.mark.parametrize("provider", ["local", "scripted", "internal_gateway", "my-custom"])
def test_provider_without_a_table_gets_its_default(provider: str, fresh_warnings: None) -> None:
    with pytest.warns(UserWarning, match=f"quality='high' is ignored: provider '{provider}' has no quality tiers"):
        assert select_model(provider, "high", load_settings()) is None


def test_quality_models_pin_the_tier() -> None:
    settings = load_settings(QUALITY_MODELS={"openai": {"high": "gpt-5"}})

    assert select_model("openai", "high", settings) == "gpt-5"
    assert select_model("openai", "low", settings) == "gpt-4.1-nano"


def test_quality_models_pin_works_for_a_provider_without_a_table() -> None:
    settings = load_settings(QUALITY_MODELS={"internal_gateway": {"low": "house-small"}})

    assert select_model("internal_gateway", "low", settings) == "house-small"


def test_quality_models_with_an_unknown_tier_raise_config_error() -> None:
    settings = load_settings(QUALITY_MODELS={"openai": {"best": "gpt-5"}})

    with pytest.raises(ConfigError, match="QUALITY_MODELS.*'best'"):
        select_model("openai", "high", settings)


def test_quality_is_case_insensitive() -> None:
    assert select_model("openai", "High", load_settings()) == "gpt-4.1"


@pytest.mark.parametrize("quality", ["ultra", "", "best"])
def test_invalid_quality_raises_value_error_listing_the_tiers(quality: str) -> None:
    with pytest.raises(ValueError, match="high, medium, low"):
        select_model("openai", quality, load_settings())


def test_invalid_quality_raises_even_when_model_is_set() -> None:
    with pytest.raises(ValueError, match="high, medium, low"):
        select_model("openai", "ultra", load_settings(MODEL="gpt-4o"))


# --- a quality= that changes nothing says so, once ---


@pytest.fixture
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    import aiforge.core.router as router

    monkeypatch.setattr(router, "_ignored", set())


def test_quality_ignored_by_a_provider_without_tiers_warns_once(fresh_warnings: None) -> None:
    settings = load_settings()
    with pytest.warns(UserWarning, match="quality='high' is ignored: provider 'scripted' has no quality tiers"):
        assert select_model("scripted", "high", settings) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        select_model("scripted", "high", settings)


def test_quality_ignored_because_model_is_set_says_why(fresh_warnings: None) -> None:
    with pytest.warns(UserWarning, match="MODEL='gpt-4o' is set, and an explicit model wins"):
        assert select_model("openai", "low", load_settings(MODEL="gpt-4o")) == "gpt-4o"


def test_quality_that_picks_a_model_does_not_warn(fresh_warnings: None) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert select_model("openai", "low", load_settings()) is not None
