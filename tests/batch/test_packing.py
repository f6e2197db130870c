"""Row packing (issue 24, ``run_batch(pack=k)``): k rows per request, answers matched by id, a row left unanswered
or answered invalidly asked again alone, each row its own result with its share of the cost.

The scripted model and the fake OpenAI server below answer a packed request by reading the ``[rN]`` items of
its prompt, so every answer depends on the row it is for: a mismatch between rows and answers shows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import BaseModel, Field

from aiforge import ChatAgent
from aiforge.batch.packing import packed_prompt
from aiforge.core.output import OutputSpec
from aiforge.core.pricing import lookup_price
from aiforge.core.types import Message, ProviderError, Usage, UsageError
from aiforge.providers.scripted import ScriptedProvider
from fakellm import LLMServer, RecordedRequest, Reply
from tests.support.bars import record_bars

ITEM = re.compile(r"^\[(r\d+)\]\n(.*?)(?=\n\n\[r\d+\]|\n\nAnswer every item)", re.M | re.S)


class Stars(BaseModel):
    word: str
    stars: int = Field(ge=1, le=5)


def packed_items(prompt: str) -> list[tuple[str, str]]:
    """The ``(id, text)`` items of a packed prompt; empty for a single row's prompt."""
    return ITEM.findall(prompt)


def stars_of(text: str) -> dict[str, Any]:
    """The answer every test expects for a row: its last word and its length mod 5 plus 1."""
    word = text.split()[-1]
    return {"word": word, "stars": len(text) % 5 + 1}


def answering(
    answer: Callable[[str], Any], *, shuffled: bool = False, drop: str | None = None, bad: str | None = None
) -> Callable[[str], dict[str, Any] | None]:
    """A model: a packed prompt gets ``{"answers": [...]}`` (in another order than asked, one id dropped, one
    answer invalid, on request); a single row's prompt gets None (the caller answers it alone)."""

    def reply(prompt: str) -> dict[str, Any] | None:
        items = packed_items(prompt)
        if not items:
            return None
        answers = [{"id": i, "answer": "not valid" if i == bad else answer(text)} for i, text in items if i != drop]
        if shuffled:  # rotated by one: no answer stays at its row's position
            answers = answers[1:] + answers[:1]
        return {"answers": answers}

    return reply


def scripted(model: Callable[[str], dict[str, Any] | None], alone: Callable[[str], Any]) -> ScriptedProvider:
    def default(messages: list[Message]) -> str:
        prompt = messages[-1]["content"]
        packed = model(prompt)
        if packed is not None:
            return json.dumps(packed)
        answer = alone(prompt)
        return answer if isinstance(answer, str) else json.dumps(answer)

    return ScriptedProvider(default=default)


def rows_sent(provider: ScriptedProvider) -> list[list[str]]:
    return [[text for _, text in packed_items(call.last_user_message)] or [call.last_user_message]
            for call in provider.calls]


# -- through the scripted provider ----------------------------------------------------------------------------


def test_answers_are_matched_by_id_when_the_model_returns_them_shuffled() -> None:
    model = answering(lambda text: f"echo {text}", shuffled=True)
    provider = scripted(model, alone=lambda p: pytest.fail(p))
    items = [f"question {i}" for i in range(12)]
    batch = ChatAgent(provider=provider).run_batch(items, pack=4)
    assert [r.message for r in batch.results] == [f"echo question {i}" for i in range(12)]
    assert all(r.packed and r.output is None for r in batch.results) and len(provider.calls) == 3
    replied = model(provider.calls[0].last_user_message) or {}
    assert [a["id"] for a in replied["answers"]] == ["r2", "r3", "r4", "r1"]  # none at its row's position


def test_structured_output_gives_each_row_its_own_validated_object() -> None:
    provider = scripted(answering(stars_of), alone=stars_of)
    items = [f"a review that says {w}" for w in ("good", "bad", "fine", "great", "awful")]
    batch = ChatAgent(provider=provider).run_batch(items, pack=2, output=Stars)
    assert [r.output for r in batch.results] == [Stars(**stars_of(text)) for text in items]
    assert [Stars.model_validate_json(r.message) for r in batch.results] == [r.output for r in batch.results]
    assert rows_sent(provider) == [items[0:2], items[2:4], items[4:5]]  # a last row on its own goes alone
    assert [r.packed for r in batch.results] == [True, True, True, True, False]
    assert provider.calls[0].params.output.schema["$defs"]["PackedAnswer"]["properties"]["answer"]["$ref"]


def test_a_frame_with_a_template_is_sent_once_per_pack_and_answers_land_on_their_index_labels() -> None:
    frame = pd.DataFrame(
        {"review": ["loved it", "broke at once", "meh", "loved it a lot", "never again"], "product": list("abcde")},
        index=pd.Index([305, 101, 777, 42, 9], name="id"),
    )
    label = {"loved it": "pos", "broke at once": "neg", "meh": "neg", "loved it a lot": "pos", "never again": "neg"}
    provider = scripted(answering(lambda text: label[text]), alone=lambda p: pytest.fail(p))
    labels = frame.aiforge.classify("Classify this review: {review}", ["pos", "neg"], pack=3,
                                    agent=ChatAgent(provider=provider))
    assert labels.to_dict() == {305: "pos", 101: "neg", 777: "neg", 42: "pos", 9: "neg"}
    first = provider.calls[0].last_user_message
    assert first.count("Classify this review: {review}") == 1 and "305" not in first
    assert packed_items(first) == [("r1", "loved it"), ("r2", "broke at once"), ("r3", "meh")]
    assert labels.attrs["aiforge"].to_dataframe()["packed"].tolist() == [True] * 5


def test_a_template_of_several_fields_lists_each_row_as_name_value_lines() -> None:
    frame = pd.DataFrame({"review": ["fine", "awful"], "product": ["kettle", "toaster"]})
    provider = scripted(answering(lambda text: text.replace("\n", " | ")), alone=lambda p: pytest.fail(p))
    batch = ChatAgent(provider=provider).run_batch(frame, prompt="Is {review} fair for a {product}?", pack=2)
    assert rows_sent(provider) == [["review: fine\nproduct: kettle", "review: awful\nproduct: toaster"]]
    assert [r.message for r in batch.results] == ["review: fine | product: kettle", "review: awful | product: toaster"]


def test_an_id_answered_twice_is_asked_again_alone() -> None:
    def twice(prompt: str) -> dict[str, Any] | None:
        items = packed_items(prompt)
        return None if not items else {"answers": [{"id": i, "answer": t} for i, t in items] + [
            {"id": "r1", "answer": "something else"}]}

    provider = scripted(twice, alone=lambda prompt: f"alone: {prompt}")
    batch = ChatAgent(provider=provider).run_batch(["a", "b"], pack=2)
    assert [r.message for r in batch.results] == ["alone: a", "b"] and rows_sent(provider)[1:] == [["a"]]


def test_a_row_with_a_missing_value_is_not_sent() -> None:
    provider = scripted(answering(lambda text: text.upper()), alone=lambda p: pytest.fail(p))
    batch = ChatAgent(provider=provider).run_batch(pd.Series(["a", None, "b", "c"]), pack=4)
    assert rows_sent(provider) == [["a", "b", "c"]]
    assert [r.message for r in batch.results] == ["A", "B", "C"]
    assert str(batch.failed[0].error) == "missing value: value"


def test_pack_1_is_the_normal_path_one_request_per_row() -> None:
    provider = ScriptedProvider(default=lambda messages: f"answer to {messages[-1]['content']}")
    batch = ChatAgent(provider=provider).run_batch(["a", "b", "c"], pack=1)
    assert [c.last_user_message for c in provider.calls] == ["a", "b", "c"]
    assert [r.message for r in batch.results] == ["answer to a", "answer to b", "answer to c"]
    assert not any(r.packed for r in batch.results) and batch.packing is None


def test_packing_with_tools_is_a_usage_error_before_any_request() -> None:
    def lookup(city: str) -> str:
        """Look a city up."""
        return city

    provider = ScriptedProvider()
    with pytest.raises(UsageError, match="pack=3 cannot be used with tools"):
        ChatAgent(provider=provider, tools=[lookup]).run_batch(["a", "b"], pack=3)
    assert provider.calls == []


@pytest.mark.parametrize("pack", [0, -2, True, 2.0, "4"])
def test_a_pack_that_is_not_an_integer_of_at_least_one_is_a_usage_error(pack: Any) -> None:
    provider = ScriptedProvider()
    with pytest.raises(UsageError, match=r"pack must be an integer >= 1, got"):
        ChatAgent(provider=provider).run_batch(["a", "b"], pack=pack)
    assert provider.calls == []


def test_a_packed_batch_resumes_from_its_checkpoint_without_a_request(tmp_path: Path) -> None:
    items = [f"a review that says {w}" for w in ("good", "bad", "fine")]
    first = scripted(answering(stars_of), alone=lambda p: pytest.fail(p))
    path = tmp_path / "packed.sqlite"
    ChatAgent(provider=first).run_batch(items, pack=3, output=Stars, checkpoint=path)
    again = ScriptedProvider(default=lambda messages: pytest.fail("no request expected"))
    batch = ChatAgent(provider=again).run_batch(items, pack=3, output=Stars, checkpoint=path)
    assert [r.output for r in batch.results] == [Stars(**stars_of(text)) for text in items]
    assert again.calls == [] and all(r.packed for r in batch.results)


def test_every_row_of_a_pack_whose_request_failed_is_asked_again_alone() -> None:
    provider = scripted(answering(str.upper), alone=str.upper)
    provider.enqueue(ProviderError("overloaded", provider="scripted", status_code=529))
    with pytest.warns(UserWarning, match=r"pack=3: no packed request answered any of its 3 rows"):
        batch = ChatAgent(provider=provider).run_batch(["a", "b", "c"], pack=3)
    assert rows_sent(provider) == [["a", "b", "c"], ["a"], ["b"], ["c"]]
    assert [r.message for r in batch.results] == ["A", "B", "C"] and not any(r.packed for r in batch.results)
    assert (batch.packing.requests, batch.packing.answered, batch.packing.retried) == (1, 0, 3)


def test_the_progress_bar_counts_rows_not_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    bars = record_bars(monkeypatch)
    provider = scripted(answering(str.upper, drop="r2"), alone=str.upper)
    ChatAgent(provider=provider, PROGRESS_BAR=True).run_batch([f"row {i}" for i in range(10)], pack=4)
    assert [(bar.total, bar.counted) for bar in bars] == [(10, 10)] and len(provider.calls) == 3 + 3


def test_a_budget_skips_rows_before_they_are_packed() -> None:
    with LLMServer() as server:
        batch = openai_agent(server).run_batch(["a", "b", "c", "d"], pack=2, max_cost=0)
        assert server.request_count == 0 and len(batch.skipped) == 4


def test_packed_requests_are_not_written_to_the_response_cache(tmp_path: Path) -> None:
    provider = scripted(answering(str.upper), alone=str.upper)
    cache = tmp_path / "cache.sqlite"
    ChatAgent(provider=provider).run_batch(["a", "b", "c"], pack=3, cache=cache)
    ChatAgent(provider=provider).run_batch(["a", "b", "c"], cache=cache)
    assert rows_sent(provider) == [["a", "b", "c"], ["a"], ["b"], ["c"]]  # nothing of the pack was cached


def test_the_prompt_gives_the_template_once_and_each_row_under_its_id() -> None:
    from aiforge.core.templates import RowTemplate

    prompt = packed_prompt(RowTemplate("Label {review} for {product}"), [("r1", "review: ok\nproduct: x")])
    assert prompt.count("Label {review} for {product}") == 1 and "[r1]\nreview: ok\nproduct: x" in prompt
    assert "({review}, {product} are the item's values)" in prompt
    assert OutputSpec.of(Stars).name not in prompt  # the row's type travels in the schema, not the text


# -- through the real openai SDK against the fake server ------------------------------------------------------

PRICE = lookup_price("gpt-4o-mini")


@pytest.fixture
def srv() -> Iterator[LLMServer]:
    with LLMServer(strict=True) as server:
        yield server


def openai_agent(server: LLMServer) -> ChatAgent:
    return ChatAgent(provider="openai", OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=server.openai_base_url,
                     MAX_RETRIES=0, MODEL="gpt-4o-mini")


PACK_USAGE, ALONE_USAGE = Usage(1000, 100), Usage(300, 10)
"""What the server bills a packed request and a row asked alone."""


def serve(model: Callable[[str], dict[str, Any] | None], alone: Callable[[str], Any]) -> Callable[..., Reply]:
    def reply(request: RecordedRequest) -> Reply:
        packed = model(request.last_user_text)
        usage = PACK_USAGE if packed is not None else ALONE_USAGE
        return Reply(
            output=packed if packed is not None else alone(request.last_user_text),
            usage={"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        )

    return reply


def test_twelve_rows_with_pack_4_make_three_requests_of_four_rows_each(srv: LLMServer) -> None:
    srv.default = serve(answering(stars_of, shuffled=True), alone=lambda p: pytest.fail(p))
    items = [f"review {i} says {'good' if i % 3 else 'awful'}" + "!" * i for i in range(12)]
    batch = openai_agent(srv).run_batch(items, pack=4, output=Stars, concurrency=2)
    sent = [[text for _, text in packed_items(r.last_user_text)] for r in srv.requests]
    assert srv.request_count == 3 and sorted(sent) == sorted([items[0:4], items[4:8], items[8:12]])
    assert srv.max_in_flight <= 2  # concurrency counts packs: one per worker slot
    for request in srv.requests:  # the ids and the count are in the schema: constrained decoding keeps to them
        assert request.output_schema["$defs"]["PackedAnswer"]["properties"]["id"]["enum"] == ["r1", "r2", "r3", "r4"]
        assert request.output_schema["properties"]["answers"]["minItems"] == 4 == request.output_schema[
            "properties"]["answers"]["maxItems"]
    assert [r.output for r in batch.results] == [Stars(**stars_of(text)) for text in items]
    # Each request's usage is split over its four rows: the batch's totals are the three requests'.
    assert batch.total_tokens == 3 * 1100 and batch.total_cost == pytest.approx(3 * PRICE.cost_of(PACK_USAGE))
    assert [r.input_tokens for r in batch.results] == [250] * 12
    assert (batch.packing.requests, batch.packing.rows, batch.packing.requests_saved) == (3, 12, 9)
    # What the savings are computed from: the rows' one-per-request estimate, less what the packs took.
    alone = openai_agent(srv).estimate_batch(items, output=Stars).input_tokens
    assert batch.packing.answered_alone_input_tokens == alone and batch.packing.input_tokens_saved == alone - 3000


def test_a_missing_id_and_an_invalid_answer_are_each_asked_again_alone(srv: LLMServer) -> None:
    packs = answering(stars_of, drop="r2", bad="r3")
    srv.default = serve(packs, alone=lambda prompt: {**stars_of(prompt), "word": "alone"})
    items = [f"review {i} says {w}" for i, w in enumerate(["good", "bad", "fine", "great"] * 3)]
    batch = openai_agent(srv).run_batch(items, pack=6, output=Stars, concurrency=1)
    requests = [r.last_user_text for r in srv.requests]
    assert [len(packed_items(text)) for text in requests] == [6, 0, 0, 6, 0, 0]  # a pack, then its two rows alone
    alone = [text for text in requests if not packed_items(text)]
    assert alone == [items[1], items[2], items[7], items[8]]  # each retried request holds only that row
    expected = [Stars(**stars_of(t)) if i % 6 not in (1, 2) else Stars(word="alone", stars=stars_of(t)["stars"])
                for i, t in enumerate(items)]
    assert [r.output for r in batch.results] == expected
    assert [r.packed for r in batch.results] == [i % 6 not in (1, 2) for i in range(12)]
    assert (batch.packing.answered, batch.packing.retried, batch.packing.requests_saved) == (8, 4, 6)
    # The totals are every request's: the packs' split over their rows (a retried row keeps its share) and the rest.
    assert batch.total_tokens == 2 * 1100 + 4 * 310
    assert batch.total_cost == pytest.approx(2 * PRICE.cost_of(PACK_USAGE) + 4 * PRICE.cost_of(ALONE_USAGE))


def test_a_pack_is_answered_by_id_over_the_anthropic_sdk_too(srv: LLMServer) -> None:
    srv.default = serve(answering(stars_of, shuffled=True), alone=lambda p: pytest.fail(p))
    agent = ChatAgent(provider="anthropic", ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=srv.anthropic_base_url,
                      MAX_RETRIES=0)
    items = [f"review {i} says {w}" for i, w in enumerate(["good", "bad", "fine"])]
    batch = agent.run_batch(items, pack=3, output=Stars)
    assert srv.request_count == 1 and srv.requests[0].protocol == "anthropic"
    assert [r.output for r in batch.results] == [Stars(**stars_of(text)) for text in items]


def test_packings_dollar_saving_takes_off_the_output_its_ids_add() -> None:
    # The saving once priced only the input not sent: the packed reply's ids and list (several output tokens a
    # row, at four times the input price on gpt-4o-mini) made it about twice the bills' difference.
    from aiforge.batch.estimate import item_pricer
    from aiforge.batch.packing_report import PackingStats, packing_saving
    from aiforge.core.pricing import lookup_price
    from aiforge.core.types import Usage

    stats = PackingStats(6, requests=10, rows=60, answered=60, input_tokens=3000, answered_alone_input_tokens=12000)
    pricer = item_pricer(model="gpt-4o-mini", system_prompt="", extras=[], max_tokens=None, free=False, prices=None)
    price = lookup_price("gpt-4o-mini")
    assert price is not None
    saving = packing_saving(stats, pricer)
    assert (saving.requests, saving.input_tokens) == (50, 9000)
    input_only = price.cost_of(Usage(9000, 0))
    assert input_only - price.cost_of(Usage(0, 60 * 10 + 10 * 5)) < saving.dollars < input_only
