"""df.aiforge.agg through the real openai SDK against fakellm: every request under CONTEXT_WINDOW, levels, groups,
output=, resume after a kill, bad inputs.

The fake model counts: a chunk of rows answers ``rows=<its row lines>``, a fold answers ``rows=<the sum of its
parts>``, so the final answer is the number of rows only if every row was read exactly once on the way up.
"""

from __future__ import annotations

import os
import re
import signal
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from pydantic import BaseModel

import aiforge  # noqa: F401 - registers the accessors
from aiforge.batch.resume import interrupted_work
from aiforge.core.context_windows import DEFAULT_CONTEXT_WINDOW, context_window
from aiforge.core.errors import AggregationError, BatchInterrupted, TruncatedRowWarning
from aiforge.core.tokens import CHARS_PER_TOKEN
from aiforge.core.types import ConfigError, UsageError
from aiforge.semantic.agg.report import AggReport
from fakellm import Fault, LLMServer, RecordedRequest, Reply, estimate_input_tokens

KEY = "sk-agg-test-key-0123456789"
WINDOW = 700
MAX_TOKENS = 40
PROMPT = "How many {review}s are there?"


PADDING = "(counted one by one; nothing else to report about them)" * 2


class Count(BaseModel):
    rows: int


def counted(request: RecordedRequest) -> int:
    """The rows a chunk covers: its row lines, or the sum of the parts' counts on a fold."""
    text = request.last_user_text
    if "Answer for part" in text:
        return sum(int(n) for n in re.findall(r"rows=(\d+)", text))
    return len(re.findall(r"^\[\d+\] ", text, flags=re.MULTILINE))


def count_of(text: str) -> int:
    """The count a text answer gives."""
    return int(re.match(r"rows=(\d+)", text).group(1))  # type: ignore[union-attr]


def answer(request: RecordedRequest) -> Reply:
    rows = counted(request)
    # A partial answer as long as a real one (~30 of the 40 tokens allowed), so folds fill up.
    return Reply(output={"rows": rows}) if request.output_schema else Reply(text=f"rows={rows} {PADDING}")


@pytest.fixture
def srv() -> Iterator[LLMServer]:
    with LLMServer(default=answer) as server:
        yield server


def settings(server: LLMServer, **more: Any) -> dict[str, Any]:
    return dict(
        provider="openai", model="gpt-4o-mini", OPENAI_API_KEY=KEY, OPENAI_BASE_URL=server.openai_base_url,
        MAX_RETRIES=0, CONTEXT_WINDOW=WINDOW, MAX_TOKENS=MAX_TOKENS, PROGRESS_BAR=False, **more,
    )


def reviews(count: int, start: int = 0) -> pd.DataFrame:
    index = pd.Index(range(start, start + count), name="id")
    return pd.DataFrame({"review": [f"review #{i}: the product works, more or less" for i in index]}, index=index)


def assert_every_request_under_the_window(server: LLMServer, window: int = WINDOW) -> None:
    assert server.requests
    for request in server.requests:
        reserved = request.body["max_completion_tokens"]
        # As aiforge estimates it (characters / 4), and as the server counts it.
        chars = sum(len(message["content"]) for message in request.messages)
        assert chars / CHARS_PER_TOKEN + reserved <= window
        assert estimate_input_tokens(request.body) + reserved <= window


def test_context_windows_come_from_the_model_table_the_setting_or_the_default() -> None:
    assert context_window("gpt-4o-mini-2024-07-18") == 128_000
    assert context_window("openai/gpt-4.1-nano") == 1_047_576
    assert context_window("claude-sonnet-4-5-20250929") == 200_000
    assert context_window("some-local-model") == DEFAULT_CONTEXT_WINDOW
    assert context_window("gpt-4o", 9000) == 9000
    assert context_window("SmolLM2-135M-Instruct", embedded_context=4096) == 4096


@pytest.mark.embedded  # builds a provider='local' agent: needs the local extra (not in CI's lowest-versions venv)
def test_the_embedded_model_window_is_the_context_its_engine_loads() -> None:
    from aiforge import ChatAgent
    from aiforge.semantic.agg.reduce import agent_context_window

    assert agent_context_window(ChatAgent(provider="local", LOCAL_CONTEXT_SIZE=2048)) == 2048  # nothing loads
    assert agent_context_window(ChatAgent(provider="local", LOCAL_CONTEXT_SIZE=2048, CONTEXT_WINDOW=1000)) == 1000
    assert agent_context_window(ChatAgent(provider="scripted")) == DEFAULT_CONTEXT_WINDOW


def test_a_long_column_is_folded_over_several_levels_every_request_under_the_window(srv: LLMServer) -> None:
    frame = reviews(400)
    answer = frame.aiforge.agg(PROMPT, **settings(srv))

    assert count_of(answer) == 400  # every row read once, through every level
    report: AggReport = answer.attrs["aiforge"]
    assert len(report.levels) >= 3 and report.levels[-1].chunks == 1
    assert [level.chunks for level in report.levels] == sorted((lv.chunks for lv in report.levels), reverse=True)
    assert report.requests == srv.request_count == report.chunks
    assert report.largest_request <= report.request_limit < WINDOW
    assert report.total_tokens > 0 and report.total_cost > 0
    assert_every_request_under_the_window(srv)


def test_a_column_that_fits_is_one_request_with_the_plain_instruction(srv: LLMServer) -> None:
    answer = reviews(5).aiforge.agg(PROMPT, **settings(srv))

    assert count_of(answer) == 5 and srv.request_count == 1
    text = srv.requests[0].last_user_text
    assert text.startswith("How many reviews are there?\n\nRows:\n[1] review #0:")
    assert "one part of a larger set" not in text


def test_output_types_the_final_answer_only(srv: LLMServer) -> None:
    answer = reviews(300).aiforge.agg(PROMPT, output=Count, **settings(srv))

    assert answer == Count(rows=300)
    typed = [request for request in srv.requests if request.output_schema]
    assert len(typed) == 1 and typed[0] is srv.requests[-1]
    assert_every_request_under_the_window(srv)


def test_by_gives_one_answer_per_group_on_a_group_index_in_one_level(srv: LLMServer) -> None:
    frame = reviews(12).assign(product=["b", "a", "c"] * 4)
    answers = frame.aiforge.agg(PROMPT, by="product", **settings(srv))

    assert answers.index.tolist() == ["a", "b", "c"] and answers.index.name == "product"
    assert [count_of(text) for text in answers] == [4] * 3 and str(answers.dtype) == "string"
    assert len(answers.attrs["aiforge"].levels) == 1 and srv.request_count == 3


def test_groups_finishing_on_different_levels_each_end_with_one_typed_request(srv: LLMServer) -> None:
    frame = reviews(260).assign(product=["big"] * 250 + ["small"] * 10)
    answers = frame.aiforge.agg(PROMPT, by="product", output=Count, **settings(srv))

    assert answers.to_dict() == {"big": Count(rows=250), "small": Count(rows=10)}
    typed = [request for request in srv.requests if request.output_schema]
    assert len(typed) == 2 and all("Answer for part" in r.last_user_text for r in typed[1:])
    level0 = answers.attrs["aiforge"].levels[0]
    assert len(level0.batches) == 2  # big's text chunks, and small's final typed one, on the same level
    assert_every_request_under_the_window(srv)


def test_groupby_agg_keeps_the_keys_a_multiindex_dropna_and_observed(srv: LLMServer) -> None:
    frame = reviews(10).assign(
        shop=pd.Categorical(["x", "y", None, "x", "y", "x", "x", "y", None, "x"], categories=["x", "y", "z"]),
        year=[2024, 2025] * 5,
    )
    two = frame.groupby(["shop", "year"], observed=True).aiforge.agg(PROMPT, **settings(srv))
    assert isinstance(two.index, pd.MultiIndex) and two.index.names == ["shop", "year"]
    expected = frame.groupby(["shop", "year"], observed=True).size()
    assert two.index.equals(expected.index)
    assert [count_of(text) for text in two] == expected.tolist()

    kept_na = frame.groupby("shop", observed=False, dropna=False).aiforge.agg(PROMPT, **settings(srv))
    assert kept_na.index.equals(frame.groupby("shop", observed=False, dropna=False).size().index)
    assert count_of(kept_na["x"]) == 5 and count_of(kept_na["y"]) == 3 and pd.isna(kept_na["z"])
    assert count_of(kept_na.iloc[-1]) == 2  # the NaN key's rows, kept as pandas keeps them with dropna=False

    series = frame.groupby("shop", observed=True)["review"].aiforge.agg("How many reviews?", **settings(srv))
    assert series.map(count_of).to_dict() == {"x": 5, "y": 3}


def test_a_series_reads_its_values(srv: LLMServer) -> None:
    answer = reviews(7)["review"].aiforge.agg("How many {review}s are there?", **settings(srv))
    assert count_of(answer) == 7
    assert srv.requests[0].last_user_text.startswith("How many reviews are there?")


def test_rows_with_every_named_value_missing_are_left_out(srv: LLMServer) -> None:
    frame = reviews(6)
    frame.loc[[1, 4], "review"] = None
    assert count_of(frame.aiforge.agg(PROMPT, **settings(srv))) == 4


def test_a_row_longer_than_the_window_is_cut_to_fit_with_a_warning(srv: LLMServer) -> None:
    frame = pd.DataFrame({"review": ["short one", "x" * 20_000, "another short one"]})
    with pytest.warns(TruncatedRowWarning, match="1 row"):
        answer = frame.aiforge.agg(PROMPT, **settings(srv))
    assert count_of(answer) == 3 and answer.attrs["aiforge"].truncated == 1
    assert_every_request_under_the_window(srv)


class Interrupting:
    """Answers ``answer_first`` requests, then holds ``held`` more and sends this process a SIGINT (a kernel's
    interrupt) when all are held; after that answers everything. Counts the answers per prompt."""

    def __init__(self, answer_first: int, held: int) -> None:
        self.answer_first, self.held = answer_first, held
        self.seen = 0
        self.answered: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply | Fault:
        with self.lock:
            self.seen += 1
            holding = self.answer_first < self.seen <= self.answer_first + self.held
            if not holding:
                self.answered[request.last_user_text] += 1
        if holding:
            if self.seen == self.answer_first + self.held:
                os.kill(os.getpid(), signal.SIGINT)
            return Fault(hang=True)
        return answer(request)


def test_the_same_call_after_an_interrupt_asks_only_the_unfinished_chunks(srv: LLMServer) -> None:
    frame = reviews(400)
    levels = [level.chunks for level in frame.aiforge.agg(PROMPT, **settings(srv)).attrs["aiforge"].levels]
    assert levels[1] == 2
    total = srv.request_count
    srv.reset()
    # Level 0 answered, then level 1's two requests held when the interrupt comes.
    srv.default = meter = Interrupting(answer_first=levels[0], held=2)

    with pytest.raises(BatchInterrupted, match="agg interrupted at level 1"):
        frame.aiforge.agg(PROMPT, concurrency=2, **settings(srv))
    answer = frame.aiforge.agg(PROMPT, concurrency=2, **settings(srv))

    assert count_of(answer) == 400
    assert sum(meter.answered.values()) == total  # every chunk paid once over both calls
    assert set(meter.answered.values()) == {1}
    assert answer.attrs["aiforge"].levels[0].requests == 0  # level 0 came from the interrupted call


def test_failed_chunks_end_the_call_and_the_same_call_asks_only_those(srv: LLMServer) -> None:
    frame = reviews(300)
    failures = {"left": 2}
    asked: Counter[str] = Counter()

    def flaky(request: RecordedRequest) -> Reply | Fault:
        """The second and third chunks of rows fail once (a 500 with no retry)."""
        asked[request.last_user_text] += 1
        if "Answer for part" not in request.last_user_text and len(asked) > 1 and failures["left"]:
            failures["left"] -= 1
            return Fault(status=500)
        return answer(request)

    srv.default = flaky
    with pytest.raises(AggregationError, match="2 of .* chunks at level 0 failed") as failure:
        frame.aiforge.agg(PROMPT, concurrency=1, **settings(srv))
    assert len(failure.value.failed) == 2
    level0 = failure.value.report.levels[0].chunks

    again = frame.aiforge.agg(PROMPT, concurrency=1, **settings(srv))
    assert count_of(again) == 300
    assert again.attrs["aiforge"].levels[0].requests == 2
    assert sum(count for text, count in asked.items() if "Answer for part" not in text) == level0 + 2


def test_checkpoint_file_resumes_in_a_new_process_state(srv: LLMServer, tmp_path: Any) -> None:
    def folds_fail(request: RecordedRequest) -> Reply | Fault:
        return Fault(status=500) if "Answer for part" in request.last_user_text else answer(request)

    frame = reviews(200)
    srv.default = folds_fail
    with pytest.raises(AggregationError, match="at level 1 failed"):
        frame.aiforge.agg(PROMPT, checkpoint=tmp_path / "agg.sqlite", **settings(srv))
    assert [path.name for path in tmp_path.glob("*.sqlite")] == ["agg.sqlite"]  # every level in the one file
    interrupted_work.clear()  # what a restarted kernel has in memory: nothing
    srv.default = answer
    srv.reset()

    assert count_of(frame.aiforge.agg(PROMPT, checkpoint=tmp_path / "agg.sqlite", **settings(srv))) == 200
    assert srv.request_count == 1  # only the fold: level 0 came from its checkpoint file
    with pytest.raises(UsageError, match=rf"^agg: checkpoint= is one file .*{tmp_path} is a folder"):
        frame.aiforge.agg(PROMPT, checkpoint=tmp_path, **settings(srv))


def test_bad_inputs_are_usage_or_config_errors_naming_the_fix(srv: LLMServer) -> None:
    frame = reviews(3)
    with pytest.raises(UsageError, match="names no column"):
        frame.aiforge.agg("How many reviews?", **settings(srv))
    with pytest.raises(UsageError, match="no column 'reviw'.*did you mean 'review'"):
        frame.aiforge.agg("How many {reviw}s?", **settings(srv))
    with pytest.raises(UsageError, match="no rows to aggregate"):
        frame.iloc[:0].aiforge.agg(PROMPT, **settings(srv))
    with pytest.raises(UsageError, match="by=: no column 'shop'"):
        frame.aiforge.agg(PROMPT, by="shop", **settings(srv))
    with pytest.raises(UsageError, match="agg does not take pack="):
        frame.aiforge.agg(PROMPT, pack=4, **settings(srv))
    with pytest.raises(ConfigError, match="CONTEXT_WINDOW=200 leaves no room.*Raise CONTEXT_WINDOW to at least"):
        frame.aiforge.agg(PROMPT, **{**settings(srv), "CONTEXT_WINDOW": 200})
    with pytest.raises(ConfigError, match="CONTEXT_WINDOW"):
        frame.aiforge.agg(PROMPT, **{**settings(srv), "CONTEXT_WINDOW": 0})
    assert srv.request_count == 0


def test_the_smallest_window_a_config_error_names_is_enough(srv: LLMServer) -> None:
    with pytest.raises(ConfigError, match=r"at least (\d+)") as small:
        reviews(40).aiforge.agg(PROMPT, **{**settings(srv), "CONTEXT_WINDOW": 150})
    smallest = int(re.search(r"at least (\d+)", str(small.value)).group(1))  # type: ignore[union-attr]

    answer = reviews(40).aiforge.agg(PROMPT, **{**settings(srv), "CONTEXT_WINDOW": smallest})
    assert count_of(answer) == 40
    assert_every_request_under_the_window(srv, smallest)


SERVER_CONTEXT = 400
"""The context of the server below: smaller than CONTEXT_WINDOW, as a llama.cpp server started with a small one."""


def small_server(request: RecordedRequest) -> Reply | Fault:
    """Answers as ``answer`` while a request's prompt fits ``SERVER_CONTEXT``; refuses it as llama.cpp does beyond."""
    tokens = estimate_input_tokens(request.body)
    if tokens > SERVER_CONTEXT:
        return Fault(
            status=400,
            message=f"request ({tokens} tokens) exceeds the available context size ({SERVER_CONTEXT} tokens), "
            "try increasing it",
            error_type="exceed_context_size_error",
        )
    return answer(request)


def test_a_context_window_larger_than_the_servers_is_named_with_the_servers_number(srv: LLMServer) -> None:
    srv.default = small_server
    frame = reviews(60)
    with pytest.raises(AggregationError) as failure:
        frame.aiforge.agg(PROMPT, concurrency=2, **settings(srv))  # CONTEXT_WINDOW=700 > the server's 400
    message = str(failure.value)
    assert f"CONTEXT_WINDOW={WINDOW}" in message and f"Set CONTEXT_WINDOW={SERVER_CONTEXT}" in message
    assert "run the same call again" not in message and "\n" not in message
    sent = srv.request_count
    assert sent == failure.value.report.levels[0].chunks  # each chunk refused once

    # The advice works: under the server's number every request fits, and the rows are counted.
    answer_ = frame.aiforge.agg(PROMPT, concurrency=2, **{**settings(srv), "CONTEXT_WINDOW": SERVER_CONTEXT})
    assert count_of(answer_) == 60
    assert all(estimate_input_tokens(r.body) <= SERVER_CONTEXT for r in srv.requests[sent:])
