"""The API key appears nowhere: reprs, errors, DEBUG logs, traces, DataFrames, widget state, notebooks.

Every agent here uses ``KEY`` ("sk-test-SECRET") and the fake server echoes it back in its error
messages, as real APIs echo (part of) a bad key.
"""

from __future__ import annotations

import io
import json
import logging
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import comm
import ipywidgets as widgets
import nbformat
import pytest
from comm.base_comm import BaseComm
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbclient import NotebookClient

import aiforge
from aiforge.core.logs import LOGGERS
from aiforge.core.settings import load_settings
from aiforge.core.types import AIForgeError, AuthenticationError
from aiforge.jupyter.panel import ChatPanel
from fakellm import Fault, LLMServer, RecordedRequest, Reply, ToolCallSpec
from tests.reliability.conftest import KEY, PROTOCOLS, make_agent

ECHOED = f"Incorrect API key provided: {KEY}. You can find your API key at https://example.invalid."


def leaky_server_default(request: RecordedRequest) -> Fault | None:
    """A 401 that echoes the key for any message containing "trigger 401"; the usual echo otherwise."""
    if "trigger 401" in request.last_user_text:
        return Fault(status=401, message=ECHOED)
    return None


@pytest.fixture
def leaky() -> Iterator[LLMServer]:
    with LLMServer(default=leaky_server_default) as server:
        yield server


def everything_about(error: BaseException) -> str:
    """Every way an error shows up: str, repr, attributes, the full traceback with its causes."""
    return "\n".join([str(error), repr(error), repr(vars(error)), *traceback.format_exception(error)])


def assert_keyless(text: str, where: str) -> None:
    assert KEY not in text, f"the key leaked into {where}"
    assert "test-SECRET" not in text, f"part of the key leaked into {where}"


# ---------------------------------------------------------------------------
# repr/str of settings, agents, responses, errors
# ---------------------------------------------------------------------------


def test_settings_never_show_a_key() -> None:
    settings = load_settings(OPENAI_API_KEY=KEY, ANTHROPIC_API_KEY=KEY, GATEWAY_API_KEY=KEY)
    for shown in (repr(settings), str(settings), settings.model_dump_json(), repr(settings.model_dump())):
        assert_keyless(shown, "settings")
    assert settings.secret("OPENAI_API_KEY") == KEY  # still there for the SDK client


def test_agent_response_and_tracker_never_show_a_key(leaky: LLMServer, protocol: str) -> None:
    agent = make_agent(leaky, protocol)
    response = agent.chat("hello")
    shown = [
        repr(agent), str(agent), repr(agent.provider), repr(agent.settings), repr(response), str(response),
        response._repr_markdown_(), response._repr_html_(), response.model_dump_json(), repr(agent.cost_tracker),
    ]  # fmt: skip
    for text in shown:
        assert_keyless(text, "an agent or response repr")


@pytest.mark.parametrize("mode", ["complete", "stream"])
def test_errors_never_show_a_key(leaky: LLMServer, protocol: str, mode: str) -> None:
    agent = make_agent(leaky, protocol)

    with pytest.raises(AuthenticationError) as caught:
        if mode == "complete":
            agent.chat("trigger 401")
        else:
            list(agent.run_stream("trigger 401"))

    assert "Incorrect API key provided" in str(caught.value)  # the server's message is kept...
    assert_keyless(everything_about(caught.value), "an error")  # ...without the key


def test_connection_and_timeout_errors_never_show_a_key(leaky: LLMServer, protocol: str) -> None:
    unreachable = make_agent("http://127.0.0.1:9", protocol)
    with pytest.raises(AIForgeError) as refused:
        unreachable.chat("hello")
    leaky.enqueue(Fault(hang=True))
    slow = make_agent(leaky, protocol, TIMEOUT=0.2)
    with pytest.raises(AIForgeError) as timed_out:
        slow.chat("hello")

    assert_keyless(everything_about(refused.value), "a connection error")
    assert_keyless(everything_about(timed_out.value), "a timeout error")


# ---------------------------------------------------------------------------
# DEBUG logs of aiforge, httpx, openai and anthropic
# ---------------------------------------------------------------------------


@pytest.fixture
def debug_log() -> Iterator[io.StringIO]:
    """aiforge's logging at DEBUG into a buffer; the loggers are restored afterwards."""
    saved = {name: (logging.getLogger(name).level, list(logging.getLogger(name).handlers)) for name in LOGGERS}
    buffer = io.StringIO()
    aiforge.setup_logging(logging.DEBUG, handler=logging.StreamHandler(buffer))
    yield buffer
    for name, (level, handlers) in saved.items():
        logger = logging.getLogger(name)
        logger.setLevel(level)
        logger.handlers[:] = handlers


def test_debug_logs_never_show_a_key(leaky: LLMServer, debug_log: io.StringIO) -> None:
    for protocol in PROTOCOLS:
        agent = make_agent(leaky, protocol, MAX_RETRIES=1)
        agent.chat("hello")
        list(agent.run_stream("hello again"))
        leaky.enqueue(Fault(status=500, message=ECHOED))
        agent.chat("retried after a 500 that echoes the key")
        for mode in ("complete", "stream"):
            with pytest.raises(AuthenticationError):
                if mode == "complete":
                    agent.chat("trigger 401")
                else:
                    list(agent.run_stream("trigger 401"))

    # Today's SDKs log no key at DEBUG; a future one logging its headers or body must be redacted too.
    for name in LOGGERS:
        logger = logging.getLogger(f"{name}._internal")
        logger.debug("request headers: %s", {"Authorization": f"Bearer {KEY}", "x-api-key": KEY})
        logger.debug("body %r failed", {"error": ECHOED})
        try:
            raise RuntimeError(f"bad key {KEY}")
        except RuntimeError:
            logger.exception("with a traceback")

    logged = debug_log.getvalue()
    assert logged.count("[REDACTED]") >= 4 * len(LOGGERS)
    for name in ("openai", "anthropic", "httpcore", "httpx"):
        assert f" {name}" in logged, f"no DEBUG record of {name}: the test would prove nothing"
    assert_keyless(logged, "the DEBUG log")


# ---------------------------------------------------------------------------
# Traces and DataFrames
# ---------------------------------------------------------------------------


def frame_text(frame: Any) -> str:
    return frame.to_json(default_handler=str, date_format="iso") + frame.to_string()


def test_traces_and_dataframes_never_show_a_key(leaky: LLMServer, protocol: str) -> None:
    from langchain_core.tools import StructuredTool

    def lookup(city: str) -> str:
        """Look up a city."""
        return f"{city}: sunny"

    agent = make_agent(leaky, protocol, tools=[StructuredTool.from_function(lookup)])
    leaky.enqueue(Reply(tool_calls=[ToolCallSpec("lookup", {"city": "Oslo"})]), Reply(text="Sunny."))
    response = agent.chat("Weather in Oslo?")
    batch = agent.run_batch(["fine", "trigger 401 please", "also fine"])

    assert len(batch.failed) == 1
    shown = [
        json.dumps(response.trace, default=str),
        frame_text(response.trace_dataframe()),
        frame_text(agent.history_dataframe()),
        frame_text(agent.cost_tracker.to_dataframe()),
        frame_text(batch.to_dataframe()),
        repr(batch),
        repr(batch.failed),
        batch._repr_markdown_(),
    ]
    assert "Incorrect API key provided" in frame_text(batch.to_dataframe())
    for text in shown:
        assert_keyless(text, "a trace or DataFrame")


# ---------------------------------------------------------------------------
# What the chat panel sends to the front end, and the %%chat magic
# ---------------------------------------------------------------------------


class RecordingFrontEnd:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    def comm(self, **kwargs: Any) -> BaseComm:
        log = self.sent

        class RecordingComm(BaseComm):
            def publish_msg(
                self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any
            ) -> None:
                log.append({"msg_type": msg_type, "data": data, "metadata": metadata})

        return RecordingComm(**kwargs)


def widget_tree(widget: widgets.Widget) -> Iterator[widgets.Widget]:
    yield widget
    for child in getattr(widget, "children", ()):
        yield from widget_tree(child)


def test_chat_panel_sends_no_key_to_the_front_end(
    leaky: LLMServer, protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    front = RecordingFrontEnd()
    monkeypatch.setattr(comm, "create_comm", front.comm)
    panel = ChatPanel(agent=make_agent(leaky, protocol))

    panel.send("hello")
    with pytest.raises(AuthenticationError):
        panel.send("trigger 401")

    assert any("Incorrect API key provided" in e["content"] for e in panel.transcript if e["role"] == "error")
    sent = json.dumps(front.sent, default=str)
    states = json.dumps([w.get_state() for w in widget_tree(panel.widget)], default=str)
    assert "hello" in sent
    assert_keyless(sent, "the comm messages")
    assert_keyless(states, "the widget state")
    assert_keyless(repr(panel) + json.dumps(panel.transcript), "the panel")


def test_chat_magic_shows_no_key(leaky: LLMServer, protocol: str) -> None:
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "aiforge")
    shell.user_ns["agent"] = make_agent(leaky, protocol)
    try:
        with capture_output() as ok:
            assert shell.run_cell("%%chat -a agent\nhello").success
        with capture_output() as failed:
            result = shell.run_cell("%%chat -a agent\ntrigger 401")
    finally:
        shell.run_line_magic("unload_ext", "aiforge")
        shell.user_ns.pop("agent", None)
        shell.user_ns.pop("_chat", None)

    assert isinstance(result.error_in_exec, AuthenticationError)
    shown = ok.stdout + ok.stderr + failed.stdout + failed.stderr
    shown += json.dumps([o.data for o in ok.outputs + failed.outputs], default=str)
    assert "Incorrect API key provided" in shown
    assert_keyless(shown, "the %%chat output")


# ---------------------------------------------------------------------------
# An executed notebook
# ---------------------------------------------------------------------------

NOTEBOOK_CELLS = [
    "import logging\nimport aiforge\nfrom aiforge import ChatAgent\n%load_ext aiforge",
    'agent = ChatAgent(provider="openai", OPENAI_API_KEY="{key}", OPENAI_BASE_URL="{url}/v1", MAX_RETRIES=0)\nagent',
    "agent.settings",
    "print(agent.settings.OPENAI_API_KEY, agent.settings)",
    'response = agent.chat("hello")\nresponse',
    "response.trace_dataframe()",
    "%%chat -a agent\nhello from a cell",
    "agent.history_dataframe()",
    "agent.cost_tracker.to_dataframe()",
    'agent.run_batch(["one", "trigger 401", "three"]).to_dataframe()',
    "%%chat -a agent\ntrigger 401",
    'aiforge.setup_logging(logging.DEBUG)\nagent.chat("with DEBUG logs on")',
    'agent.chat("trigger 401")',
]


@pytest.mark.slow
def test_executed_notebook_outputs_contain_no_key(leaky: LLMServer, tmp_path: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(source.replace("{key}", KEY).replace("{url}", leaky.base_url))
        for source in NOTEBOOK_CELLS
    ]

    NotebookClient(
        notebook, timeout=120, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()

    outputs = [cell.outputs for cell in notebook.cells]
    text = json.dumps(outputs)
    assert KEY in notebook.cells[1].source  # the key was really used...
    assert "Incorrect API key provided" in text and "echo: hello" in text  # ...the cells really ran
    assert any(o.get("name") == "stderr" and "DEBUG" in o.get("text", "") for out in outputs for o in out)
    assert [o["ename"] for out in outputs for o in out if o["output_type"] == "error"] == [
        "AuthenticationError",
        "AuthenticationError",
    ]
    assert_keyless(text, "the executed notebook's outputs")
