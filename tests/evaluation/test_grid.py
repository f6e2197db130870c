"""df.aiforge.evaluate: a grid of prompts x agents scored against a truth column, each candidate one batch.

Scripted models in-process (one echoes the truth, one answers a constant) and the real openai SDK against fakellm
for the cache, the request counts and the Batch API plan.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import BaseModel

import aiforge  # noqa: F401 - registers the accessor
from aiforge import ChatAgent
from aiforge.batch.resume import interrupted_work
from aiforge.core.types import UsageError
from aiforge.evaluation.result import EvalResult
from aiforge.providers.scripted import ScriptedProvider
from fakellm import LLMServer, Reply

LABELS = ["pos", "neg", "neutral"]
ROWS = pd.DataFrame(
    {
        "review": [f"review number {n}" for n in range(40)],
        "label": ["pos"] * 10 + ["neg"] * 20 + ["neutral"] * 10,
    },
    index=[f"r{n}" for n in range(40)],
)
"""40 labelled reviews: half of them "neg", so a model always answering "neg" is right on half."""
TRUTH = dict(zip(ROWS["review"], ROWS["label"], strict=True))


def truth_in(text: str) -> str:
    """The label of the review quoted in a prompt: what a perfect model answers."""
    return next(label for review, label in TRUTH.items() if text.endswith(review))


def last_user_text(messages: list[dict[str, Any]]) -> str:
    return next(m["content"] for m in reversed(messages) if m["role"] == "user")


def echo_truth() -> ChatAgent:
    return ChatAgent(
        provider=ScriptedProvider(default=lambda m: json.dumps(truth_in(last_user_text(m)))), output_retries=0
    )


def constant(answer: str = "neg") -> ChatAgent:
    return ChatAgent(provider=ScriptedProvider(default=json.dumps(answer)), output_retries=0)


def calls(agent: ChatAgent) -> int:
    return len(agent.provider.calls)


def test_the_echo_candidate_is_right_everywhere_and_the_constant_on_its_share() -> None:
    result = ROWS.aiforge.evaluate(
        prompts={"plain": "Sentiment of: {review}"}, agents={"echo": echo_truth(), "const": constant()},
        truth="label", labels=LABELS,
    )
    summary = result.summary
    assert list(summary.index) == ["plain/echo", "plain/const"]  # best first
    echo, const = summary.loc["plain/echo"], summary.loc["plain/const"]
    assert (echo["n"], echo["accuracy"], echo["kappa"], echo["macro_f1"]) == (40, 1.0, pytest.approx(1.0), 1.0)
    assert (const["accuracy"], const["kappa"]) == (0.5, pytest.approx(0.0, abs=1e-9))
    # The intervals hold the true values: 1.0 and 0.5 for accuracy, 1 and 0 for kappa.
    assert echo["low"] < 1.0 == echo["high"] and const["low"] < 0.5 < const["high"]
    assert echo["kappa_low"] <= 1.0 <= echo["kappa_high"] + 1e-9
    assert const["kappa_low"] - 1e-9 <= 0.0 <= const["kappa_high"] + 1e-9
    assert const["macro_f1"] == pytest.approx((2 * 20 / (2 * 20 + 20)) / 3)  # F1(neg) = 2/3, the others 0


def test_the_rows_are_tidy_one_per_candidate_and_input_row() -> None:
    result = ROWS.head(4).aiforge.evaluate(
        prompts={"p": "Sentiment of: {review}"}, agents={"echo": echo_truth(), "const": constant()},
        truth="label", labels=LABELS,
    )
    rows = result.rows
    assert list(rows.columns) == [
        "candidate", "prompt", "agent", "row", "prediction", "truth", "correct",
        "input_tokens", "output_tokens", "cost", "latency_ms", "cached", "error",
    ]
    assert len(rows) == 8 and rows["row"].tolist() == ["r0", "r1", "r2", "r3"] * 2
    assert rows["prediction"].tolist() == ["pos"] * 4 + ["neg"] * 4
    assert rows["correct"].tolist() == [True] * 4 + [False] * 4 and rows["correct"].dtype == bool
    assert (rows["input_tokens"] > 0).all() and rows["error"].isna().all() and not rows["cached"].any()


def test_adding_a_candidate_asks_only_its_rows_with_a_checkpoint_file(tmp_path: Path) -> None:
    echo, const, other = echo_truth(), constant(), constant("pos")
    file = tmp_path / "grid.sqlite"
    grid = {"prompts": {"p": "Sentiment of: {review}"}, "truth": "label", "labels": LABELS, "checkpoint": file}
    first = ROWS.aiforge.evaluate(agents={"echo": echo, "const": const}, **grid)
    assert (calls(echo), calls(const)) == (40, 40)
    second = ROWS.aiforge.evaluate(agents={"echo": echo, "const": const, "pos": other}, **grid)
    assert (calls(echo), calls(const), calls(other)) == (40, 40, 40)  # only the new candidate asked
    assert second.summary.loc[["p/echo", "p/const"]].equals(first.summary.loc[["p/echo", "p/const"]])
    assert second.summary.loc["p/pos", "accuracy"] == 0.25
    edited = {**grid, "prompts": {"p": "Sentiment: {review}"}}  # an edited prompt is a new batch, asked again
    ROWS.aiforge.evaluate(agents={"echo": echo}, **edited)
    assert calls(echo) == 80 and [path.name for path in tmp_path.glob("*.sqlite")] == ["grid.sqlite"]
    interrupted_work.clear()  # a restarted kernel: only the file remembers
    ROWS.aiforge.evaluate(agents={"echo": echo, "const": const, "pos": other}, **grid)
    assert (calls(echo), calls(const), calls(other)) == (80, 40, 40)


@pytest.fixture
def srv() -> Iterator[LLMServer]:
    with LLMServer(strict=True) as server:
        yield server


def openai_agent(srv: LLMServer, model: str) -> ChatAgent:
    return ChatAgent(
        provider="openai", OPENAI_API_KEY="sk-test-key", OPENAI_BASE_URL=srv.openai_base_url, MODEL=model,
        MAX_RETRIES=0, memory="none",
    )


def strong_and_weak(srv: LLMServer) -> None:
    """gpt-4o answers each review's label, gpt-4o-mini says "neg" to everything."""

    def answer(request: Any) -> Reply:
        text = request.messages[-1]["content"]
        return Reply(output={"value": truth_in(text) if request.model == "gpt-4o" else "neg"})

    srv.default = answer


def test_adding_a_candidate_asks_the_server_only_for_its_rows_with_the_cache(srv: LLMServer) -> None:
    strong_and_weak(srv)
    agents = {"4o": openai_agent(srv, "gpt-4o"), "mini": openai_agent(srv, "gpt-4o-mini")}
    prompts = {"plain": "Sentiment of: {review}"}
    first = ROWS.aiforge.evaluate(prompts=prompts, agents=agents, truth="label", labels=LABELS, cache=True)
    assert len(srv.requests) == 80
    prompts["polite"] = "Please give the sentiment of: {review}"
    second = ROWS.aiforge.evaluate(prompts=prompts, agents=agents, truth="label", labels=LABELS, cache=True)
    assert len(srv.requests) == 160  # the two new candidates' 80 rows, none of the first two's
    assert second.rows.loc[second.rows["prompt"] == "plain", "cached"].all()
    # A cache hit counts at what it cost when it was made: the summary of a re-run matches the first run's.
    for name in ("plain/4o", "plain/mini"):
        assert second.summary.loc[name, "cost"] == pytest.approx(first.summary.loc[name, "cost"])
        assert first.summary.loc[name, "cost"] > 0
    assert second.summary.loc["polite/4o", "accuracy"] == 1.0 and second.summary.loc["polite/mini", "accuracy"] == 0.5
    assert len(second.summary) == 4 and second.summary["cost"].iloc[0] > second.summary["cost"].iloc[-1]


def test_settings_dicts_build_agents_and_batch_options_reach_each_batch(srv: LLMServer) -> None:
    strong_and_weak(srv)
    settings = {"provider": "openai", "OPENAI_API_KEY": "sk-test-key", "OPENAI_BASE_URL": srv.openai_base_url,
                "MODEL": "gpt-4o-mini", "MAX_RETRIES": 0}
    result = ROWS.head(6).aiforge.evaluate(
        prompts={"p": "Sentiment of: {review}"}, agents={"mini": settings}, truth="label", labels=LABELS,
        plan="cheapest", deadline="2d",
    )
    assert result.batches["p/mini"].plan == "batch_api" and len(srv.batches.batches) == 1
    assert result.summary.loc["p/mini", "n"] == 6


def test_without_agents_the_grid_runs_on_the_agent_the_settings_make(srv: LLMServer) -> None:
    strong_and_weak(srv)
    result = ROWS.head(6).aiforge.evaluate(
        prompts={"p": "Sentiment of: {review}"}, truth="label", labels=LABELS, provider="openai",
        OPENAI_API_KEY="sk-test-key", OPENAI_BASE_URL=srv.openai_base_url, MODEL="gpt-4o", MAX_RETRIES=0, cache=False,
    )
    assert list(result.summary.index) == ["p/gpt-4o"] and result.summary.loc["p/gpt-4o", "accuracy"] == 1.0
    assert len(srv.requests) == 6 and {r.model for r in srv.requests} == {"gpt-4o"}


def test_every_candidate_is_checked_before_the_first_request(srv: LLMServer) -> None:
    strong_and_weak(srv)
    agents = {"4o": openai_agent(srv, "gpt-4o"), "mini": openai_agent(srv, "gpt-4o-mini")}
    # The second prompt names no column: every row would get the same prompt.
    prompts = {"plain": "Sentiment of: {review}", "blind": "What is the sentiment of this review?"}
    with pytest.raises(UsageError, match=r"prompts\['blind'\]: The prompt template .* names no column"):
        ROWS.aiforge.evaluate(prompts=prompts, agents=agents, truth="label", labels=LABELS)
    assert len(srv.requests) == 0
    # The second agent has a tool, which a packed request cannot call for one row.
    tooled = ChatAgent(provider=ScriptedProvider(default=json.dumps("neg")), tools=[lambda_tool])
    with pytest.raises(UsageError, match=r"agents\['tooled'\]: pack=2 cannot be used with tools"):
        ROWS.aiforge.evaluate(prompts={"plain": "Sentiment of: {review}"}, agents={**agents, "tooled": tooled},
                              truth="label", labels=LABELS, pack=2)
    assert len(srv.requests) == 0 and calls(tooled) == 0


def lambda_tool(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def test_settings_beside_agents_are_refused_and_an_unknown_option_is_named() -> None:
    agent = constant()
    grid = {"prompts": {"p": "{review}"}, "agents": {"m": agent}, "truth": "label", "labels": LABELS}
    with pytest.raises(UsageError, match=r"settings \(MODEL\) configure the agent built when agents= is not given"):
        ROWS.aiforge.evaluate(**grid, MODEL="gpt-4o")
    with pytest.raises(UsageError, match=r"unknown option or setting .max_cots.; did you mean max_cost=\?"):
        ROWS.aiforge.evaluate(**grid, max_cots=1.0)
    assert calls(agent) == 0


def test_text_answers_are_compared_after_strip_and_casefold_and_a_metric_replaces_that() -> None:
    frame = pd.DataFrame({"q": ["capital of France?", "capital of Italy?"], "a": ["Paris", "Rome"]})
    agent = ChatAgent(provider=ScriptedProvider(["  paris\n", "Rome, of course"]))
    result = frame.aiforge.evaluate(prompts={"p": "{q}"}, agents={"m": agent}, truth="a", concurrency=1)
    assert result.rows["correct"].tolist() == [True, False] and "kappa" not in result.summary
    contains = result.rescore(lambda answer, truth: truth.lower() in answer.lower())
    assert contains.summary.loc["p/m", "accuracy"] == 1.0 and len(agent.provider.calls) == 2


def test_a_fractional_metric_gives_a_mean_with_a_normal_interval() -> None:
    frame = pd.DataFrame({"q": ["a", "b", "c", "d"], "a": ["x"] * 4})
    agent = ChatAgent(provider=ScriptedProvider(default="x y"))
    result = frame.aiforge.evaluate(
        prompts={"p": "{q}"}, agents={"m": agent}, truth="a", metric=lambda answer, truth: 0.5
    )
    summary = result.summary.loc["p/m"]
    assert summary["accuracy"] == 0.5 and (summary["low"], summary["high"]) == (0.5, 0.5)
    assert result.rows["correct"].dtype == float


class Answer(BaseModel):
    value: int


def test_an_output_type_is_compared_by_the_metric() -> None:
    frame = pd.DataFrame({"q": ["1+1", "2+2"], "a": [2, 5]})
    agent = ChatAgent(provider=ScriptedProvider(['{"value": 2}', '{"value": 4}']))
    result = frame.aiforge.evaluate(
        prompts={"p": "{q}"}, agents={"m": agent}, truth="a", output=Answer, concurrency=1,
        metric=lambda answer, truth: answer.value == truth,
    )
    assert result.rows["prediction"].tolist() == [Answer(value=2), Answer(value=4)]
    assert result.rows["correct"].tolist() == [True, False]


def test_failed_rows_count_as_wrong_and_keep_their_error() -> None:
    agent = ChatAgent(provider=ScriptedProvider(['"pos"', '"maybe"']), output_retries=0)
    result = ROWS.head(2).aiforge.evaluate(
        prompts={"p": "{review}"}, agents={"m": agent}, truth="label", labels=LABELS, concurrency=1
    )
    rows = result.rows
    assert rows["correct"].tolist() == [True, False] and pd.isna(rows["prediction"].iloc[1])
    assert "OutputValidationError" in rows["error"].iloc[1] and result.summary.loc["p/m", "errors"] == 1
    assert result.summary.loc["p/m", "accuracy"] == 0.5


def test_rows_without_a_truth_are_not_asked() -> None:
    frame = ROWS.head(4).copy()
    frame.loc["r1", "label"] = None
    agent = echo_truth()
    result = frame.aiforge.evaluate(prompts={"p": "{review}"}, agents={"e": agent}, truth="label", labels=LABELS)
    assert calls(agent) == 3 and result.unlabelled == 1 and result.rows["row"].tolist() == ["r0", "r2", "r3"]
    assert "1 rows without a truth left out" in result._repr_html_()


def test_agreement_with_a_human_column_on_its_labelled_rows() -> None:
    frame = ROWS.copy()
    frame["annotator"] = frame["label"].where(frame.index.isin(frame.index[::2]))  # every other row labelled
    result = frame.aiforge.evaluate(
        prompts={"p": "{review}"}, agents={"echo": echo_truth(), "const": constant()}, truth="label", labels=LABELS
    )
    agree = result.agreement(human="annotator", candidate="p/const")
    assert (agree.n, agree.unlabelled, agree.raw) == (20, 20, 0.5) and agree.kappa == pytest.approx(0.0, abs=1e-9)
    assert agree.confusion.loc["pos", "neg"] == 5 and list(agree.confusion.columns) == LABELS
    with pytest.raises(UsageError, match="say which candidate: candidate= one of 'p/echo', 'p/const'"):
        result.agreement(human="annotator")
    with pytest.raises(UsageError, match="no column 'anotator' in the frame; did you mean 'annotator'"):
        result.agreement(human="anotator", candidate="p/echo")


def test_the_summary_shows_as_html_and_plots_accuracy_against_cost() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    result = ROWS.head(8).aiforge.evaluate(
        prompts={"p": "{review}"}, agents={"echo": echo_truth(), "const": constant()}, truth="label", labels=LABELS
    )
    page = result._repr_html_()
    assert "<b>Evaluation</b> · 2 candidates on 8 rows" in page and "p/echo" in page and "kappa" in page
    assert repr(result) == "EvalResult(candidates=2, rows=8, best='p/echo' (1.000))"
    ax = result.plot()
    try:
        assert ax.get_xlabel() == "cost (USD)" and [t.get_text() for t in ax.texts] == ["p/echo", "p/const"]
    finally:
        plt.close(ax.figure)


def test_the_summary_html_is_narrow_escaped_and_kept_by_jupyterlabs_sanitizer() -> None:
    from tests.chat.jupyterlab_sanitizer import dropped

    result = ROWS.head(8).aiforge.evaluate(
        prompts={"<i>p</i>": "{review}"}, agents={"echo": echo_truth(), "const": constant()}, truth="label",
        labels=LABELS,
    )
    page = result._repr_html_()

    assert dropped(page) == []
    assert "<div style='overflow-x: auto; max-width: 100%'><table" in page  # scrolls in its own box when narrow
    assert "&lt;i&gt;p&lt;/i&gt;/echo" in page and "<i>" not in page  # a candidate's name is text
    # One column per number, not one per bound: the intervals sit under their values.
    assert page.count("<th>") == 9 + 2  # candidate, n, accuracy, kappa, macro F1, errors, tokens, cost, ms
    assert "<td>1.000<br><small>0.676–1.000</small></td>" in page  # echo's accuracy on 8 rows, Wilson's bounds
    assert "<td>272 / 16</td>" in page


def test_candidates_on_the_same_point_of_the_plot_share_one_label() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    result = ROWS.head(8).aiforge.evaluate(
        prompts={"p": "{review}", "q": "Review: {review}"}, agents={"echo": echo_truth(), "const": constant()},
        truth="label", labels=LABELS,
    )
    ax = result.plot()
    try:
        assert sorted(t.get_text() for t in ax.texts) == ["p/const, q/const", "p/echo, q/echo"]
    finally:
        plt.close(ax.figure)


def test_a_metric_that_raises_is_named_and_the_result_can_be_rescored() -> None:
    agent = ChatAgent(provider=ScriptedProvider(default="x"))
    result = ROWS.head(2).aiforge.evaluate(prompts={"p": "{review}"}, agents={"m": agent}, truth="label",
                                           metric=lambda answer, truth: answer.nope)
    assert isinstance(result, EvalResult) and repr(result) == "EvalResult(candidates=1, rows=2)"
    with pytest.raises(UsageError, match="metric raised AttributeError.*result.rescore"):
        _ = result.summary
    assert result.rescore(lambda answer, truth: answer == "x").summary.loc["p/m", "accuracy"] == 1.0
    assert len(agent.provider.calls) == 2


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"truth": "lable"}, "no column 'lable' in the frame; did you mean 'label'?"),
        ({"prompts": {}}, "prompts= is empty"),
        ({"agents": {}}, "agents= is empty"),
        ({"prompts": "Sentiment: {review}"}, "prompts= takes a dict of name -> prompt"),
        ({"agents": {"m": "gpt-4o"}}, "agents['m'] is a ChatAgent or a dict of its settings"),
        ({"labels": ["pos", "neg"]}, "has values that are not among labels=['pos', 'neg']: 'neutral'"),
        ({"labels": ["pos"]}, "give at least two distinct labels"),
        ({"output": Answer}, "pass labels= (a label answer) or output= (a structured answer), not both"),
        ({"prompts": {"leak": "{review} ({label})"}}, "names the truth column {label}"),
        ({"prompts": {"p": "{reveiw}"}}, "no column 'reveiw' in the frame; did you mean 'review'?"),
        ({"estimate": True}, "to price a batch first: agent.estimate_batch"),
        ({"MODEL": "gpt-4o"}, "settings (MODEL) configure the agent built when agents= is not given"),
        ({"prompts": {"p": "{review}", "q": "Sentiment?"}}, "prompts['q']: The prompt template 'Sentiment?' names no"),
        ({"calibrate": True}, "agents['m']: calibrate=True calibrates scored labels"),
    ],
)
def test_bad_arguments_are_usage_errors_naming_the_problem_before_any_call(arguments: dict[str, Any],
                                                                           message: str) -> None:
    agent = constant()
    grid = {"prompts": {"p": "{review}"}, "agents": {"m": agent}, "truth": "label", "labels": LABELS, **arguments}
    with pytest.raises(UsageError) as info:
        ROWS.aiforge.evaluate(**grid)
    assert message in str(info.value) and calls(agent) == 0


def test_a_checkpoint_that_is_a_folder_is_refused_naming_a_file_in_it(tmp_path: Path) -> None:
    file = tmp_path
    expected = rf"^evaluate: checkpoint= is one file .*, and {tmp_path} is a folder: pass a file, e.g. checkpoint="
    with warnings.catch_warnings(), pytest.raises(UsageError, match=expected):
        ROWS.aiforge.evaluate(prompts={"p": "{review}"}, agents={"m": constant()}, truth="label",
                              labels=LABELS, checkpoint=file)
