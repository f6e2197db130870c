"""OTEL=True: OpenTelemetry GenAI spans of batches, turns, model calls and tools, captured by the SDK in memory.

The spans go through the global tracer provider an application sets up (``tests/support/otel.py``); the wire tests
run the real openai and anthropic SDKs against the fake server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from aiforge import ChatAgent
from aiforge.core.types import ProviderError
from aiforge.providers.scripted import ScriptedProvider, tool_call
from fakellm import Fault, LLMServer, Reply, ToolCallSpec
from tests.chat.conftest import make_wire_agent
from tests.support.otel import by_name, every_text, span_exporter

SECRET_KEY = "sk-otelcanary-7f3a9c1e5b2d8f4a6c0e"
"""A key no test of the suite uses elsewhere: found on any span, it leaked."""


class AiforgeSpans:
    """The spans aiforge and the test made (the anthropic SDK traces its own requests too: left out here)."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        self.exporter = exporter

    def get_finished_spans(self) -> tuple[ReadableSpan, ...]:
        return tuple(s for s in self.exporter.get_finished_spans() if s.instrumentation_scope.name in OUR_SCOPES)

    def clear(self) -> None:
        self.exporter.clear()


OUR_SCOPES = ("aiforge", "notebook")


@pytest.fixture
def spans() -> Iterator[AiforgeSpans]:
    exporter = span_exporter()
    exporter.clear()
    yield AiforgeSpans(exporter)
    exporter.clear()


@pytest.fixture(autouse=True)
def no_content_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city
    """
    return f"sunny in {city}"


# ---------------------------------------------------------------------------
# Off, and the package missing
# ---------------------------------------------------------------------------


def test_otel_off_makes_no_spans(spans) -> None:
    agent = ChatAgent(provider=ScriptedProvider([tool_call("weather", city="Oslo"), "sunny"]), tools=[weather])

    agent.chat("weather in Oslo?")
    agent.run_batch(["a", "b"])

    assert spans.get_finished_spans() == ()


def test_aiforge_otel_environment_variable_turns_spans_on(spans, monkeypatch) -> None:
    monkeypatch.setenv("AIFORGE_OTEL", "true")

    ChatAgent(provider="scripted").chat("hi")

    assert [s.name for s in spans.get_finished_spans()] == ["chat scripted-model", "invoke_agent"]


def test_otel_on_without_opentelemetry_installed_is_a_config_error_naming_the_extra() -> None:
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"  # import opentelemetry now fails, as when not installed
        "from aiforge import ChatAgent\n"
        "from aiforge.core.types import ConfigError\n"
        "ChatAgent(provider='scripted').chat('hi')\n"  # off: works, and never imports it
        "try:\n"
        "    ChatAgent(provider='scripted', OTEL=True)\n"
        "except ConfigError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)

    assert 'pip install "aiforge-kit[otel]"' in done.stdout
    assert "OTEL=False" in done.stdout


def test_otel_off_never_loads_the_opentelemetry_api() -> None:
    code = (
        "from aiforge import ChatAgent\nfrom aiforge.core import telemetry as otel\n"
        "agent = ChatAgent(provider='scripted')\nagent.chat('hi'); agent.run_batch(['a', 'b'])\n"
        "print(otel._api.cache_info().currsize, otel._tracer.cache_info().currsize)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)

    assert done.stdout.strip().splitlines()[-1] == "0 0"


# ---------------------------------------------------------------------------
# Turns, model calls and tools (scripted provider)
# ---------------------------------------------------------------------------


def test_a_turn_is_an_invoke_agent_span_over_its_chat_span(spans) -> None:
    agent = ChatAgent(provider=ScriptedProvider(["Paris."]), OTEL=True, TEMPERATURE=0.2, MAX_TOKENS=50)

    response = agent.chat("Capital of France?")

    chat, turn = spans.get_finished_spans()
    assert (turn.name, chat.name) == ("invoke_agent", "chat scripted-model")
    assert parent_of(chat) == turn.context.span_id and turn.parent is None
    assert chat.context.trace_id == turn.context.trace_id
    assert turn.kind == SpanKind.INTERNAL and chat.kind == SpanKind.INTERNAL  # an in-process model: no server
    assert {k: turn.attributes[k] for k in ("gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.conversation.id",
                                            "aiforge.trace_id", "aiforge.cache_hit")} == {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "scripted",
        "gen_ai.conversation.id": agent.conversation_id, "aiforge.trace_id": response.trace_id,
        "aiforge.cache_hit": False,
    }
    assert dict(chat.attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": "scripted-model",
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.max_tokens": 50,
        "gen_ai.response.model": "scripted-model",
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": response.input_tokens,
        "gen_ai.usage.output_tokens": response.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": 0,
        "gen_ai.usage.cache_creation.input_tokens": 0,
        "aiforge.cost_usd": 0.0,
    }
    assert "gen_ai.input.messages" not in turn.attributes  # content is opt-in


def test_tool_calls_are_execute_tool_spans_under_the_turn(spans) -> None:
    fake = ScriptedProvider([tool_call("weather", city="Oslo"), tool_call("weather", city="Rome"), "Both sunny."])
    agent = ChatAgent(provider=fake, tools=[weather], OTEL=True)

    response = agent.chat("Weather in Oslo and Rome?")

    (turn,) = by_name(spans.get_finished_spans(), "invoke_agent")
    tools = by_name(spans.get_finished_spans(), "execute_tool")
    chats = by_name(spans.get_finished_spans(), "chat ")
    assert [t.name for t in tools] == ["execute_tool weather", "execute_tool weather"]
    assert len(chats) == 3
    assert {parent_of(s) for s in [*tools, *chats]} == {turn.context.span_id}
    assert [t.attributes["gen_ai.tool.call.id"] for t in tools] == [c.id for c in response.tool_calls]
    assert all(t.attributes["gen_ai.tool.type"] == "function" and t.attributes["gen_ai.operation.name"]
               == "execute_tool" and t.attributes["gen_ai.tool.name"] == "weather" for t in tools)
    assert chats[0].attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)


def test_a_failing_tool_marks_its_span_as_a_tool_error(spans) -> None:
    def broken(city: str) -> str:
        """Always fails."""
        raise RuntimeError("backend down")

    agent = ChatAgent(provider=ScriptedProvider([tool_call("broken", city="Oslo"), "sorry"]), tools=[broken], OTEL=True)

    agent.chat("go")

    (tool,) = by_name(spans.get_finished_spans(), "execute_tool")
    assert tool.status.status_code == StatusCode.ERROR and tool.attributes["error.type"] == "tool_error"
    assert "backend down" not in (tool.status.description or "")  # the tool's text is content: off by default


def test_a_streamed_turn_has_a_streaming_chat_span(spans) -> None:
    agent = ChatAgent(provider=ScriptedProvider(["a streamed answer"]), OTEL=True)

    chunks = list(agent.run_stream("stream please"))

    assert "".join(chunks) == "a streamed answer"
    chat, turn = spans.get_finished_spans()
    assert chat.attributes["gen_ai.request.stream"] is True and parent_of(chat) == turn.context.span_id
    assert turn.attributes["gen_ai.usage.output_tokens"] == agent.last_response.output_tokens


def test_a_turn_served_from_the_response_cache_has_no_chat_span(spans) -> None:
    agent = ChatAgent(provider=ScriptedProvider(["cached answer", "fresh answer"]), OTEL=True, CACHE="memory")
    agent.run_batch(["same question"])
    spans.clear()

    agent.run_batch(["same question"])

    names = [s.name for s in spans.get_finished_spans()]
    assert names == ["invoke_agent", "aiforge.batch"]
    turn, batch = spans.get_finished_spans()
    assert turn.attributes["aiforge.cache_hit"] is True and "gen_ai.usage.input_tokens" not in turn.attributes
    assert batch.attributes["aiforge.batch.cached"] == 1


def test_a_summary_call_is_a_chat_span_of_kind_summary(spans) -> None:
    agent = ChatAgent(provider=ScriptedProvider(default="ok"), memory="summary", memory_k=2, OTEL=True)

    for question in ("one", "two", "three"):
        agent.chat(question)

    kinds = [s.attributes.get("aiforge.call.kind") for s in by_name(spans.get_finished_spans(), "chat ")]
    assert "summary" in kinds


# ---------------------------------------------------------------------------
# Batches
# ---------------------------------------------------------------------------


def test_every_row_of_a_concurrent_batch_nests_under_the_batch_span(spans) -> None:
    agent = ChatAgent(provider=ScriptedProvider(default="label", delay=0.05), OTEL=True)

    result = agent.run_batch([f"row {i}" for i in range(8)], concurrency=4)

    assert len(result.results) == 8
    (batch,) = by_name(spans.get_finished_spans(), "aiforge.batch")
    turns = by_name(spans.get_finished_spans(), "invoke_agent")
    chats = by_name(spans.get_finished_spans(), "chat ")
    assert len(turns) == len(chats) == 8
    assert {parent_of(t) for t in turns} == {batch.context.span_id}
    assert {parent_of(c) for c in chats} == {t.context.span_id for t in turns}
    assert {s.context.trace_id for s in [*turns, *chats]} == {batch.context.trace_id}
    # The rows ran concurrently: the first four started before any of them ended.
    first = sorted(turns, key=lambda s: s.start_time)[:4]
    assert max(s.start_time for s in first) < min(s.end_time for s in first)
    assert dict(batch.attributes) == {
        "gen_ai.provider.name": "scripted", "gen_ai.request.model": "scripted-model",
        "aiforge.batch.concurrency": 4, "aiforge.batch.size": 8, "aiforge.batch.failed": 0,
        "aiforge.batch.cached": 0, "aiforge.cost_usd": 0.0,
    }


def test_the_batch_span_nests_under_the_callers_span_also_from_a_running_loop(spans) -> None:
    agent = ChatAgent(provider="scripted", OTEL=True)
    tracer = trace.get_tracer("notebook")

    async def cell() -> None:  # a Jupyter cell: run_batch goes to aiforge's background loop
        with tracer.start_as_current_span("cell"):
            agent.run_batch(["a", "b"], concurrency=2)

    import asyncio

    asyncio.run(cell())

    (outer,) = by_name(spans.get_finished_spans(), "cell")
    (batch,) = by_name(spans.get_finished_spans(), "aiforge.batch")
    assert parent_of(batch) == outer.context.span_id


# ---------------------------------------------------------------------------
# Wire: the real SDKs against the fake server
# ---------------------------------------------------------------------------


def test_wire_chat_span_carries_server_usage_and_cache_tokens(spans, protocol) -> None:
    with LLMServer(strict=True) as srv:
        srv.enqueue(Reply(text="Hi!", usage={"input_tokens": 1200, "output_tokens": 30, "cached_tokens": 1000}))
        agent = make_wire_agent(srv, protocol, OTEL=True, MAX_TOKENS=64, MODEL="gpt-4o-mini")

        response = agent.chat("Hello!")

    chat, turn = spans.get_finished_spans()
    base = srv.openai_base_url if protocol == "openai" else srv.anthropic_base_url
    assert chat.kind == SpanKind.CLIENT
    assert chat.name == "chat gpt-4o-mini"
    assert chat.attributes["gen_ai.provider.name"] == protocol
    assert chat.attributes["server.address"] == "127.0.0.1"
    assert chat.attributes["server.port"] == int(base.split(":")[2].split("/")[0])
    assert chat.attributes["gen_ai.request.max_tokens"] == 64
    # Sent to OpenAI; never to the Messages API (aiforge does not send it there), so not on that span.
    assert ("gen_ai.request.temperature" in chat.attributes) is (protocol == "openai")
    assert chat.attributes["gen_ai.response.model"] == response.model
    assert chat.attributes["gen_ai.usage.input_tokens"] == 1200 == response.input_tokens
    assert chat.attributes["gen_ai.usage.output_tokens"] == 30
    assert chat.attributes["gen_ai.usage.cache_read.input_tokens"] == 1000
    assert chat.attributes["gen_ai.response.finish_reasons"] == (("stop",) if protocol == "openai" else ("end_turn",))
    assert chat.attributes["aiforge.cost_usd"] == pytest.approx(response.cost) and response.cost > 0
    assert turn.attributes["aiforge.cost_usd"] == pytest.approx(response.cost)


def test_wire_anthropic_cache_writes_are_cache_creation_tokens(spans) -> None:
    with LLMServer(strict=True) as srv:
        usage = {"input_tokens": 2000, "output_tokens": 5, "cache_creation_input_tokens": 1500}
        srv.enqueue(Reply(text="ok", usage=usage))
        make_wire_agent(srv, "anthropic", OTEL=True).chat("hi")

    chat, _turn = spans.get_finished_spans()
    assert chat.attributes["gen_ai.usage.cache_creation.input_tokens"] == 1500
    assert chat.attributes["gen_ai.usage.input_tokens"] == 2000  # includes the cache writes, as the conventions ask


def test_wire_retries_are_events_on_the_one_chat_span(spans) -> None:
    with LLMServer(strict=True) as srv:
        srv.enqueue(Fault(status=500), Reply(text="after retry"))
        agent = make_wire_agent(srv, "openai", OTEL=True, MAX_RETRIES=1, RETRY_MAX_WAIT=1)

        assert agent.chat("hi").message == "after retry"

    (chat,) = by_name(spans.get_finished_spans(), "chat ")
    (event,) = chat.events
    assert event.name == "aiforge.retry"
    assert event.attributes["aiforge.retry.number"] == 1 and event.attributes["error.type"]
    assert chat.status.status_code == StatusCode.UNSET


def test_wire_failure_sets_error_type_and_status_on_the_chat_and_turn_spans(spans) -> None:
    with LLMServer(strict=True) as srv:
        srv.enqueue(Fault(status=400, message="bad request"))
        agent = make_wire_agent(srv, "openai", OTEL=True)

        with pytest.raises(ProviderError) as raised:
            agent.chat("hi")

    chat, turn = spans.get_finished_spans()
    for span in (chat, turn):
        assert span.status.status_code == StatusCode.ERROR
        assert span.attributes["error.type"] == type(raised.value).__qualname__


def test_no_span_ever_carries_the_api_key(spans) -> None:
    """Content on, a tool, a retry, a failure and the key pasted in a prompt: no span text holds the key."""
    with LLMServer(strict=True) as srv:
        srv.enqueue(
            Fault(status=500),
            Reply(tool_calls=[ToolCallSpec("weather", {"city": "Oslo"}, id="call_1")]),
            Reply(text="sunny"),
            Reply(text="row done"),
            Fault(status=401, message=f"Incorrect API key provided: {SECRET_KEY}"),
        )
        agent = ChatAgent(
            provider="openai", OPENAI_API_KEY=SECRET_KEY, OPENAI_BASE_URL=srv.openai_base_url, tools=[weather],
            OTEL=True, OTEL_CONTENT=True, MAX_RETRIES=1, RETRY_MAX_WAIT=1,
        )
        agent.chat(f"my key is {SECRET_KEY}; weather in Oslo?")
        agent.run_batch([f"a batch row with {SECRET_KEY}"])
        with pytest.raises(ProviderError):
            agent.chat("again")

    captured = spans.exporter.get_finished_spans()  # the anthropic SDK's own spans too, were there any
    assert {s.name for s in captured} >= {"aiforge.batch", "invoke_agent", "execute_tool weather"}
    assert any(s.events for s in captured) and any(s.status.status_code == StatusCode.ERROR for s in captured)
    assert any("gen_ai.input.messages" in s.attributes for s in captured)
    for span in captured:
        for text in every_text(span):
            assert SECRET_KEY not in text and SECRET_KEY[10:] not in text, (span.name, text)


# ---------------------------------------------------------------------------
# Message content: opt-in
# ---------------------------------------------------------------------------


def test_content_opt_in_records_messages_in_the_conventions_shape(spans) -> None:
    fake = ScriptedProvider([tool_call("weather", city="Oslo"), "It is sunny."])
    agent = ChatAgent(provider=fake, tools=[weather], OTEL=True, OTEL_CONTENT=True, system_prompt="Be brief.")

    agent.chat("Weather in Oslo?")

    first, second = by_name(spans.get_finished_spans(), "chat ")
    sent = json.loads(second.attributes["gen_ai.input.messages"])
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[0]["parts"] == [{"type": "text", "content": "Be brief."}]
    call_part = sent[2]["parts"][-1]
    assert (call_part["type"], call_part["name"], call_part["arguments"]) == ("tool_call", "weather", {"city": "Oslo"})
    assert sent[3]["parts"] == [{"type": "tool_call_response", "id": call_part["id"], "response": "sunny in Oslo"}]
    assert json.loads(second.attributes["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "It is sunny."}], "finish_reason": "stop"}
    ]
    assert json.loads(first.attributes["gen_ai.output.messages"])[0]["finish_reason"] == "tool_calls"
    (tool,) = by_name(spans.get_finished_spans(), "execute_tool")
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"city": "Oslo"}
    assert tool.attributes["gen_ai.tool.call.result"] == "sunny in Oslo"


@pytest.mark.parametrize(("env", "setting", "recorded"), [
    ("SPAN_ONLY", None, True), ("true", None, True), ("EVENT_ONLY", None, False), ("NO_CONTENT", None, False),
    ("SPAN_ONLY", False, False), ("", True, True),
])
def test_content_follows_the_standard_variable_unless_the_setting_says(spans, monkeypatch, env, setting, recorded):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", env)
    options = {} if setting is None else {"OTEL_CONTENT": setting}

    ChatAgent(provider="scripted", OTEL=True, **options).chat("hi")

    assert all(("gen_ai.input.messages" in s.attributes) is recorded for s in spans.get_finished_spans())


def test_a_dataframe_classify_is_one_batch_span_with_a_turn_per_row(spans) -> None:
    import pandas as pd

    frame = pd.DataFrame({"review": ["great", "awful", "fine"]})
    fake = ScriptedProvider(default=lambda messages: '{"value": "pos"}')

    labels = frame.aiforge.classify("Sentiment of: {review}", labels=["pos", "neg"], provider=fake, OTEL=True)

    assert list(labels) == ["pos"] * 3
    (batch,) = by_name(spans.get_finished_spans(), "aiforge.batch")
    turns = by_name(spans.get_finished_spans(), "invoke_agent")
    assert len(turns) == 3 and {parent_of(t) for t in turns} == {batch.context.span_id}
    assert all(t.attributes["gen_ai.output.type"] == "json" for t in turns)


def test_content_names_a_file_rather_than_its_marker(spans, tmp_path) -> None:
    from aiforge import File

    pytest.importorskip("PIL")
    from tests.support import documents

    documents.png(20, 20, tmp_path / "receipt.png")
    agent = ChatAgent(provider=ScriptedProvider(default="ok"), OTEL=True, OTEL_CONTENT=True, FILE_INPUT="native")
    agent.run_batch([File(tmp_path / "receipt.png")], prompt="Read {value}")
    (chat,) = by_name(spans.get_finished_spans(), "chat ")
    sent = json.loads(chat.attributes["gen_ai.input.messages"])
    assert sent[-1]["parts"] == [{"type": "text", "content": "Read [file: receipt.png]"}]
