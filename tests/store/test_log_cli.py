"""``aiforge logs`` and ``aiforge chat --session``: the log and sessions from a terminal."""

from __future__ import annotations

import io
import json

from aiforge.cli import main


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


def test_chat_with_a_session_continues_and_logs_shows_its_turns_newest_first() -> None:
    assert run("chat", "--provider", "scripted", "--session", "cli", "first question")[0] == 0
    assert run("chat", "--provider", "scripted", "--session", "cli", "second question")[0] == 0
    assert run("chat", "--provider", "scripted", "unrelated")[0] == 0

    code, out = run("logs", "--session", "cli")
    assert code == 0
    lines = out.splitlines()
    assert "session cli" in lines[0] and lines[1] == "  > second question" and lines[4] == "  > first question"
    assert len(lines) == 6

    code, out = run("logs", "--search", "unrelated", "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [row["prompt"] for row in rows] == ["unrelated"] and rows[0]["session"] is None

    code, out = run("logs", "-n", "1", "--json")
    assert [json.loads(line)["prompt"] for line in out.splitlines()] == ["unrelated"]


def test_the_second_turn_of_a_cli_session_sends_the_first() -> None:
    run("chat", "--provider", "scripted", "--session", "memory-check", "my name is Ada")
    code, out = run("chat", "--provider", "scripted", "--session", "memory-check", "--json", "who am I?")
    assert code == 0 and json.loads(out)["message"] == "You said: who am I?"
    code, out = run("logs", "--session", "memory-check", "-n", "1", "--json")
    sent = json.loads(out)["messages_in"]
    assert [m["content"] for m in sent[1:]] == ["my name is Ada", "You said: my name is Ada", "who am I?"]


def test_logs_with_the_store_off_is_a_one_line_error(monkeypatch, capsys) -> None:
    monkeypatch.setenv("AIFORGE_STORE", "false")
    assert run("logs")[0] == 1
    assert "STORE setting is off" in capsys.readouterr().err


def test_logs_that_find_nothing_say_so_on_stderr_and_exit_0(capsys) -> None:
    assert run("logs")[0] == 0
    assert capsys.readouterr().err == "aiforge: no turns logged yet\n"
    assert run("chat", "--provider", "scripted", "a question about giraffes")[0] == 0
    capsys.readouterr()

    code, out = run("logs", "--search", "zebra")
    assert (code, out) == (0, "") and capsys.readouterr().err == "aiforge: no turns match --search 'zebra'\n"
    code, out = run("logs", "--search", "zebra", "--session", "s1", "--json")  # stdout stays JSON lines: empty
    assert (code, out) == (0, "") and "no turns match --session 's1' --search 'zebra'" in capsys.readouterr().err
    code, out = run("logs", "--search", "giraffes")
    assert code == 0 and "giraffes" in out and capsys.readouterr().err == ""
