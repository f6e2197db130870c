"""``ChatAgent``: the constructor, methods, properties, response fields and errors of the reference page."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import textwrap

import pytest

from aiforge import ChatAgent, ChatResponse, ToolCallRecord
from aiforge.chat.prompts import DEFAULT_SYSTEM_PROMPT
from aiforge.core.costs import CostTracker
from aiforge.core.settings import AIForgeSettings
from aiforge.core.types import APITimeoutError, ConfigError, ProviderError, RateLimitError, Usage
from aiforge.modules.base import BatchResult
from aiforge.providers.scripted import ScriptedProvider, ScriptedReply, tool_call

HEX16 = re.compile(r"^[0-9a-f]{16}$")

# Custom function providers have no price table entry: their unpriced-cost warning is expected here.
pytestmark = pytest.mark.filterwarnings("ignore:aiforge has no price:UserWarning")


def scripted_agent(*replies: object, **kwargs: object) -> tuple[ChatAgent, ScriptedProvider]:
    fake = ScriptedProvider(list(replies))
    return ChatAgent(provider=fake, **kwargs), fake


# ---------------------------------------------------------------------------
# Import and quick start
# ---------------------------------------------------------------------------


def test_response_types_import_from_the_package_root() -> None:
    from aiforge.modules.chat import ChatAgent as module_agent
    from aiforge.modules.chat import ChatResponse as module_response
    from aiforge.modules.chat import ToolCallRecord as module_record

    assert (module_agent, module_response, module_record) == (ChatAgent, ChatResponse, ToolCallRecord)


def test_quick_start_agent_with_no_arguments_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIFORGE_PROVIDER", "scripted")
    agent = ChatAgent()
    agent.provider.enqueue("The capital of France is Paris.")

    response = agent.chat("What is the capital of France?")

    assert response.message == "The capital of France is Paris."
    assert agent.provider.calls[0].last_user_message == "What is the capital of France?"


def test_default_agent_uses_buffer_memory_of_20_and_5_tool_iterations() -> None:
    agent = ChatAgent(provider=ScriptedProvider())

    assert (agent.memory_mode, agent.memory_k, agent.max_tool_iterations, agent.tools) == ("buffer", 20, 5, [])


# ---------------------------------------------------------------------------
# Constructor validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("memory", ["window", "", "BUFFER", None])
def test_invalid_memory_mode_is_a_value_error(memory: object) -> None:
    with pytest.raises(ValueError, match="memory must be one of"):
        ChatAgent(provider=ScriptedProvider(), memory=memory)  # type: ignore[arg-type]


@pytest.mark.parametrize("memory_k", [0, -1, 2.5, True, "10"])
def test_memory_k_below_one_or_not_an_int_is_a_value_error(memory_k: object) -> None:
    with pytest.raises(ValueError, match="memory_k"):
        ChatAgent(provider=ScriptedProvider(), memory_k=memory_k)  # type: ignore[arg-type]


@pytest.mark.parametrize("iterations", [0, -3, 1.0])
def test_max_tool_iterations_below_one_is_a_value_error(iterations: object) -> None:
    with pytest.raises(ValueError, match="max_tool_iterations"):
        ChatAgent(provider=ScriptedProvider(), max_tool_iterations=iterations)  # type: ignore[arg-type]


def test_memory_k_of_one_is_accepted() -> None:
    assert ChatAgent(provider=ScriptedProvider(), memory_k=1, max_tool_iterations=1).memory_k == 1


def test_unknown_provider_is_a_config_error_naming_the_choices() -> None:
    with pytest.raises(ConfigError, match="unknown provider 'nope'.*openai"):
        ChatAgent(provider="nope")


def test_unknown_setting_keyword_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="TEMPRATURE.*Did you mean TEMPERATURE"):
        ChatAgent(provider=ScriptedProvider(), TEMPRATURE=0.5)


def test_tool_without_invoke_is_a_value_error() -> None:
    class NotATool:
        name = "broken"
        description = "no invoke"

    with pytest.raises(ValueError, match="lacks invoke"):
        ChatAgent(provider=ScriptedProvider(), tools=[NotATool()])


def test_two_tools_with_one_name_are_a_value_error(calc_tool) -> None:
    with pytest.raises(ValueError, match="unique"):
        ChatAgent(provider=ScriptedProvider(), tools=[calc_tool, calc_tool])


def test_native_tools_true_on_a_provider_without_them_is_a_config_error(calc_tool) -> None:
    from aiforge.providers.function import FunctionProvider

    with pytest.raises(ConfigError, match="native_tools=True"):
        ChatAgent(provider=FunctionProvider(lambda messages, **_: "hi"), tools=[calc_tool], native_tools=True)


# ---------------------------------------------------------------------------
# Message validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("message", ["", "   ", "\n\t "])
def test_chat_with_empty_or_whitespace_message_is_a_value_error_and_calls_no_model(message: str) -> None:
    agent, fake = scripted_agent()

    with pytest.raises(ValueError, match="empty"):
        agent.chat(message)

    assert fake.calls == [] and agent.history == []


async def test_achat_with_empty_message_is_a_value_error() -> None:
    agent, _ = scripted_agent()

    with pytest.raises(ValueError):
        await agent.achat(" ")


def test_run_with_empty_message_is_a_value_error() -> None:
    agent, _ = scripted_agent()

    with pytest.raises(ValueError):
        agent.run("")


def test_non_string_message_is_a_value_error() -> None:
    agent, _ = scripted_agent()

    with pytest.raises(ValueError, match="str"):
        agent.chat(42)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# chat / achat / run / arun
# ---------------------------------------------------------------------------


def test_chat_returns_the_model_reply_as_a_chat_response() -> None:
    agent, _ = scripted_agent("Hello! How can I help you today?")

    response = agent.chat("Hello!")

    assert isinstance(response, ChatResponse)
    assert response.message == "Hello! How can I help you today?"


def test_multi_turn_chat_sends_earlier_turns_to_the_model() -> None:
    agent, fake = scripted_agent("It is sunny in NYC.", "Tomorrow it rains in NYC.")

    agent.chat("What's the weather in NYC?")
    agent.chat("What about tomorrow?")

    sent = [(m["role"], m["content"]) for m in fake.calls[1].messages[1:]]
    assert sent == [
        ("user", "What's the weather in NYC?"),
        ("assistant", "It is sunny in NYC."),
        ("user", "What about tomorrow?"),
    ]


async def test_achat_returns_the_reply_and_keeps_history() -> None:
    agent, _ = scripted_agent("Quantum computers use qubits.")

    response = await agent.achat("Explain quantum computing in one sentence.")

    assert response.message == "Quantum computers use qubits."
    assert [m["role"] for m in agent.history] == ["user", "assistant"]


def test_run_delegates_to_chat_with_system_prompt_keyword() -> None:
    agent, fake = scripted_agent("Hola")

    response = agent.run("Translate 'hello'", system_prompt="Only translate.")

    assert response.message == "Hola"
    assert fake.calls[0].messages[0] == {"role": "system", "content": "Only translate."}
    assert len(agent.history) == 2


async def test_arun_delegates_to_achat() -> None:
    agent, _ = scripted_agent("Hi there")

    response = await agent.arun("Hello")

    assert response.message == "Hi there"
    assert agent.history[-1]["content"] == "Hi there"


def test_chat_from_inside_a_running_event_loop_works() -> None:
    agent, _ = scripted_agent("from a notebook")

    async def cell() -> ChatResponse:
        return agent.chat("Hi")  # sync call in a running loop, as in a Jupyter cell

    assert asyncio.run(cell()).message == "from a notebook"


def test_chat_leaves_the_callers_current_event_loop_in_place() -> None:
    # LangGraph sets the loop it runs on as the thread's current loop; chat() must undo that.
    agent, _ = scripted_agent("hello")
    mine = asyncio.new_event_loop()
    asyncio.set_event_loop(mine)
    try:
        agent.chat("hi")
        assert asyncio.get_event_loop() is mine
    finally:
        asyncio.set_event_loop(None)
        mine.close()


# ---------------------------------------------------------------------------
# reset
# ---------------------------------------------------------------------------


def test_reset_clears_history_and_changes_conversation_id() -> None:
    agent, fake = scripted_agent("Nice to meet you, Alice.", "Your name is Alice.", "I don't know your name yet.")
    agent.chat("Remember: my name is Alice")
    agent.chat("What's my name?")
    before = agent.conversation_id

    agent.reset()
    agent.chat("What's my name?")

    assert agent.conversation_id != before and HEX16.match(agent.conversation_id)
    assert [m["content"] for m in fake.calls[-1].messages] == [DEFAULT_SYSTEM_PROMPT, "What's my name?"]


def test_reset_keeps_the_system_prompt() -> None:
    agent, fake = scripted_agent(system_prompt="You are Acme support.")
    agent.chat("hi")

    agent.reset()
    agent.chat("hi again")

    assert fake.calls[-1].messages == [
        {"role": "system", "content": "You are Acme support."},
        {"role": "user", "content": "hi again"},
    ]


# ---------------------------------------------------------------------------
# run_batch
# ---------------------------------------------------------------------------


def test_run_batch_returns_results_in_input_order() -> None:
    agent = ChatAgent(provider=ScriptedProvider(delay=0.001))
    questions = ["What is AI?", "What is ML?", "What is DL?"]

    batch = agent.run_batch(questions, concurrency=3)

    assert isinstance(batch, BatchResult)
    assert [r.message for r in batch.results] == [f"You said: {q}" for q in questions]
    assert batch.failed == []


def test_run_batch_items_start_fresh_conversations_and_leave_the_agents_history_alone() -> None:
    agent, fake = scripted_agent("earlier answer")
    agent.chat("earlier question")
    history = agent.history

    agent.run_batch(["one", "two", "three", "four"], concurrency=2)

    batch_calls = fake.calls[1:]
    assert sorted(c.last_user_message for c in batch_calls) == ["four", "one", "three", "two"]
    assert all([m["role"] for m in c.messages] == ["system", "user"] for c in batch_calls)
    assert agent.history == history


def test_run_batch_items_get_distinct_conversation_ids() -> None:
    agent, _ = scripted_agent()

    batch = agent.run_batch(["a", "b", "c"])

    ids = {r.conversation_id for r in batch.results}
    assert len(ids) == 3 and agent.conversation_id not in ids


def test_run_batch_records_a_failed_item_and_keeps_the_others() -> None:
    def answer(messages):
        last = messages[-1]["content"]
        if last == "boom":
            raise ProviderError("model exploded", provider="scripted")
        return f"ok {last}"

    agent = ChatAgent(provider=ScriptedProvider(default=answer))

    batch = agent.run_batch(["a", "boom", "c"], concurrency=3)

    assert [r.message for r in batch.results] == ["ok a", "ok c"]
    assert [(f.index, f.input, type(f.error)) for f in batch.failed] == [(1, "boom", ProviderError)]


def test_run_batch_totals_cost_and_tokens_of_its_results() -> None:
    agent = ChatAgent(provider=ScriptedProvider())

    batch = agent.run_batch(["What are your business hours?", "Do you offer refunds?"])

    assert batch.total_tokens == sum(r.input_tokens + r.output_tokens for r in batch.results) > 0
    assert batch.total_cost == sum(r.cost for r in batch.results)


def test_run_batch_in_summary_mode_makes_no_summary_calls(calc_tool) -> None:
    def tool_then_answer(messages):
        return tool_call("calculator", expression="1+1") if messages[-1]["role"] == "user" else "It is 2."

    fake = ScriptedProvider(default=tool_then_answer)
    agent = ChatAgent(provider=fake, tools=[calc_tool], memory="summary", memory_k=1)

    batch = agent.run_batch(["one question", "another question"], concurrency=1)

    # Each item's turn holds 4 messages (> 2 x memory_k), but its conversation is discarded:
    # two model calls per item and no summary call.
    assert [r.message for r in batch.results] == ["It is 2.", "It is 2."]
    assert len(fake.calls) == 4


def test_run_batch_with_more_items_than_max_batch_is_a_value_error() -> None:
    agent, fake = scripted_agent()

    with pytest.raises(ValueError, match="max_batch=2"):
        agent.run_batch(["a", "b", "c"], max_batch=2)

    assert fake.calls == []


# ---------------------------------------------------------------------------
# ChatResponse and ToolCallRecord fields
# ---------------------------------------------------------------------------


def test_chat_response_fields_of_a_plain_turn() -> None:
    agent, _ = scripted_agent(ScriptedReply(text="2 + 2 = 4", usage=Usage(input_tokens=42, output_tokens=8)))

    response = agent.chat("What is 2+2?")

    assert response.message == "2 + 2 = 4"
    assert HEX16.match(response.conversation_id) and response.conversation_id == agent.conversation_id
    assert response.tool_calls == []
    assert response.iterations == 0
    assert response.memory_mode == "buffer"
    assert (response.input_tokens, response.output_tokens) == (42, 8)
    assert response.model == "scripted-model"
    assert HEX16.match(response.trace_id)
    assert response.latency_ms > 0
    assert response.to_text() == "2 + 2 = 4"


def test_chat_response_cost_is_a_float_and_zero_for_a_free_provider() -> None:
    agent, _ = scripted_agent("hi")

    cost = agent.chat("hi").cost

    assert isinstance(cost, float) and cost == 0.0


def test_each_turn_gets_a_new_trace_id_in_the_same_conversation() -> None:
    agent, _ = scripted_agent("a", "b")

    first, second = agent.chat("one"), agent.chat("two")

    assert first.trace_id != second.trace_id
    assert first.conversation_id == second.conversation_id


def test_chat_response_memory_mode_reports_the_agents_mode() -> None:
    agent, _ = scripted_agent("x", memory="none")

    assert agent.chat("hi").memory_mode == "none"


def test_chat_response_is_immutable() -> None:
    agent, _ = scripted_agent("x")
    response = agent.chat("hi")

    with pytest.raises(ValueError):
        response.message = "changed"  # type: ignore[misc]


def test_tool_call_record_fields_and_to_text_format(calc_tool) -> None:
    agent, _ = scripted_agent(
        tool_call("calculator", expression="249.99 * 0.85"), "15% off is $212.49.", tools=[calc_tool]
    )

    response = agent.chat("What's 15% off $249.99?")

    (record,) = response.tool_calls
    assert isinstance(record, ToolCallRecord)
    assert (record.tool, record.input, record.output) == ("calculator", {"expression": "249.99 * 0.85"}, "212.4915")
    assert record.to_text() == "calculator({'expression': '249.99 * 0.85'}) → 212.4915"


def test_tool_call_record_output_defaults_to_none() -> None:
    assert ToolCallRecord(tool="weather", input={"city": "NYC"}).output is None


def test_tool_call_record_repr_shows_tool_input_and_output() -> None:
    record = ToolCallRecord(tool="weather", input={"city": "San Francisco"}, output="72°F and sunny in San Francisco")

    assert repr(record) == (
        "ToolCallRecord(tool='weather', input={'city': 'San Francisco'}, output='72°F and sunny in San Francisco')"
    )


# ---------------------------------------------------------------------------
# Instance properties
# ---------------------------------------------------------------------------


def test_instance_properties_reflect_the_constructor(calc_tool) -> None:
    agent = ChatAgent(
        provider=ScriptedProvider(),
        system_prompt="You are terse.",
        tools=[calc_tool],
        memory="summary",
        memory_k=7,
        max_tool_iterations=2,
        TEMPERATURE=0.3,
    )

    assert agent.system_prompt == "You are terse."
    assert HEX16.match(agent.conversation_id)
    assert (agent.memory_mode, agent.memory_k, agent.max_tool_iterations) == ("summary", 7, 2)
    assert agent.tools == [calc_tool]
    assert isinstance(agent.settings, AIForgeSettings) and agent.settings.TEMPERATURE == 0.3
    assert isinstance(agent.cost_tracker, CostTracker)


def test_cost_tracker_counts_every_model_call_of_the_session(calc_tool) -> None:
    agent, _ = scripted_agent(tool_call("calculator", expression="1+1"), "2", "bye", tools=[calc_tool])

    agent.chat("1+1?")
    agent.chat("thanks")

    assert agent.cost_tracker.calls == 3
    assert isinstance(agent.cost_tracker.session_total, float)


def test_tools_property_is_a_list_in_registration_order(calc_tool) -> None:
    from langchain_core.tools import StructuredTool

    def weather(city: str) -> str:
        """Weather."""
        return city

    weather_tool = StructuredTool.from_function(weather, name="weather", description="Get weather")
    agent = ChatAgent(provider=ScriptedProvider(), tools=(weather_tool, calc_tool))

    assert agent.tools == [weather_tool, calc_tool]


def test_last_response_is_none_before_the_first_turn_then_the_latest_response() -> None:
    agent, _ = scripted_agent("first", "second")
    assert agent.last_response is None

    agent.chat("1")
    second = agent.chat("2")

    assert agent.last_response is second


def test_repr_names_provider_model_and_memory() -> None:
    agent = ChatAgent(provider=ScriptedProvider(), memory_k=3)

    assert repr(agent).startswith("ChatAgent(provider='scripted', model='scripted-model', memory='buffer', memory_k=3")


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


def test_rate_limit_error_from_the_provider_propagates_as_rate_limit_error() -> None:
    agent, _ = scripted_agent(RateLimitError("Too many requests", provider="scripted", status_code=429))

    with pytest.raises(RateLimitError):
        agent.chat("Hello")


def test_provider_error_propagates_as_provider_error_with_its_details() -> None:
    agent, _ = scripted_agent(ProviderError("model not found", provider="scripted", status_code=404))

    with pytest.raises(ProviderError, match="model not found") as info:
        agent.chat("Hello")

    assert info.value.status_code == 404


def test_api_timeout_error_propagates_and_is_a_provider_error() -> None:
    agent, _ = scripted_agent(APITimeoutError("timed out", provider="scripted"))

    with pytest.raises(ProviderError) as info:
        agent.chat("Hello")

    assert isinstance(info.value, APITimeoutError)


def test_error_handling_example_catches_rate_limit_before_provider_error() -> None:
    agent, _ = scripted_agent(RateLimitError("slow down", provider="scripted"))
    caught = None

    try:
        agent.chat("Hello")
    except RateLimitError:
        caught = "rate"
    except ProviderError:
        caught = "provider"

    assert caught == "rate"


def test_failed_turn_leaves_history_unchanged_and_agent_usable() -> None:
    agent, _ = scripted_agent("first answer", ProviderError("boom", provider="scripted"), "third answer")
    agent.chat("first")

    with pytest.raises(ProviderError):
        agent.chat("second")
    agent.chat("third")

    assert [m["content"] for m in agent.history] == ["first", "first answer", "third", "third answer"]


# ---------------------------------------------------------------------------
# Settings: YAML, model override, quality routing
# ---------------------------------------------------------------------------


def test_model_override_per_agent_keeps_each_agents_model_and_temperature() -> None:
    support = ChatAgent(provider="scripted", MODEL="gpt-4o", TEMPERATURE=0.3)
    creative = ChatAgent(provider="scripted", MODEL="gpt-4o", TEMPERATURE=0.9)
    cheap = ChatAgent(provider="scripted", MODEL="gpt-4o-mini", TEMPERATURE=0.5)

    for agent in (support, creative, cheap):
        agent.chat("hi")

    sent = [
        (a.provider.calls[0].params.model, a.provider.calls[0].params.temperature) for a in (support, creative, cheap)
    ]
    assert sent == [("gpt-4o", 0.3), ("gpt-4o", 0.9), ("gpt-4o-mini", 0.5)]
    assert cheap.last_response.model == "gpt-4o-mini"


@pytest.mark.parametrize(
    ("quality", "model"), [("high", "gpt-4.1"), ("medium", "gpt-4.1-mini"), ("low", "gpt-4.1-nano")]
)
def test_quality_routes_openai_agents_to_the_tiers_model(quality: str, model: str) -> None:
    agent = ChatAgent(quality=quality, provider="openai", OPENAI_API_KEY="sk-test-key")

    assert agent.model == model


def test_quality_routes_anthropic_agents_to_the_tiers_model() -> None:
    high = ChatAgent(quality="high", provider="anthropic", ANTHROPIC_API_KEY="sk-ant-test-key")
    low = ChatAgent(quality="low", provider="anthropic", ANTHROPIC_API_KEY="sk-ant-test-key")

    assert (high.model, low.model) == ("claude-sonnet-4-5", "claude-3-5-haiku")


def test_quality_falls_back_to_default_quality() -> None:
    agent = ChatAgent(provider="openai", OPENAI_API_KEY="sk-test-key", DEFAULT_QUALITY="low")

    assert agent.model == "gpt-4.1-nano"


def test_explicit_model_wins_over_quality(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("aiforge.core.router._ignored", set())  # "once" is per process
    with pytest.warns(UserWarning, match="quality='low' is ignored: MODEL='gpt-4o' is set"):
        agent = ChatAgent(quality="low", provider="openai", OPENAI_API_KEY="sk-test-key", MODEL="gpt-4o")

    assert agent.model == "gpt-4o"


def test_quality_is_ignored_when_the_router_is_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("aiforge.core.router._ignored", set())  # "once" is per process
    with pytest.warns(UserWarning, match="quality='high' is ignored: MODEL_ROUTER_ENABLED is False"):
        agent = ChatAgent(quality="high", provider="openai", OPENAI_API_KEY="sk-test-key", MODEL_ROUTER_ENABLED=False)

    assert agent.model == "gpt-4o-mini"  # the provider's default


def test_invalid_quality_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="quality"):
        ChatAgent(provider=ScriptedProvider(), quality="best")


def test_quality_routed_model_is_sent_to_the_provider() -> None:
    agent = ChatAgent(provider="scripted", quality="low", QUALITY_MODELS={"scripted": {"low": "tiny-model"}})

    agent.chat("hi")

    assert agent.provider.calls[0].params.model == "tiny-model"


def test_settings_from_aiforge_yaml_apply_without_constructor_arguments(tmp_path) -> None:
    (tmp_path / "aiforge.yaml").write_text('PROVIDER: "scripted"\nMODEL: "gpt-4o-mini"\nTEMPERATURE: 0.7\n')

    agent = ChatAgent()
    response = agent.chat("Hello!")

    assert response.model == "gpt-4o-mini"
    assert agent.provider.calls[0].params.temperature == 0.7


def test_constructor_keyword_overrides_aiforge_yaml(tmp_path) -> None:
    (tmp_path / "aiforge.yaml").write_text('PROVIDER: "scripted"\nMODEL: "gpt-4o-mini"\nTEMPERATURE: 0.7\n')

    agent = ChatAgent(MODEL="gpt-4o", TEMPERATURE=0.2)

    assert (agent.model, agent.settings.TEMPERATURE) == ("gpt-4o", 0.2)


# ---------------------------------------------------------------------------
# Custom providers and lazy imports
# ---------------------------------------------------------------------------


def test_registered_function_provider_answers_chat() -> None:
    from aiforge import register_provider

    seen = []

    def my_llm(messages, **params):
        seen.append((messages, params))
        return "from my function"

    register_provider("test_module_fn", my_llm)
    agent = ChatAgent(provider="test_module_fn")

    response = agent.chat("hello")

    assert response.message == "from my function"
    assert seen[0][0][-1] == {"role": "user", "content": "hello"}
    assert agent.native_tools is False


@pytest.mark.slow
def test_a_chat_turn_imports_no_pandas_until_a_dataframe_is_asked_for() -> None:
    code = textwrap.dedent(
        """
        import sys
        from aiforge import ChatAgent, ScriptedProvider
        agent = ChatAgent(provider=ScriptedProvider(["hi"]))
        response = agent.chat("hello")
        print("pandas" in sys.modules)
        response.trace_dataframe()
        print("pandas" in sys.modules)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)

    assert out.stdout.split() == ["False", "True"]


def test_file_structure_of_the_reference_page_exists() -> None:
    import importlib

    module, agent, prompts, schemas, widget = (
        importlib.import_module(f"aiforge.modules.chat.{name}")
        for name in ("module", "agent", "prompts", "schemas", "widget")
    )

    assert all(hasattr(prompts, n) for n in ("DEFAULT_SYSTEM_PROMPT", "TOOL_USE_SYSTEM", "SUMMARIZE_MEMORY_PROMPT"))
    assert callable(agent.build_chat_graph) and module.ChatAgent is ChatAgent
    assert (schemas.ChatResponse, schemas.ToolCallRecord) == (ChatResponse, ToolCallRecord)
    assert callable(widget.ChatPanel) and widget.calculator.name == "calculator"



def test_lower_case_setting_keywords_are_accepted() -> None:
    agent = ChatAgent(provider=ScriptedProvider(), model="gpt-4o", temperature=0.2)
    assert (agent.model, agent.settings.TEMPERATURE) == ("gpt-4o", 0.2)


def test_a_misnamed_argument_gets_a_did_you_mean_from_the_signature() -> None:
    with pytest.raises(ConfigError, match="unknown setting 'system'.*Did you mean system_prompt\\?"):
        ChatAgent(provider=ScriptedProvider(), system="Be terse.")
