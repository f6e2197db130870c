"""Signature help: every operation lists the batch options it takes (declared once, ``batch.options``) with their
type and default; an option it cannot honour, or a misspelt one, is refused in one line; agent= by name."""

import dataclasses
import inspect

import pandas as pd
import pytest

import aiforge  # noqa: F401  (registers the accessors)
from aiforge.batch.options import (
    BATCH_ARGUMENTS,
    DEFAULT_CONCURRENCY,
    ROUND_OPTIONS,
    ROW_OPTIONS,
    VECTOR_OPTIONS,
    BatchOptions,
)
from aiforge.core.errors import ConfigError, UsageError

FRAME = pd.DataFrame({"review": ["good"]})
DEFAULTS = {field.name: field.default for field in dataclasses.fields(BatchOptions)}
TYPES = {field.name: field.type for field in dataclasses.fields(BatchOptions)}
TAKES = {
    "map": ROW_OPTIONS,
    "classify": ROW_OPTIONS,
    "filter": ROW_OPTIONS,
    "extract": ROW_OPTIONS,
    "judge": ROW_OPTIONS,
    "dedup": ROW_OPTIONS,
    "join": ROW_OPTIONS,
    "agg": ROUND_OPTIONS,
    "topk": ROUND_OPTIONS,
    "embed": VECTOR_OPTIONS,
    "cluster": VECTOR_OPTIONS,
}
"""The batch options each operation takes."""
CALLS = {
    "map": lambda data, **kw: data.aiforge.map("Say {review}", **kw),
    "classify": lambda data, **kw: data.aiforge.classify("{review}", ["a", "b"], **kw),
    "filter": lambda data, **kw: data.aiforge.filter("{review}?", **kw),
    "extract": lambda data, **kw: data.aiforge.extract("review", output=int, **kw),
    "judge": lambda data, **kw: data.aiforge.judge("Correct?", column="review", **kw),
    "dedup": lambda data, **kw: data.aiforge.dedup("review", **kw),
    "join": lambda data, **kw: data.aiforge.join(data, "{left.review} / {right.review}?", **kw),
    "agg": lambda data, **kw: data.aiforge.agg("What do the {review}s say?", **kw),
    "topk": lambda data, **kw: data.aiforge.topk("the best {review}", 1, **kw),
    "embed": lambda data, **kw: data.aiforge.embed("review", **kw),
    "cluster": lambda data, **kw: data.aiforge.cluster("review", 1, **kw),
}


@pytest.mark.parametrize("data", [FRAME, FRAME["review"]], ids=["frame", "series"])
@pytest.mark.parametrize("name", [name for name in TAKES if name != "join"])
def test_signature_help_lists_each_option_it_takes_with_its_type_and_default(data: object, name: str) -> None:
    operation = getattr(data.aiforge, name)  # type: ignore[attr-defined]
    parameters = inspect.signature(operation).parameters
    for option in TAKES[name]:
        assert parameters[option].kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        assert parameters[option].default == DEFAULTS[option]
        assert parameters[option].annotation != inspect.Parameter.empty
        if name != "embed":  # embed's cache= is its own parameter, documented in its docstring
            assert f"    {option}: {TYPES[option]}" in (operation.__doc__ or "")
    for option in set(BATCH_ARGUMENTS) - set(TAKES[name]) - {"output", "prompt"}:
        assert option not in parameters
    assert list(parameters)[-1] == "settings"  # settings stay keyword arguments after the options


def test_join_lists_the_row_options() -> None:
    parameters = inspect.signature(FRAME.aiforge.join).parameters
    assert all(parameters[option].default == DEFAULTS[option] for option in ROW_OPTIONS)


@pytest.mark.parametrize("name", sorted(set(TAKES) - {"map"}))
def test_an_option_the_operation_cannot_honour_names_the_ones_it_takes(name: str) -> None:
    refused = next(option for option in ("pack", "estimate") if option not in TAKES[name])
    with pytest.raises(UsageError) as raised:
        CALLS[name](FRAME, provider="scripted", **{refused: 2})
    taken = ", ".join(f"{option}=" for option in TAKES[name])
    message = str(raised.value)
    assert message.startswith(f"{name} does not take {refused}=") and "\n" not in message
    assert message.endswith(f"; of the batch options it takes {taken}")


@pytest.mark.parametrize("name", list(TAKES))
def test_a_misspelt_option_or_setting_says_which_was_meant(name: str) -> None:
    option = TAKES[name][0]  # cache for every operation
    misspelt = option[:-2] + option[-1] + option[-2]  # cahce
    with pytest.raises(UsageError, match=rf"^unknown option or setting '{misspelt}'; did you mean {option}=\?$"):
        CALLS[name](FRAME, provider="scripted", **{misspelt: True})
    with pytest.raises(UsageError, match=r"^unknown option or setting 'modle'; did you mean MODEL= \(or model=\)\?$"):
        CALLS[name](FRAME, provider="scripted", modle="x")


def test_checkpoint_misspelt_is_told_apart_from_a_setting() -> None:
    with pytest.raises(UsageError, match=r"unknown option or setting 'checkpiont'; did you mean checkpoint=\?"):
        FRAME.aiforge.agg("What do the {review}s say?", provider="scripted", checkpiont="run.sqlite")
    with pytest.raises(UsageError, match=r"did you mean TEMPERATURE= \(or temperature=\)\?"):
        FRAME.aiforge.map("Say {review}", provider="scripted", temprature=0)


def test_a_misspelt_keyword_beside_an_agent_is_named_before_the_settings_rule() -> None:
    agent = aiforge.ChatAgent(provider="scripted")
    with pytest.raises(UsageError, match=r"did you mean max_cost=\?"):
        FRAME.aiforge.map("Say {review}", agent=agent, max_cots=1.0)


def test_chat_agent_keeps_its_own_unknown_setting_line() -> None:
    with pytest.raises(ConfigError, match=r"^unknown setting 'modle' \(keyword argument\)\. Did you mean MODEL\?$"):
        aiforge.ChatAgent(provider="scripted", modle="x")


@pytest.mark.parametrize(
    "name", ["map", "classify", "filter", "extract", "judge", "agg", "embed", "dedup", "cluster", "topk", "join"]
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


def test_the_options_are_one_declaration_with_subsets_of_it() -> None:
    """``BatchOptions``' fields are the options (run_batch's typed ``BatchArguments`` names the same, in order); each
    operation's subset is drawn from them, so a new field is one edit that every operation taking it lists."""
    from aiforge.batch.options import OPERATION_OPTIONS, PARTITION_OPTIONS, BatchArguments

    fields = [field.name for field in dataclasses.fields(BatchOptions)]
    assert fields == ["concurrency", "max_batch", *BatchArguments.__annotations__]
    assert ROW_OPTIONS == OPERATION_OPTIONS
    for subset in (ROUND_OPTIONS, PARTITION_OPTIONS, VECTOR_OPTIONS):
        assert set(subset) <= set(OPERATION_OPTIONS)


def test_a_name_close_to_an_option_the_operation_does_not_take_lists_those_it_does() -> None:
    with pytest.raises(UsageError, match=r"^unknown option or setting 'pakc': the options are cache=, checkpoint="):
        FRAME.aiforge.agg("What do the {review}s say?", provider="scripted", pakc=2)
