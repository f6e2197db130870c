"""Signature help: every operation lists the batch options (declared once) with type and default; agent= by name."""

import dataclasses
import inspect

import pandas as pd
import pytest

import aiforge  # noqa: F401  (registers the accessors)
from aiforge.batch.options import DEFAULT_CONCURRENCY, OPERATION_OPTIONS, BatchOptions
from aiforge.core.types import UsageError

FRAME = pd.DataFrame({"review": ["good"]})
DEFAULTS = {field.name: field.default for field in dataclasses.fields(BatchOptions)}
ROW_OPERATIONS = ["map", "classify", "filter", "extract", "judge"]


@pytest.mark.parametrize("data", [FRAME, FRAME["review"]], ids=["frame", "series"])
@pytest.mark.parametrize("name", ROW_OPERATIONS)
def test_signature_help_lists_every_option_with_its_type_and_default(data: object, name: str) -> None:
    operation = getattr(data.aiforge, name)  # type: ignore[attr-defined]
    parameters = inspect.signature(operation).parameters
    for option in OPERATION_OPTIONS:
        assert parameters[option].kind is inspect.Parameter.KEYWORD_ONLY
        assert parameters[option].default == DEFAULTS[option]
        assert parameters[option].annotation != inspect.Parameter.empty
        assert f"    {option}: " in (operation.__doc__ or "")
    assert list(parameters)[-1] == "settings"  # settings stay keyword arguments after the options


@pytest.mark.parametrize(
    "name", ["map", "classify", "filter", "extract", "judge", "agg", "embed", "dedup", "cluster", "topk"]
)
def test_agent_is_keyword_only_and_concurrency_has_one_default(name: str) -> None:
    parameters = inspect.signature(getattr(FRAME.aiforge, name)).parameters
    assert parameters["agent"].kind is inspect.Parameter.KEYWORD_ONLY
    if "concurrency" in parameters:
        assert parameters["concurrency"].default == DEFAULT_CONCURRENCY


def test_agent_passed_by_position_is_refused_by_python() -> None:
    with pytest.raises(TypeError):
        FRAME.aiforge.map("{review}", None, object())  # type: ignore[misc]


def test_an_option_still_reaches_run_batch_through_the_settings() -> None:
    with pytest.raises(UsageError, match="max_cost must be a number"):
        FRAME.aiforge.map("Say {review}", provider="scripted", max_cost=-1)


def test_join_names_candidates_when_given_topks_k() -> None:
    right = pd.DataFrame({"name": ["a"]})
    with pytest.raises(UsageError, match=r"join: k= is now candidates= .*candidates=3"):
        FRAME.aiforge.join(right, "{left.review} / {right.name}?", k=3, provider="scripted")


def test_join_shows_the_candidate_depth_and_target_recall_it_chooses_by() -> None:
    from aiforge.semantic.join import semantic_join

    shown = inspect.signature(FRAME.aiforge.join).parameters
    own = inspect.signature(semantic_join).parameters
    for name in ("strategy", "candidates", "target_recall", "multiple"):
        assert shown[name].kind is inspect.Parameter.KEYWORD_ONLY and shown[name].default == own[name].default
    assert (shown["strategy"].default, shown["candidates"].default, shown["target_recall"].default) == (
        "auto",
        "auto",
        0.95,
    )


def test_join_strategy_pairs_keeps_the_yes_no_per_candidate_pair() -> None:
    from aiforge import ChatAgent
    from aiforge.providers.scripted import ScriptedProvider

    right = pd.DataFrame({"name": [f"product {n}" for n in range(40)]})
    agent = ChatAgent(provider=ScriptedProvider(default='{"value": false}'), memory="none")
    joined = FRAME.aiforge.join(right, "{left.review} / {right.name}?", strategy="pairs", candidates=3, agent=agent)
    report = joined.attrs["aiforge"]
    assert (report.strategy, report.k, report.questions, len(agent.provider.calls), len(joined)) == (
        "pairs",
        3,
        3,
        3,
        0,
    )
