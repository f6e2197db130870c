"""The command line: streaming answer, JSON output, exit codes."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from aiforge.cli import main
from fakellm import LLMServer


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


def test_chat_prints_the_answer_and_exits_zero() -> None:
    code, out = run("chat", "--provider", "scripted", "What is the capital of France?")
    assert code == 0
    assert out == "You said: What is the capital of France?\n"


def test_json_output_is_the_chat_response() -> None:
    code, out = run("chat", "--provider", "scripted", "--json", "hi")
    data = json.loads(out)
    assert code == 0
    assert data["message"] == "You said: hi"
    assert len(data["conversation_id"]) == 16 and data["memory_mode"] == "buffer"


def test_unknown_provider_exits_one_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run("chat", "--provider", "nope", "hi")
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1 and "unknown provider 'nope'" in err and "Traceback" not in err


def test_usage_error_exits_two() -> None:
    assert run("chat", "--memory", "forever", "hi")[0] == 2
    assert run("chat", "--provider", "scripted", "   ")[0] == 2
    assert run("chat", "--provider", "scripted", "--memory-k", "0", "hi")[0] == 2


def test_an_interrupt_without_a_message_says_interrupted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # An exception is always truthy: `exc or 'interrupted'` printed an empty "aiforge: " line.
    def interrupted(*_args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("aiforge.cli.chat._turn", interrupted)

    assert run("chat", "--provider", "scripted", "hi")[0] == 130
    assert capsys.readouterr().err == "\naiforge: interrupted\n"


def test_interactive_session_keeps_context(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("first\nsecond\n/exit\n"))
    code, out = run("chat", "--provider", "scripted")
    assert code == 0
    assert "You said: first" in out and "You said: second" in out


def test_python_dash_m_entry_point() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "aiforge", "chat", "--provider", "scripted", "ping"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (0, "You said: ping\n")


# --- interactive commands ---


def test_help_reset_and_unknown_commands_are_handled_by_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("/help\n/nope\nhi\n/reset\n//slash\n/exit\n"))
    code, out = run("chat", "--provider", "scripted")

    assert code == 0
    assert "/reset  start a new conversation" in out and "unknown command /nope" in out
    assert "You said: /help" not in out and "You said: /nope" not in out
    assert "You said: hi" in out and "(new conversation)" in out and "You said: /slash" in out


def test_an_invalid_flag_value_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run("chat", "--provider", "scripted", "-t", "5", "hi")

    err = capsys.readouterr().err
    assert code == 2
    assert err == "aiforge: error: argument --temperature: Input should be less than or equal to 2\n"


# --- a real provider over HTTP ---


@pytest.mark.slow
def test_chat_on_a_local_server_leaves_no_task_behind() -> None:
    # The turn returned on the stream's final Completion without closing the provider's stream: its
    # generator was finalised as the process exited, and stderr said "Task was destroyed but it is pending!".
    with LLMServer() as server:
        done = subprocess.run(
            [sys.executable, "-m", "aiforge", "chat", "-p", "llamacpp", "hello there"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "AIFORGE_LLAMACPP_BASE_URL": server.openai_base_url},
        )
        assert server.request_count == 1 and server.requests[0].stream

    assert (done.returncode, done.stdout) == (0, "echo: hello there\n")
    assert done.stderr == ""
