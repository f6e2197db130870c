"""A bad argument of a public call is a UsageError (an AIForgeError and a ValueError): one line in a notebook.

The templates' and the accessor's own cases are in tests/core/test_templates.py and
tests/dataframes/test_accessor.py; these are the other public calls of the package.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import aiforge
from aiforge import ChatAgent
from aiforge.batch.batch_api.job import BatchJob
from aiforge.core.types import UsageError
from aiforge.providers.scripted import ScriptedProvider


@pytest.fixture(autouse=True)
def private_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIFORGE_STORE", str(tmp_path / "store.sqlite"))


def agent(**options: Any) -> ChatAgent:
    return ChatAgent(provider=ScriptedProvider(default="ok"), **options)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: agent().chat("   "), "message must not be empty"),
        (lambda: agent().chat(3), "message must be a str, got int"),
        (lambda: agent(memory_k=0), "memory_k must be an integer >= 1, got 0"),
        (lambda: aiforge.register_provider("", lambda messages, **params: "x"), "provider name must be"),
        (lambda: aiforge.register_provider("mine", 3), "needs a Provider instance or subclass"),
        (lambda: BatchJob.attach(agent=agent()), "BatchJob.attach needs a job_id"),
    ],
)
def test_a_bad_argument_is_a_usage_error(call: Any, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        call()


def test_a_missing_checkpoint_to_attach_to_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist: there is no job to attach to"):
        BatchJob.attach(agent=agent(), checkpoint=tmp_path / "nothing.sqlite")


def echo(text: str) -> str:
    """Return the text."""
    return text


def test_submit_batch_with_tools_is_a_usage_error_before_any_request() -> None:
    tooled = ChatAgent(
        provider="openai", OPENAI_API_KEY="sk-test-key", OPENAI_BASE_URL="http://127.0.0.1:9", tools=[echo]
    )
    with pytest.raises(UsageError, match="submit_batch sends one model call per item and cannot run"):
        tooled.submit_batch(["a"])


def test_session_export_and_import_name_a_bad_format_and_a_foreign_file(tmp_path: Path) -> None:
    agent(session="notes").chat("hello")
    with pytest.raises(UsageError, match="format must be 'markdown' or 'jsonl', not 'pdf'"):
        aiforge.export_session("notes", tmp_path / "notes.pdf", format="pdf")
    foreign = tmp_path / "other.jsonl"
    foreign.write_text('{"role": "user"}\n', encoding="utf-8")
    with pytest.raises(UsageError, match="is not an aiforge session export"):
        aiforge.import_session(foreign)


def test_a_usage_error_in_a_notebook_is_one_line() -> None:
    shell = InteractiveShell.instance()
    shell.user_ns["agent"] = agent()
    try:
        with capture_output() as captured:
            result = shell.run_cell("agent.chat('')")
    finally:
        shell.user_ns.pop("agent", None)
    assert isinstance(result.error_in_exec, UsageError)
    lines = [line for line in captured.stdout.splitlines() if line.strip()]
    assert lines == ["UsageError: message must not be empty or whitespace-only", "(%tb shows the full traceback)"]
