"""df.aiforge / s.aiforge: map, classify, filter and extract aligned on the index, with the batch in attrs."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from pydantic import BaseModel

import aiforge  # noqa: F401 - registers the accessor
from aiforge import ChatAgent
from aiforge.core.errors import FailedRowsWarning
from aiforge.core.types import UsageError
from aiforge.modules.base import BatchResult
from aiforge.providers.scripted import ScriptedProvider
from fakellm import LLMServer, Reply, sample_output

DATA = Path(__file__).parents[1] / "data"
REVIEWS = pd.read_csv(DATA / "reviews.csv", index_col="id").head(6)
PEOPLE = pd.read_csv(DATA / "people.csv", index_col="id").head(4)
LABELS = ["pos", "neg", "neutral"]


class Person(BaseModel):
    name: str
    age: int
    city: str


def last_user_text(messages: list[dict[str, Any]]) -> str:
    return next(m["content"] for m in reversed(messages) if m["role"] == "user")


def labelled(messages: list[dict[str, Any]]) -> str:
    """The labelled sentiment of the review in the prompt: the model every test wishes it had."""
    text = last_user_text(messages)
    row = next(r for r in REVIEWS.itertuples() if r.review in text)
    return json.dumps(row.sentiment)


def scripted(reply: Any) -> ChatAgent:
    return ChatAgent(provider=ScriptedProvider(default=reply), output_retries=0)


def test_map_without_output_is_one_text_column_aligned_on_the_index() -> None:
    subset = REVIEWS.iloc[[4, 1]]
    result = subset.aiforge.map("Summarise: {review}", agent=scripted(lambda m: last_user_text(m)[11:20]))
    assert list(result.columns) == ["response"] and str(result["response"].dtype) == "string"
    assert list(result.index) == list(subset.index)
    assert subset.join(result)["response"].tolist() == [r[:9] for r in subset["review"]]


def test_map_with_output_gives_typed_columns_and_failed_rows_are_null() -> None:
    def answer(messages: list[dict[str, Any]]) -> str:
        row = next(r for r in PEOPLE.itertuples() if r.sentence in last_user_text(messages))
        if row.Index == PEOPLE.index[1]:
            return '{"name": "nobody"}'
        return json.dumps({"name": row.name, "age": int(row.age), "city": row.city})

    with pytest.warns(FailedRowsWarning, match=rf"^1 of {len(PEOPLE)} rows failed \(first: OutputValidationError"):
        result = PEOPLE.aiforge.map("Who is it? {sentence}", output=Person, agent=scripted(answer))
    assert result.dtypes.astype(str).to_dict() == {"name": "string", "age": "Int64", "city": "string"}
    expected = PEOPLE[["name", "age", "city"]].astype({"name": "string", "age": "Int64", "city": "string"})
    assert result.drop(index=PEOPLE.index[1]).equals(expected.drop(index=PEOPLE.index[1]))
    assert result.loc[PEOPLE.index[1]].isna().all()
    batch = result.attrs["aiforge"]
    assert isinstance(batch, BatchResult) and [f.index for f in batch.failed] == [PEOPLE.index[1]]


def test_classify_is_a_categorical_of_the_labels_constrained_to_them() -> None:
    agent = scripted(labelled)
    result = REVIEWS.aiforge.classify("Sentiment of: {review}", labels=LABELS, agent=agent)
    assert result.name == "label" and result.cat.categories.tolist() == LABELS
    assert result.astype(str).tolist() == REVIEWS["sentiment"].tolist()
    assert agent.provider.calls[0].params.output.schema["enum"] == LABELS


def test_classify_answers_outside_the_labels_fail_their_row() -> None:
    with pytest.warns(FailedRowsWarning, match=r"^2 of 2 rows failed"):
        result = REVIEWS.head(2).aiforge.classify("{review}", labels=["yes", "no"], agent=scripted('"maybe"'))
    assert result.isna().all() and len(result.attrs["aiforge"].failed) == 2


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (["only"], "give at least two distinct labels, got ['only']"),
        ("ab", "got the one string 'ab'"),
        ([1, 2], "labels must be strings, got 1 (int)"),
        (REVIEWS[["review", "sentiment"]], "got a DataFrame (its column names would be the labels)"),
        ({"pos": "happy", "neg": "sad"}, "got a dict (its keys would be the labels)"),
    ],
)
def test_classify_needs_two_string_labels(labels: Any, message: str) -> None:
    agent = scripted("x")
    with pytest.raises(UsageError) as info:
        REVIEWS.aiforge.classify("{review}", labels=labels, agent=agent)
    assert message in str(info.value) and agent.provider.calls == []


def test_filter_keeps_the_rows_answered_true_and_drops_failures() -> None:
    def answer(messages: list[dict[str, Any]]) -> str:
        text = last_user_text(messages)
        return "not json" if REVIEWS["review"].iloc[0] in text else json.dumps(json.loads(labelled(messages)) == "neg")

    with pytest.warns(FailedRowsWarning, match=rf"^1 of {len(REVIEWS)} rows failed"):
        kept = REVIEWS.aiforge.filter("Is this review negative? {review}", agent=scripted(answer))
    expected = REVIEWS.iloc[1:][REVIEWS["sentiment"].iloc[1:] == "neg"]
    assert kept.equals(expected) and len(kept) > 0
    assert [f.index for f in kept.attrs["aiforge"].failed] == [REVIEWS.index[0]]


def test_extract_builds_the_prompt_and_returns_the_fields_on_the_index() -> None:
    agent = scripted(lambda m: json.dumps({"name": "Ada", "age": 36, "city": "Lyon"}))
    result = PEOPLE.aiforge.extract("sentence", output=Person, agent=agent)
    assert list(result.columns) == ["name", "age", "city"] and list(result.index) == list(PEOPLE.index)
    prompt = agent.provider.calls[0].last_user_message
    assert prompt.startswith("Extract the name, age and city from the text below.")
    assert prompt.endswith(PEOPLE["sentence"].iloc[0])


def test_extract_names_an_unknown_column_and_the_one_meant() -> None:
    with pytest.raises(UsageError) as info:
        PEOPLE.aiforge.extract("sentense", output=Person, agent=scripted("{}"))
    assert str(info.value) == (
        "extract: no column 'sentense' in the frame; did you mean 'sentence'? Columns: sentence, name, age, city"
    )


@pytest.mark.parametrize(
    ("column", "message"),
    [
        (PEOPLE[["sentence"]], "got a DataFrame: df.aiforge.extract('sentence', output=...), or on the column"),
        (PEOPLE["sentence"], "got a Series: df.aiforge.extract('sentence', output=...)"),
        (Person, "extract takes the text column, then the type: df.aiforge.extract('review', output=Person)"),
    ],
)
def test_extract_given_data_or_a_type_where_the_column_name_goes_says_what_to_pass(column: Any, message: str) -> None:
    agent = scripted("{}")
    with pytest.raises(UsageError) as info:
        PEOPLE.aiforge.extract(column, agent=agent)
    assert message in str(info.value) and agent.provider.calls == []


def test_extract_without_an_output_names_it() -> None:
    with pytest.raises(UsageError, match="extract needs output=, the type to extract"):
        PEOPLE.aiforge.extract("sentence", agent=scripted("{}"))


def test_the_series_accessor_works_on_values() -> None:
    reviews = REVIEWS["review"].iloc[[3, 0]]
    agent = scripted(labelled)
    labels = reviews.aiforge.classify("Sentiment: {value}", labels=LABELS, agent=agent)
    assert list(labels.index) == list(reviews.index)
    assert labels.astype(str).tolist() == REVIEWS["sentiment"].iloc[[3, 0]].tolist()
    mapped = reviews.aiforge.map("{review}", agent=scripted(lambda m: "ok"))
    assert mapped["response"].tolist() == ["ok", "ok"]
    extracted = PEOPLE["sentence"].aiforge.extract(output=int, agent=scripted("7"))
    assert extracted["output"].tolist() == [7] * len(PEOPLE)
    assert len(reviews.aiforge.filter("{value}", agent=scripted("false"))) == 0


def test_missing_values_fail_their_rows_without_a_call() -> None:
    frame = REVIEWS.head(3).copy()
    frame.loc[frame.index[1], "review"] = None
    agent = scripted('"pos"')
    with pytest.warns(FailedRowsWarning, match=r"^1 of 3 rows failed \(first: MissingValueError: missing value"):
        result = frame.aiforge.classify("{review}", labels=LABELS, agent=agent)
    assert len(agent.provider.calls) == 2 and pd.isna(result.iloc[1])
    assert str(result.attrs["aiforge"].failed[0].error) == "missing value: review"


def test_an_unknown_column_is_refused_before_any_call() -> None:
    agent = scripted("x")
    with pytest.raises(UsageError, match="no column 'text'"):
        REVIEWS.aiforge.map("{text}", agent=agent)
    assert agent.provider.calls == []


def test_a_misspelt_column_in_a_notebook_is_one_line_with_the_column_meant() -> None:
    shell = InteractiveShell.instance()
    shell.user_ns.update(df=REVIEWS[["review", "sentiment"]], agent=scripted("x"))
    try:
        with capture_output() as captured:
            result = shell.run_cell('df.aiforge.map("Review: {reveiw}", agent=agent)')
    finally:
        for name in ("df", "agent"):
            shell.user_ns.pop(name, None)
    assert isinstance(result.error_in_exec, UsageError)
    lines = [line for line in captured.stdout.splitlines() if line.strip()]
    assert lines == [
        "UsageError: {reveiw}: no column 'reveiw' in the frame; did you mean 'review'? Columns: review, sentiment",
        "(%tb shows the full traceback)",
    ]


def test_without_an_agent_one_is_built_from_the_settings() -> None:
    result = REVIEWS.head(2).aiforge.map("{review}", provider="scripted", memory_k=3)
    assert result["response"].tolist() == [f"You said: {r}" for r in REVIEWS["review"].head(2)]
    with pytest.raises(UsageError, match="agent=None"):
        REVIEWS.aiforge.map("{review}", agent=scripted("x"), provider="scripted")


def test_a_whole_frame_is_one_batch_beyond_max_batch() -> None:
    frame = pd.DataFrame({"n": range(150)})
    assert len(frame.aiforge.map("{n}", agent=scripted("ok"))) == 150


def test_the_batch_in_attrs_survives_further_pandas_operations_uncopied() -> None:
    result = REVIEWS.aiforge.map("{review}", agent=scripted("ok"))
    batch = result.attrs["aiforge"]
    assert result.head(2).attrs["aiforge"] is batch
    assert batch.total_tokens > 0 and len(batch) == len(REVIEWS)


# --- registration ----------------------------------------------------------------------------------------------------


def run_python(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_the_accessor_is_registered_when_pandas_is_imported_after_aiforge() -> None:
    out = run_python(
        "import sys, aiforge; before = 'pandas' in sys.modules; import pandas as pd; "
        "print(before, hasattr(pd.DataFrame, 'aiforge'), hasattr(pd.Series, 'aiforge'), "
        "type(pd.__loader__).__name__, any(type(f).__name__ == '_PandasImportFinder' for f in sys.meta_path))"
    )
    assert out == "False True True SourceFileLoader False"


def test_the_accessor_is_registered_when_pandas_was_imported_first() -> None:
    out = run_python(
        "import pandas as pd, aiforge; print(hasattr(pd.DataFrame, 'aiforge'), hasattr(pd.Series, 'aiforge'))"
    )
    assert out == "True True"


def test_a_submodule_import_registers_it_too() -> None:
    out = run_python("import aiforge; from pandas import DataFrame; print(hasattr(DataFrame, 'aiforge'))")
    assert out == "True"


# --- through the real openai SDK -------------------------------------------------------------------------------------


@pytest.fixture
def srv() -> Iterator[LLMServer]:
    with LLMServer(strict=True) as server:
        yield server


def openai_agent(server: LLMServer) -> ChatAgent:
    return ChatAgent(
        provider="openai", OPENAI_API_KEY="sk-test-key", OPENAI_BASE_URL=server.openai_base_url, MAX_RETRIES=0
    )


def test_map_with_output_through_the_openai_sdk(srv: LLMServer) -> None:
    srv.default = lambda req: Reply(output=sample_output(req.output_schema)) if req.output_schema else None
    result = PEOPLE.aiforge.map("{sentence}", output=Person, agent=openai_agent(srv), concurrency=3)
    assert result.dtypes.astype(str).to_dict() == {"name": "string", "age": "Int64", "city": "string"}
    assert result.notna().all(axis=None) and list(result.index) == list(PEOPLE.index)
    assert len(srv.requests) == len(PEOPLE) and all(r.output_schema for r in srv.requests)


def test_classify_through_the_openai_sdk_sends_the_labels_as_an_enum(srv: LLMServer) -> None:
    srv.default = lambda req: Reply(output={"value": "neutral"})
    result = REVIEWS.aiforge.classify("{review}", labels=LABELS, agent=openai_agent(srv))
    assert (result == "neutral").all()
    value = srv.requests[0].output_schema["properties"]["value"]
    assert value["enum"] == LABELS
