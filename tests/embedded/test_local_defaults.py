"""The embedded model at its defaults: measured sampling, loop guard, honest truncation, tools only when they help."""

from __future__ import annotations

import re

import pytest

from aiforge import ChatAgent
from aiforge.core.render import truncation_note
from aiforge.core.settings import load_settings
from aiforge.providers.local import LocalProvider, weights
from aiforge.providers.local.weights import find_default_weights
from aiforge.tools import builtin_tools

if not weights.xllamacpp_installed() or find_default_weights() is None:
    pytest.skip(f"the embedded model is not installed: {weights.INSTALL_HINT}", allow_module_level=True)

pytestmark = pytest.mark.embedded

LONG_PROMPTS = [
    "Tell me a long story about the ocean",
    "Write a long essay about mountains",
    "Describe a busy city market in detail",
    "Explain in detail how bread is made",
    "Tell me a long story about a dragon",
]

PROMPT_THAT_LOOPS = "Tell me a long story about the ocean"  # greedy, without DRY: a sentence over and over


def _most_repeats(text: str) -> int:
    keys = [" ".join(s.lower().split()).rstrip(".!?") for s in re.findall(r"[^.!?\n]+[.!?\n]*", text)]
    keys = [k for k in keys if len(k.split()) >= 4]
    return max((keys.count(k) for k in keys), default=0)


def test_the_readme_example_answers_paris_at_the_defaults() -> None:
    agent = ChatAgent(provider="local")
    assert agent.request_context.params.temperature is None  # the measured default applies
    answers = set()
    for _ in range(3):
        agent.reset()
        answers.add(agent.chat("What is the capital of France?").message)
    assert all("Paris" in answer for answer in answers)
    assert len(answers) == 1  # greedy: the same answer every time


def test_an_explicit_temperature_wins() -> None:
    assert ChatAgent(provider="local", TEMPERATURE=0.7).request_context.params.temperature == 0.7
    assert ChatAgent(provider="local", TEMPERATURE=0.0).request_context.params.temperature == 0.0


def test_long_answers_never_repeat_a_sentence_more_than_twice() -> None:
    agent = ChatAgent(provider="local", memory="none")
    for prompt in LONG_PROMPTS:
        response = agent.chat(prompt)
        assert _most_repeats(response.message) <= 2, (prompt, response.message)
        if response.trace[-1]["finish_reason"] == "loop":
            assert response.truncated and truncation_note(response) == "cut where the reply began repeating itself"


def test_the_loop_guard_cuts_a_reply_that_repeats_itself() -> None:
    provider = LocalProvider(load_settings(PROVIDER="local"))
    provider.sampling = {}  # repetition controls off, so greedy decoding loops as it used to
    response = ChatAgent(provider=provider, memory="none").chat(PROMPT_THAT_LOOPS)
    assert _most_repeats(response.message) <= 2
    assert response.truncated and response.trace[-1]["finish_reason"] == "loop"
    assert 0 < response.output_tokens < 512


def test_a_reply_cut_at_max_tokens_says_so() -> None:
    response = ChatAgent(provider="local", MAX_TOKENS=8).chat("Write a long essay about mountains")
    assert response.truncated and response.output_tokens == 8
    assert truncation_note(response) == "cut at 8 tokens; set MAX_TOKENS for more"


def test_chit_chat_gets_no_tool_and_arithmetic_gets_the_calculator() -> None:
    agent = ChatAgent(provider="local", memory="none", tools=builtin_tools())
    agent.chat("Hi!")  # load the model
    chunks: list[str] = []
    stream = agent.stream_turn("Hi! What is the capital of Italy?")

    async def consume() -> None:
        async for chunk in stream:
            chunks.append(chunk)

    from aiforge.core.aio import run_sync

    run_sync(consume())
    assert stream.response is not None
    assert "Rome" in stream.response.message and not stream.response.tool_calls
    # Streamed as it is decoded (the time to the first token is measured in bench/embedded.py, target 1.5 s).
    assert len(chunks) > 1 and "".join(chunks) == stream.response.message
    sums = agent.chat("What is 1234 * 5678?")
    assert [c.tool for c in sums.tool_calls][:1] == ["calculator"]


def test_the_default_panel_answers_rome_without_a_tool() -> None:
    pytest.importorskip("ipywidgets")
    from aiforge.jupyter.panel import ChatPanel

    panel = ChatPanel()
    assert panel.agent.provider_name == "local"
    response = panel.send("Hi! What is the capital of Italy?")
    assert response is not None and "Rome" in response.message and not response.tool_calls


def test_an_agent_with_a_small_max_tokens_does_not_cap_a_later_agent_on_the_same_model() -> None:
    # Agents of the same connection settings share one provider instance; the first one's MAX_TOKENS once became
    # every later agent's cap (a 16-token "Il capo di Italy ..." after tests/batch/test_embedded.py's agent).
    ChatAgent(provider="local", memory="none", MAX_TOKENS=4).chat("Hi!")
    response = ChatAgent(provider="local", memory="none").chat("Write a long essay about mountains")
    assert response.output_tokens > 4


def test_a_turn_that_waited_for_the_engine_still_ends_with_its_model_call() -> None:
    """Three rows at once on the engine's one slot: two wait for it inside their model call, and that wait goes
    before the call's record (issue 30 item 11: trace[-1] was the wait, and ``["finish_reason"]`` a KeyError)."""
    agent = ChatAgent(provider="local", memory="none", MAX_TOKENS=8, PROGRESS_BAR=False)
    result = agent.run_batch(["Describe the sea", "Describe a forest", "Describe a desert"], concurrency=3)

    assert not result.failed
    engine_waits = 0
    for response in result.results:
        assert response.trace[-1]["step"] == "model" and response.trace[-1]["finish_reason"] == "length"
        steps = [r["step"] for r in response.trace]
        assert steps.count("model") == 1 and set(steps[:-1]) <= {"wait"}
        engine_waits += sum(r["step"] == "wait" and r["name"] == "engine" for r in response.trace)
    assert engine_waits >= 2  # one slot, three rows: the second and third waited for the ones before them
