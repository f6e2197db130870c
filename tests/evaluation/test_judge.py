"""df.aiforge.judge: a rubric scores free text into ``score`` and ``reason`` columns, checked against people.

Through the real openai SDK against fakellm in strict mode (the structured output a real API would accept), and
the scripted provider for the prompt and the argument checks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from pydantic import BaseModel

import aiforge  # noqa: F401 - registers the accessor
from aiforge import ChatAgent
from aiforge.core.types import UsageError
from aiforge.evaluation import agreement
from aiforge.providers.scripted import ScriptedProvider
from fakellm import LLMServer, Reply

ANSWERS = pd.DataFrame(
    {
        "question": ["2+2?", "Capital of France?", "Largest planet?", "Boiling point of water at sea level?"],
        "answer": ["4", "Lyon", "Jupiter, by far", "About 100 C"],
        "human": [5, 1, 5, pd.NA],
    },
    index=["q1", "q2", "q3", "q4"],
).astype({"human": "Int64"})
SCORES = {"4": 5, "Lyon": 1, "Jupiter, by far": 4, "About 100 C": 5}
"""What the fake judge scores each answer: it agrees with people on q1 and q2 and is one point lower on q3."""


@pytest.fixture
def srv() -> Iterator[LLMServer]:
    with LLMServer(strict=True) as server:
        yield server


def openai_agent(srv: LLMServer) -> ChatAgent:
    return ChatAgent(
        provider="openai", OPENAI_API_KEY="sk-test-key", OPENAI_BASE_URL=srv.openai_base_url, MAX_RETRIES=0
    )


def scored_answer(request: Any) -> Reply:
    text = request.messages[-1]["content"]
    answer = next(a for a in SCORES if text.endswith(a))
    return Reply(output={"reason": f"The answer {answer!r} was judged.", "score": SCORES[answer]})


def test_judge_scores_a_column_through_the_openai_sdk_with_a_bounded_structured_output(srv: LLMServer) -> None:
    srv.default = scored_answer
    judged = ANSWERS.aiforge.judge("Is the answer correct and complete?", column="answer", agent=openai_agent(srv))
    assert list(judged.columns) == ["score", "reason"] and list(judged.index) == list(ANSWERS.index)
    assert judged["score"].tolist() == [5, 1, 4, 5] and str(judged["score"].dtype) == "Int64"
    assert judged["reason"].iloc[1] == "The answer 'Lyon' was judged."
    request = srv.requests[0]
    assert set(request.output_schema["properties"]) == {"reason", "score"}
    prompt = request.messages[-1]["content"]
    assert "Rubric:\nIs the answer correct and complete?" in prompt and "from 1 (worst) to 5 (best)" in prompt
    endings = sorted(r.messages[-1]["content"].rsplit("Text:\n", 1)[1] for r in srv.requests)
    assert endings == sorted(ANSWERS["answer"])  # one request a row, the text at the end (rows run concurrently)
    assert judged.attrs["aiforge"].total_tokens > 0


def test_a_score_off_the_scale_is_sent_back_and_asked_again(srv: LLMServer) -> None:
    srv.enqueue(Reply(output={"reason": "great", "score": 7}), Reply(output={"reason": "great", "score": 5}))
    judged = ANSWERS.head(1).aiforge.judge("Correct?", column="answer", agent=openai_agent(srv))
    assert judged["score"].tolist() == [5] and len(srv.requests) == 2
    assert "less than or equal to 5" in json.dumps(srv.requests[1].messages)


def test_the_judge_agrees_with_people_on_the_rows_they_scored(srv: LLMServer) -> None:
    srv.default = scored_answer
    judged = ANSWERS.aiforge.judge("Is the answer correct?", column="answer", agent=openai_agent(srv))
    agree = agreement(judged["score"], ANSWERS["human"])
    # Human 5,1,5 vs judge 5,1,4 (q4 unlabelled): p_o = 2/3; marginals human (1:1/3, 5:2/3), judge (1:1/3, 4:1/3,
    # 5:1/3): p_e = 1/9 + 2/9 = 1/3; kappa = (2/3 - 1/3) / (2/3) = 0.5.
    assert (agree.n, agree.unlabelled, agree.raw) == (3, 1, pytest.approx(2 / 3))
    assert agree.kappa == pytest.approx(0.5) and agree.kappa_low < 0.5 < agree.kappa_high
    assert agree.confusion.loc[5, 4] == 1 and list(agree.confusion.index) == [1, 4, 5]


def scripted(reply: Any = '{"reason": "ok", "score": 3}') -> ChatAgent:
    return ChatAgent(provider=ScriptedProvider(default=reply), output_retries=0)


def test_levels_set_the_scale_and_a_template_names_several_columns() -> None:
    agent = scripted('{"reason": "fine", "score": 2}')
    judged = ANSWERS.aiforge.judge(
        {1: "wrong", 2: "partly right", 3: "right"}, template="Q: {question}\nA: {answer}", agent=agent
    )
    assert judged["score"].tolist() == [2] * 4
    prompt = agent.provider.calls[0].last_user_message
    assert "Rubric:\n1: wrong\n2: partly right\n3: right" in prompt and "from 1 (worst) to 3 (best)" in prompt
    assert prompt.endswith("Q: 2+2?\nA: 4")
    schema = agent.provider.calls[0].params.output.schema["properties"]["score"]
    assert (schema["minimum"], schema["maximum"]) == (1, 3)


class Verdict(BaseModel):
    correct: bool
    explanation: str


def test_a_user_output_model_replaces_score_and_reason_and_braces_in_the_rubric_are_text() -> None:
    agent = scripted('{"correct": true, "explanation": "yes"}')
    judged = ANSWERS["answer"].aiforge.judge("Is it right? Answer as {correct, explanation}.", output=Verdict,
                                             agent=agent)
    assert list(judged.columns) == ["correct", "explanation"] and judged["correct"].all()
    assert "Answer as {correct, explanation}." in agent.provider.calls[0].last_user_message


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"criteria": "Correct?"}, "give the text to judge as column='answer' or as template="),
        ({"criteria": "Correct?", "column": "answer", "template": "{answer}"}, "give the text to judge as column="),
        ({"criteria": "  ", "column": "answer"}, "criteria is the rubric as text"),
        ({"criteria": "Correct?", "column": "answer", "scale": (5, 1)}, "scale= is (lowest, highest)"),
        ({"criteria": {1: "bad", 5: "good"}, "column": "answer", "scale": (1, 5)}, "leave out scale="),
        ({"criteria": "Correct?", "column": "answr"}, "no column 'answr' in the frame; did you mean 'answer'?"),
    ],
)
def test_bad_judge_arguments_are_usage_errors_before_any_call(arguments: dict[str, Any], message: str) -> None:
    agent = scripted()
    with pytest.raises(UsageError) as info:
        ANSWERS.aiforge.judge(agent=agent, **arguments)
    assert message in str(info.value) and agent.provider.calls == []
