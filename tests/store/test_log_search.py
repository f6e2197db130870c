"""The log's search: ordinary words are searched as words, FTS5 queries as queries, and nothing is a traceback."""

from __future__ import annotations

import io
import json

import pytest

import aiforge
from aiforge import ChatAgent, UsageError
from aiforge.cli import main
from aiforge.providers.scripted import ScriptedProvider

PROMPTS = [
    "it doesn't work",
    "a non-stick pan",
    "send me an e-mail",
    "order #4411 is late",
    "refund and return",
    'the "refund" of order 17',
    "nothing to see here",
]


@pytest.fixture
def logged() -> None:
    agent = ChatAgent(provider=ScriptedProvider(default="noted"))
    for prompt in PROMPTS:
        agent.chat(prompt)


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


@pytest.mark.parametrize(
    ("search", "found"),
    [
        ("doesn't", ["it doesn't work"]),
        ("non-stick", ["a non-stick pan"]),
        ("e-mail", ["send me an e-mail"]),
        ("#4411", ["order #4411 is late"]),
        ("refund AND", ["refund and return"]),
        ('"refund', ['the "refund" of order 17', "refund and return"]),
        ("DOESN'T work", ["it doesn't work"]),
    ],
)
def test_ordinary_words_are_searched_as_words_everywhere(logged: None, search: str, found: list[str]) -> None:
    assert list(aiforge.logs(search=search)["prompt"]) == found

    code, out = cli("logs", "--search", search, "--json")
    assert code == 0 and [json.loads(line)["prompt"] for line in out.splitlines()] == found


@pytest.mark.parametrize(
    ("search", "found"),
    [
        ("refund OR late", ['the "refund" of order 17', "refund and return", "order #4411 is late"]),
        ('"refund and"', ["refund and return"]),
        ("refu* NOT return", ['the "refund" of order 17']),
        ("prompt:pan", ["a non-stick pan"]),
    ],
)
def test_a_valid_fts5_query_keeps_its_meaning(logged: None, search: str, found: list[str]) -> None:
    assert list(aiforge.logs(search=search)["prompt"]) == found


@pytest.mark.parametrize("search", ["#", '"', "*", "   ", "-- ''"])
def test_a_search_without_a_word_is_one_usage_error(
    logged: None, search: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(UsageError, match="no word to look for"):
        aiforge.logs(search=search)

    code, out = cli("logs", "--search", search)
    err = capsys.readouterr().err
    assert (code, out) == (2, "")
    assert err.startswith("aiforge: error: argument --search:") and "no word to look for" in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_a_search_that_is_not_text_is_a_usage_error(logged: None) -> None:
    with pytest.raises(UsageError, match="search= takes text"):
        aiforge.logs(search=4411)  # type: ignore[arg-type]
