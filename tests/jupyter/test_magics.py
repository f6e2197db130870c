"""The %%chat magics, run in a real IPython InteractiveShell against the scripted provider."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import CapturedIO, capture_output

from aiforge import ChatAgent
from aiforge.core.render import UPDATE_INTERVAL
from aiforge.core.types import Completion, ProviderError
from aiforge.jupyter.interpolation import interpolate, resolve_reference
from aiforge.providers.scripted import ScriptedProvider, tool_call
from aiforge.tools import calculator


def scripted_agent(*replies: Any, **kwargs: Any) -> tuple[ChatAgent, ScriptedProvider]:
    provider = ScriptedProvider(replies, delay=kwargs.pop("delay", 0.0), chunk_size=kwargs.pop("chunk_size", 2))
    return ChatAgent(provider=provider, **kwargs), provider


def run(shell: InteractiveShell, source: str) -> tuple[Any, CapturedIO]:
    """Run a cell as a user would; returns the ExecutionResult and what it displayed and printed."""
    with capture_output() as captured:
        result = shell.run_cell(source)
    return result, captured


def published(captured: CapturedIO) -> list[Any]:
    return list(captured.outputs)


# --- loading ---------------------------------------------------------------------------------------------------------


HEAVY_MODULES = (
    "langgraph", "langchain_core", "openai", "anthropic", "httpx", "pydantic", "pandas", "numpy", "dask",
    "ipywidgets", "xllamacpp",
)  # fmt: skip


def test_load_ext_imports_no_heavy_dependency() -> None:
    # Load cost is which modules get imported, not seconds (a busy machine makes any time limit flaky): the heavy
    # ones wait for the first %%chat.
    code = (
        "import json, sys\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "ip = InteractiveShell.instance()\n"
        "before = set(sys.modules)\n"
        "ip.run_line_magic('load_ext', 'aiforge')\n"
        "assert ip.find_cell_magic('chat') and ip.find_line_magic('chat_history'), 'magics missing'\n"
        "print(json.dumps(sorted({name.split('.')[0] for name in set(sys.modules) - before})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    imported = json.loads(out.stdout)
    assert "aiforge" in imported
    assert [name for name in HEAVY_MODULES if name in imported] == []


def test_unload_removes_the_magics(shell: InteractiveShell) -> None:
    shell.run_line_magic("unload_ext", "aiforge")
    assert shell.find_cell_magic("chat") is None
    assert shell.find_line_magic("chat_reset") is None
    shell.run_line_magic("load_ext", "aiforge")
    assert shell.find_cell_magic("chat") is not None


def test_chat_help_lists_the_options(shell: InteractiveShell) -> None:
    doc = shell.find_cell_magic("chat").__doc__
    for option in (
        "--agent",
        "--system",
        "--provider",
        "--model",
        "--quality",
        "--memory",
        "--reset",
        "--format",
        "--no-stream",
        "--output",
    ):
        assert option in doc


# --- streaming into one display --------------------------------------------------------------------------------------


def test_cell_streams_into_one_display_updated_in_place(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], _ = scripted_agent("one two three four five six seven eight", delay=0.06, chunk_size=1)
    result, captured = run(shell, "%%chat -a agent\nCount to eight.")
    assert result.success
    outputs = published(captured)
    display_id = outputs[0].transient["display_id"]
    assert not outputs[0].update
    assert all(o.update and o.transient["display_id"] == display_id for o in outputs[1:])
    partial = [o for o in outputs[1:-1] if "▌" in o.data["text/plain"]]
    assert len(partial) >= 2
    assert all(o.data["text/plain"].startswith("one") for o in partial)
    final = outputs[-1].data
    assert final["text/markdown"].startswith("one two three four five six seven eight")
    assert "▌" not in final["text/markdown"]


def test_streaming_updates_are_throttled(shell: InteractiveShell) -> None:
    words = " ".join(f"w{i}" for i in range(400))
    shell.user_ns["agent"], _ = scripted_agent(words, chunk_size=1)
    started = time.monotonic()
    _, captured = run(shell, "%%chat -a agent\ngo")
    elapsed = time.monotonic() - started
    updates = [o for o in published(captured) if o.update]
    # At most one update per UPDATE_INTERVAL of however long the cell took, plus the final one: a count bounded by
    # the cell's own duration, so a busy machine (a slower stream) allows more updates instead of failing.
    assert len(updates) <= elapsed / UPDATE_INTERVAL + 2
    assert updates[-1].data["text/plain"].startswith(words)


def test_final_output_is_markdown_with_a_footer(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], _ = scripted_agent(
        tool_call("calculator", expression="6*7"), "The answer is **42**.", tools=[calculator]
    )
    _, captured = run(shell, "%%chat -a agent\nWhat is 6*7?")
    final = published(captured)[-1].data
    markdown = final["text/markdown"]
    assert markdown.startswith("The answer is **42**.")
    footer = markdown.rsplit("<sub>", 1)[1]
    for part in ("scripted-model", "tokens", "$0.00000", " ms", "tools: calculator"):
        assert part in footer
    assert "tools: calculator" in final["text/plain"]


def test_response_is_stored_as__chat(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], _ = scripted_agent("Paris.")
    run(shell, "%%chat -a agent\nCapital of France?")
    response = shell.user_ns["_chat"]
    assert response.message == "Paris."
    assert response is shell.user_ns["agent"].last_response


def test_html_in_the_reply_is_shown_as_text(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], _ = scripted_agent("Look: <img src=x onerror=alert(1)> and `<b>code</b>`")
    _, captured = run(shell, "%%chat -a agent\nhi")
    markdown = published(captured)[-1].data["text/markdown"]
    assert "<img" not in markdown
    assert "&lt;img src=x onerror=alert(1)>" in markdown
    assert "`<b>code</b>`" in markdown  # code spans are shown literally by every front end


def test_terminal_ipython_streams_to_stdout(shell: InteractiveShell) -> None:
    # Plain IPython's publisher prints every publication, so the magic writes chunks instead.
    shell.user_ns["agent"], _ = scripted_agent("alpha beta gamma")
    with capture_output(display=False) as captured:
        shell.run_cell("%%chat -a agent\nhi")
    lines = captured.stdout.splitlines()
    assert lines[0] == "alpha beta gamma"
    assert "scripted-model" in lines[1]


# --- the line magic and options --------------------------------------------------------------------------------------


def test_line_magic_sends_the_rest_of_the_line_verbatim(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], provider = scripted_agent("ok")
    shell.user_ns["city"] = "Paris"
    result, _ = run(shell, '%chat -a agent What\'s "up" in {city}?')
    assert result.success
    assert provider.calls[-1].last_user_message == 'What\'s "up" in Paris?'


def test_line_magic_message_may_start_with_a_dash_after_double_dash(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], provider = scripted_agent("ok")
    run(shell, "%chat -a agent -- -5 degrees in Fahrenheit?")
    assert provider.calls[-1].last_user_message == "-5 degrees in Fahrenheit?"


def test_line_magic_ending_in_a_question_mark_is_a_question_not_a_help_request(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], provider = scripted_agent("Paris")
    result, captured = run(shell, "x = 1\n%chat -a agent What is the capital of France?")
    assert result.success, captured.stdout
    assert provider.calls[-1].last_user_message == "What is the capital of France?"
    with capture_output() as captured:
        shell.run_cell("%chat?")
    assert "--no-stream" in captured.stdout  # help on the magic itself still works


def test_unknown_option_is_a_usage_error(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], provider = scripted_agent("ok")
    with pytest.raises(UsageError, match="--modle"):
        shell.run_line_magic("chat", "-a agent --modle x hello")
    assert provider.calls == []


def test_system_option_is_a_per_call_system_prompt(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], provider = scripted_agent("ok", "ok")
    shell.user_ns["persona"] = "a pirate"
    run(shell, '%%chat -a agent -s "You are {persona}."\nhello')
    assert provider.calls[-1].messages[0] == {"role": "system", "content": "You are a pirate."}
    run(shell, "%%chat -a agent\nhello")
    assert provider.calls[-1].messages[0]["content"] != "You are a pirate."


def test_reset_starts_a_new_conversation_first(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], provider = scripted_agent("a", "b")
    run(shell, "%%chat -a agent\nfirst")
    run(shell, "%%chat -a agent --reset\nsecond")
    assert [m["content"] for m in provider.calls[-1].messages[1:]] == ["second"]


def test_no_stream_shows_the_answer_once(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], _ = scripted_agent("whole answer")
    _, captured = run(shell, "%%chat -a agent --no-stream\nhi")
    outputs = published(captured)
    assert len(outputs) == 1 and not outputs[0].update
    assert outputs[0].data["text/markdown"].startswith("whole answer")


def test_format_text_shows_plain_text(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], _ = scripted_agent("**not bold**")
    _, captured = run(shell, "%%chat -a agent -f text\nhi")
    final = published(captured)[-1].data
    assert set(final) == {"text/plain"}
    assert final["text/plain"].startswith("**not bold**")


def test_format_code_shows_the_code_of_a_fenced_reply(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], _ = scripted_agent("```python\nprint('hi')\n```")
    _, captured = run(shell, "%%chat -a agent --format code\nwrite code")
    final = published(captured)[-1].data
    assert final["text/plain"] == "print('hi')"
    assert final["text/markdown"].startswith("```python\nprint('hi')\n```")


def test_format_json_pretty_prints_a_json_reply(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], _ = scripted_agent('{"city": "Paris", "population": 2100000}')
    _, captured = run(shell, "%%chat -a agent -f json\nas json")
    final = published(captured)[-1].data
    assert json.loads(final["text/plain"]) == {"city": "Paris", "population": 2100000}
    assert final["text/markdown"].startswith('```json\n{\n  "city"')


def test_format_json_says_when_the_reply_is_not_json(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], _ = scripted_agent("sorry, no")
    _, captured = run(shell, "%%chat -a agent -f json\nas json")
    assert "not valid JSON" in published(captured)[-1].data["text/markdown"]


# --- session agents --------------------------------------------------------------------------------------------------


def test_session_agent_is_created_from_settings_on_first_use(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIFORGE_PROVIDER", "scripted")
    result, _ = run(shell, "%%chat\nhello there")
    assert result.success
    assert shell.user_ns["_chat"].message == "You said: hello there"
    run(shell, "%chat and again")
    history = shell.run_line_magic("chat_history", "")
    assert list(history.columns) == ["role", "content", "tool_calls", "tool_call_id"]
    assert list(history["content"][1:]) == ["hello there", "You said: hello there", "and again", "You said: and again"]


def test_configuration_options_select_their_own_session_agent(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIFORGE_PROVIDER", "scripted")
    run(shell, "%chat hello")
    run(shell, "%chat --model tiny-model --memory none hi")
    assert shell.user_ns["_chat"].model == "tiny-model"
    assert len(shell.run_line_magic("chat_history", "")) == 3  # the default agent: system, user, assistant
    assert len(shell.run_line_magic("chat_history", "--model tiny-model --memory none")) == 1


def test_chat_reset_clears_the_session_conversation(shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIFORGE_PROVIDER", "scripted")
    run(shell, "%chat hello")
    shell.run_line_magic("chat_reset", "")
    assert len(shell.run_line_magic("chat_history", "")) == 1


def test_chat_history_before_any_chat_is_empty(shell: InteractiveShell) -> None:
    history = shell.run_line_magic("chat_history", "")
    assert history.empty
    assert list(history.columns) == ["role", "content", "tool_calls", "tool_call_id"]


def test_agent_option_and_session_options_do_not_mix(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], _ = scripted_agent("ok")
    with pytest.raises(UsageError, match="session agents"):
        shell.run_cell_magic("chat", "-a agent --model x", "hi")


def test_agent_must_name_a_chat_agent(shell: InteractiveShell) -> None:
    shell.user_ns["not_an_agent"] = 42
    with pytest.raises(UsageError, match="no variable named 'missing'"):
        shell.run_cell_magic("chat", "-a missing", "hi")
    with pytest.raises(UsageError, match="ChatAgent is needed, got int"):
        shell.run_cell_magic("chat", "-a not_an_agent", "hi")


# --- interpolation ---------------------------------------------------------------------------------------------------


class Report:
    title = "Q3 results"
    tags = ["finance", "quarterly"]
    meta = {"owner": "Ana"}


def test_interpolation_substitutes_names_attributes_and_indexes() -> None:
    ns = {"report": Report(), "n": 3}
    text = (
        "{report.title} by {report.meta['owner']} ({report.tags[0]}, {report.tags[-1]}) x{n} {report.meta[\"owner\"]}"
    )
    assert interpolate(text, ns) == "Q3 results by Ana (finance, quarterly) x3 Ana"


def test_double_braces_are_literal_braces() -> None:
    assert interpolate('{{"a": {n}}} and {{n}}', {"n": 1}) == '{"a": 1} and {n}'


def test_unknown_name_is_a_clear_error() -> None:
    with pytest.raises(UsageError, match="no variable named 'missing'.*literal braces"):
        interpolate("hello {missing}", {})


@pytest.mark.parametrize(
    "text",
    ["{__import__('os')}", "{df.head()}", "{a + b}", "{x if y else z}", "{lambda: 1}", "{f'{x}'}"],
)
def test_expressions_are_refused_not_evaluated(text: str) -> None:
    with pytest.raises(UsageError, match="nothing is evaluated|unmatched"):
        interpolate(text, {"df": object(), "a": 1, "b": 2, "x": 1, "y": 1, "z": 1})


def test_private_and_dunder_attributes_are_refused() -> None:
    with pytest.raises(UsageError):
        resolve_reference("report.__class__", {"report": Report()})
    with pytest.raises(UsageError):
        resolve_reference("report._secret", {"report": Report()})


def test_failed_lookup_names_the_step() -> None:
    with pytest.raises(UsageError, match=r"\[5\] failed \(IndexError"):
        interpolate("{tags[5]}", {"tags": []})


def test_lone_brace_is_an_error() -> None:
    with pytest.raises(UsageError, match="unmatched"):
        interpolate("a { b", {})


class Probe:
    def __init__(self) -> None:
        self.calls = 0

    def fire(self) -> str:
        self.calls += 1
        return "fired"


def test_magic_shows_an_unknown_name_as_a_usage_error_and_sends_nothing(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], provider = scripted_agent("ok")
    result, captured = run(shell, "%%chat -a agent\nTell me about {nope}.")
    assert isinstance(result.error_in_exec, UsageError)
    assert "no variable named 'nope'" in captured.stderr
    assert "Traceback" not in captured.stdout + captured.stderr
    assert provider.calls == []


def test_nothing_in_the_cell_or_the_magic_line_is_evaluated(shell: InteractiveShell) -> None:
    probe = Probe()
    shell.user_ns.update(agent=scripted_agent("ok")[0], probe=probe)
    run(shell, "%%chat -a agent\n{probe.fire()}")
    run(shell, "%chat -a agent {probe.fire()}")
    run(shell, '%%chat -a agent -s "{probe.fire()}"\nhi')  # IPython would expand {...} in a magic line
    run(shell, "%chat -a agent {__import__('os').getcwd()}")
    assert probe.calls == 0


# --- errors and interrupts -------------------------------------------------------------------------------------------


def test_provider_error_is_a_short_message_without_traceback(shell: InteractiveShell) -> None:
    provider = ScriptedProvider(
        [ProviderError("upstream overloaded sk-live-abcdef1234567890", provider="openai", status_code=529)]
    )
    shell.user_ns["bad"] = ChatAgent(provider=provider, OPENAI_API_KEY="sk-live-abcdef1234567890")
    result, captured = run(shell, "%%chat -a bad\nhello")
    assert isinstance(result.error_in_exec, ProviderError)
    shown = captured.stdout + captured.stderr
    assert "ProviderError: upstream overloaded" in shown
    assert "status=529" in shown
    assert "Traceback" not in shown
    assert "abcdef1234567890" not in shown
    assert "_chat" not in shell.user_ns


def test_config_error_is_a_short_message_naming_the_fix(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIFORGE_PROVIDER", "no-such-provider")
    result, captured = run(shell, "%%chat\nhello")
    shown = captured.stdout + captured.stderr
    assert "ConfigError: unknown provider 'no-such-provider'" in shown
    assert "register_provider" in shown
    assert "Traceback" not in shown
    assert result.error_in_exec is not None


def test_provider_error_mid_stream_keeps_the_partial_text(shell: InteractiveShell) -> None:
    class FailingMidStream(ScriptedProvider):
        async def stream(self, messages: Any, tools: Any, params: Any) -> AsyncIterator[Any]:
            yield "half an "
            await asyncio.sleep(0.06)
            yield "answer"
            raise ProviderError("connection reset", provider="openai")

    shell.user_ns["agent"] = ChatAgent(provider=FailingMidStream())
    _, captured = run(shell, "%%chat -a agent\nhi")
    final = published(captured)[-1].data
    assert final["text/plain"] == "half an answer\n\n[stopped: ProviderError]"
    assert "ProviderError: connection reset" in captured.stdout


class InterruptingProvider(ScriptedProvider):
    """Streams two chunks, then interrupts: by raising KeyboardInterrupt, or like a kernel's stop button."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how
        self.interrupt = True

    async def stream(self, messages: Any, tools: Any, params: Any) -> AsyncIterator[Any]:
        if not self.interrupt:
            async for event in super().stream(messages, tools, params):
                yield event
            return
        yield "partial "
        await asyncio.sleep(0.06)
        yield "answer"
        await asyncio.sleep(0.06)
        if self.how == "raise":
            raise KeyboardInterrupt
        # The stop button: SIGINT for the main thread, which waits for aiforge's loop thread.
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # type: ignore[arg-type]
        await asyncio.sleep(30)
        yield Completion(text="never")


def check_interrupted_cell(
    shell: InteractiveShell, agent: ChatAgent, provider: InterruptingProvider, captured: CapturedIO, result: Any
) -> None:
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    final = published(captured)[-1]
    assert final.update
    assert final.data["text/plain"] == "partial answer\n\n[interrupted]"
    assert "Interrupted" in captured.stdout and "Traceback" not in captured.stdout
    assert agent.history == []  # the interrupted turn was rolled back
    provider.interrupt = False
    result, _ = run(shell, "%%chat -a agent\nagain")
    assert result.success
    assert [m["content"] for m in agent.history] == ["again", "You said: again"]


def test_keyboard_interrupt_keeps_the_partial_answer_and_the_agent_usable(shell: InteractiveShell) -> None:
    provider = InterruptingProvider("raise")
    shell.user_ns["agent"] = agent = ChatAgent(provider=provider)
    result, captured = run(shell, "%%chat -a agent\nhello")
    check_interrupted_cell(shell, agent, provider, captured, result)


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs POSIX signals")
def test_stop_button_in_a_kernel_cancels_the_turn(shell: InteractiveShell) -> None:
    # As in ipykernel: the cell runs inside a running loop (so the turn runs on aiforge's
    # background loop) and SIGINT raises KeyboardInterrupt in the waiting main thread.
    provider = InterruptingProvider("signal")
    shell.user_ns["agent"] = agent = ChatAgent(provider=provider)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)

    async def cell() -> tuple[Any, CapturedIO]:
        return run(shell, "%%chat -a agent\nhello")

    loop = asyncio.new_event_loop()
    try:
        result, captured = loop.run_until_complete(asyncio.wait_for(cell(), timeout=20))
        check_interrupted_cell(shell, agent, provider, captured, result)
    finally:
        loop.close()
        signal.signal(signal.SIGINT, previous)


# --- --output: a structured answer ------------------------------------------------------------------------------------

REVIEW_JSON = '{"sentiment": "positive", "rating": 5}'


def _review_type() -> type:
    from typing import Literal

    from pydantic import BaseModel

    class Review(BaseModel):
        sentiment: Literal["positive", "negative"]
        rating: int

    return Review


def test_output_option_shows_a_model_as_a_one_row_dataframe_and_stores_it(shell: InteractiveShell) -> None:
    review = _review_type()
    shell.user_ns.update(Review=review, agent=scripted_agent(REVIEW_JSON)[0])
    result, captured = run(shell, "%%chat -a agent --output Review\nLoved it!")
    assert result.success
    final = published(captured)[-1].data
    assert "<table" in final["text/html"] and "<th>sentiment</th>" in final["text/html"]
    assert "positive" in final["text/plain"] and "scripted-model" in final["text/plain"]
    assert shell.user_ns["_chat"].output == review(sentiment="positive", rating=5)


def test_output_option_shows_a_plain_value_as_pretty_json(shell: InteractiveShell) -> None:
    shell.user_ns.update(Tags=list[str], agent=scripted_agent('{"value": ["fast", "cheap"]}')[0])
    _, captured = run(shell, "%%chat -a agent --output Tags --no-stream\nTags?")
    final = published(captured)[-1].data
    assert '[\n  "fast",\n  "cheap"\n]' in final["text/plain"]
    assert "```json" in final["text/markdown"]
    assert shell.user_ns["_chat"].output == ["fast", "cheap"]


def test_output_option_works_on_the_line_magic(shell: InteractiveShell) -> None:
    shell.user_ns.update(Flag=bool, agent=scripted_agent("true")[0])
    run(shell, "%chat -a agent --output Flag Is water wet?")
    assert shell.user_ns["_chat"].output is True
    assert shell.user_ns["_chat"].message == "true"


def test_output_option_with_an_unknown_name_is_one_clear_line_and_sends_nothing(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], provider = scripted_agent(REVIEW_JSON)
    result, captured = run(shell, "%%chat -a agent --output Reveiw\nLoved it!")
    assert isinstance(result.error_in_exec, UsageError)
    assert "--output Reveiw: no type named 'Reveiw'" in captured.stderr
    assert "Traceback" not in captured.stdout + captured.stderr
    assert provider.calls == []


def test_output_option_naming_something_that_is_not_a_type_is_a_usage_error(shell: InteractiveShell) -> None:
    shell.user_ns.update(number=42, agent=scripted_agent(REVIEW_JSON)[0])
    with pytest.raises(UsageError, match="--output number: output must be a type.*int value"):
        shell.run_cell_magic("chat", "-a agent --output number", "hi")


def test_output_that_never_validates_is_a_short_error_and_stores_nothing(shell: InteractiveShell) -> None:
    review = _review_type()
    agent, _ = scripted_agent("not json", output_retries=0)
    shell.user_ns.update(Review=review, agent=agent)
    result, captured = run(shell, "%%chat -a agent --output Review\nLoved it!")
    shown = captured.stdout + captured.stderr
    assert type(result.error_in_exec).__name__ == "OutputValidationError"
    assert "not valid JSON" in shown and "Traceback" not in shown
    assert "_chat" not in shell.user_ns
    assert agent.history == []


# --- temperature, unknown agents, the history view ---


def test_temperature_and_max_tokens_reach_the_provider(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIFORGE_PROVIDER", "scripted")

    run(shell, "%%chat -t 0 --max-tokens 50\nhello")

    agent = next(iter(shell.magics_manager.registry["ChatMagics"].agents.values()))
    assert (agent.settings.TEMPERATURE, agent.settings.MAX_TOKENS) == (0.0, 50)
    assert "--temperature" in shell.find_cell_magic("chat").__doc__
    assert "--max-tokens" in shell.find_cell_magic("chat").__doc__


def test_temperature_is_for_session_agents(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], _ = scripted_agent("ok")
    with pytest.raises(UsageError, match="--temperature.*session agents"):
        shell.run_cell_magic("chat", "-a agent -t 0", "hi")


def test_an_unknown_agent_name_says_there_is_no_agent_and_nothing_about_braces(shell: InteractiveShell) -> None:
    result, captured = run(shell, "%%chat -a nosuchagent\nhi")

    assert isinstance(result.error_in_exec, UsageError)
    assert "no agent of that name" in captured.stderr and "{{" not in captured.stderr


def test_chat_history_view_is_left_aligned_wrapped_and_drops_empty_columns(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIFORGE_PROVIDER", "scripted")
    run(shell, "%chat hello")

    history = shell.run_line_magic("chat_history", "")
    html = history._repr_html_()

    assert list(history.columns) == ["role", "content", "tool_calls", "tool_call_id"]  # the data keeps every column
    assert "<th style='text-align:left;vertical-align:top;white-space:pre-wrap" in html
    assert ">role</th>" in html and ">content</th>" in html
    assert "tool_calls" not in html and "tool_call_id" not in html
    assert type(history.head(1)).__name__ == "DataFrame"


def test_session_option_continues_a_saved_conversation_and_chat_log_lists_turns(shell: InteractiveShell) -> None:
    shell.run_cell_magic("chat", "--provider scripted --session notes --no-stream", "My name is Ada.")
    magics = shell.magics_manager.registry["ChatMagics"]
    magics.agents.clear()  # a new agent, as after a kernel restart
    shell.run_cell_magic("chat", "--provider scripted --session notes --no-stream", "Who am I?")
    (agent,) = magics.agents.values()
    assert [m["content"] for m in agent.history][::2] == ["My name is Ada.", "Who am I?"]
    log = shell.run_line_magic("chat_log", "--session notes")
    assert list(log["prompt"]) == ["Who am I?", "My name is Ada."]
    assert list(shell.run_line_magic("chat_log", "--search Ada -n 5")["prompt"]) == ["My name is Ada."]


# --- %chat_log -------------------------------------------------------------------------------------------------------


def test_chat_log_search_takes_ordinary_words_as_typed(shell: InteractiveShell) -> None:
    agent = ChatAgent(provider=ScriptedProvider(default="noted"))
    for prompt in ("it doesn't work", "a non-stick pan", "order #4411 is late", "refund and return"):
        agent.chat(prompt)

    def found(line: str) -> list[str]:
        return list(shell.run_line_magic("chat_log", line)["prompt"])

    assert found('--search "doesn\'t"') == found("--search doesn't") == ["it doesn't work"]
    assert found("--search non-stick -n 5") == ["a non-stick pan"]
    assert found("--search=#4411") == ["order #4411 is late"]
    assert found('--search "refund') == found("--search 'refund AND'") == ["refund and return"]
    assert found('--search "refund OR late"') == ["refund and return", "order #4411 is late"]

    result, captured = run(shell, "%chat_log --search '#'")
    shown = captured.stdout + captured.stderr
    assert type(result.error_in_exec).__name__ == "UsageError" and "no word to look for" in shown
    assert "Traceback" not in shown and "OperationalError" not in shown


def test_chat_log_shows_messages_with_their_line_breaks(shell: InteractiveShell) -> None:
    agent = ChatAgent(provider=ScriptedProvider(['{"sentiment":"negative","summary":"Broke on day 2.\\nNo refund."}']))
    agent.chat("Review:\nThe pan broke.\n\nLabel it.")

    log = shell.run_line_magic("chat_log", "")
    html, text = log._repr_html_(), repr(log)

    assert list(log["prompt"]) == ["Review:\nThe pan broke.\n\nLabel it."]  # the data is unchanged
    assert "\\n" not in html and "\\n" not in text
    assert "white-space:pre-wrap" in html and "Review:\nThe pan broke.\n\nLabel it." in html
    assert "sentiment: negative\nsummary: Broke on day 2.\nNo refund." in html
    lines = text.splitlines()
    assert lines[1:5] == ["  > Review:", "    The pan broke.", "", "    Label it."]
    assert lines[5:] == ["  < sentiment: negative", "    summary: Broke on day 2.", "    No refund."]
    assert "scripted-model" in lines[0] and " ms" in lines[0]
    assert type(log.head(1)).__name__ == "DataFrame"
